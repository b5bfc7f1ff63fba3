"""The scoring protocol as a request body, with every number bounded once for all routes (and /docs).

``core.markers.Protocol`` holds the defaults and the science; this model adds the upper bounds a
service needs so that no request can ask for unbounded work, and fills in every default, so two
requests that differ only in spelling a default out are the same request.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field

from core.data.refs import Seed
from core.markers import Protocol
from core.markers.protocol import Centering, Dichotomy

POINTS_MAX = 10_000
N_T_MAX = 100_000
REPEATS_MAX = 100

Points = Annotated[int, Field(ge=2, le=POINTS_MAX, description="GLUE points per class")]
NT = Annotated[int, Field(ge=1, le=N_T_MAX, description="GLUE Gaussian draws t_k")]
Repeats = Annotated[int, Field(ge=1, le=REPEATS_MAX, description="independent GLUE repeats")]
_DEFAULTS = Protocol()


class ProtocolFields(BaseModel):
    """GLUE protocol fields (see ``core.markers.Protocol``); missing fields take their defaults."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    points_per_class: Points | None = _DEFAULTS.points_per_class
    n_t: NT = _DEFAULTS.n_t
    seed: Seed = _DEFAULTS.seed
    centering: Centering = _DEFAULTS.centering
    dichotomy: Dichotomy = _DEFAULTS.dichotomy
    repeats: Repeats = _DEFAULTS.repeats

    def to_protocol(self) -> Protocol:
        return Protocol.from_dict(self.model_dump())
