"""The scoring protocol: every knob that changes a marker's value, declared once.

One pydantic model serves everywhere a protocol appears: ``core.markers.compute_markers`` and
``core.glue.analyze`` (whose options take these types), every request body of the API (so ``/docs``
shows the fields with their bounds), and the ``runs.protocol`` column (``to_dict`` is what is stored:
the same JSON as ever, so every stored run reads back). Two runs are comparable only under equal
protocols.

Upper bounds keep one protocol from describing unbounded work (a service refuses it before it
queues anything); the lower bounds are GLUE's own: at least 2 points per class, 1 draw, 1 repeat.
A leaf module (pydantic and ``core.defaults``): the database models import it without pulling in torch.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, cast, get_args

from pydantic import BaseModel, ConfigDict, Field

from zootriage.core.defaults import default_centering

Centering = Literal["none", "global"]
Dichotomy = Literal["one_vs_rest", "first_vs_rest", "random"]
CENTERINGS: tuple[str, ...] = get_args(Centering)
DICHOTOMIES: tuple[str, ...] = get_args(Dichotomy)
# Five repeats: the smallest count whose Welch test resolves differences of a few percent in D_eff and
# Ψ_eff on real features; see docs/noise.md for the measurements (benchmarks/repeats_convergence.py).
DEFAULT_REPEATS = 5

SEED_MAX = 2**31 - 1
POINTS_MAX = 10_000
N_T_MAX = 100_000
REPEATS_MAX = 100

# One seed bounds the sampling (``core.data.refs.Sampling``) and the markers.
Seed = Annotated[int, Field(ge=0, le=SEED_MAX, description="seeds the sampling and the markers")]
Points = Annotated[int, Field(ge=2, le=POINTS_MAX, description="GLUE points per class")]
NT = Annotated[int, Field(ge=1, le=N_T_MAX, description="GLUE Gaussian draws t_k")]
Repeats = Annotated[int, Field(ge=1, le=REPEATS_MAX, description="independent GLUE repeats")]


class Protocol(BaseModel):
    """How markers are computed (GLUE protocol fields); missing fields take their defaults.

    - ``points_per_class``: GLUE subsamples each class to at most this many points (paper: 50);
      ``None`` keeps every point.
    - ``n_t``: number of Gaussian samples t_k in GLUE's Monte-Carlo average.
    - ``seed``: seeds the per-class subsampling and the t_k draws.
    - ``centering``: ``"none"`` (raw features, the paper's choice) or ``"global"`` (subtract the
      mean of all rows) before GLUE. Its default is the pre-registered study's choice
      (``core.defaults``; ``"none"`` until a study decides otherwise).
    - ``dichotomy``: GLUE's label draws, ``"one_vs_rest"`` (default), ``"first_vs_rest"`` (two
      classes) or ``"random"`` (i.i.d. signs; not a default, see docs/method.md).
    - ``repeats``: independent GLUE repeats, on disjoint per-class subsets when the sample has
      repeats × points_per_class images per class (``core.glue_subsets``); geometry markers carry
      their standard deviation over them. ``repeats=1`` gives no noise estimate: its geometry
      markers never decide a verdict, a ranking or a gate.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    points_per_class: Points | None = 50
    n_t: NT = 1000
    seed: Seed = 0
    centering: Centering = Field(default_factory=lambda: cast(Centering, default_centering()))
    dichotomy: Dichotomy = "one_vs_rest"
    repeats: Repeats = DEFAULT_REPEATS

    def to_dict(self) -> dict[str, Any]:
        """Every field, JSON-serialisable: the form stored with every run and hashed in its keys."""
        return self.model_dump(mode="json")

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Protocol:
        """A stored or configured protocol; missing fields take their defaults.

        Strict, unlike a request body (where ``"1000"`` from a form is a number): a value of the wrong
        type or an unknown key raises ``ValueError`` naming it, so a stored protocol from another code
        version is never half-read.
        """
        if not isinstance(data, dict):
            raise ValueError(f"a protocol must be a dict, got {type(data).__name__}")
        known = sorted(cls.model_fields)
        unknown = sorted(set(data) - set(known))
        if unknown:
            raise ValueError(f"unknown protocol field(s) {unknown}; known fields are {known}")
        return cls.model_validate(data, strict=True)
