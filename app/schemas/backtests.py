"""Bodies of ``POST /v1/backtests``: measured OOD outcomes of stored runs in, marker statistics out."""

from __future__ import annotations

import math
import uuid

from pydantic import BaseModel, Field, field_validator

from zootriage.core.protocol import Seed

MAX_RUNS = 5000


class BacktestRequest(BaseModel):
    """``outcomes`` maps run ids to the OOD accuracy (or any outcome, higher is better) measured for
    them; ``markers`` restricts the analysis (default: every marker the runs carry)."""

    outcomes: dict[uuid.UUID, float] = Field(min_length=3, max_length=MAX_RUNS)
    markers: list[str] | None = Field(default=None, min_length=1, max_length=100)
    n_boot: int = Field(default=2000, ge=100, le=20000, description="bootstrap resamples")
    seed: Seed = 0

    @field_validator("outcomes")
    @classmethod
    def _finite(cls, value: dict[uuid.UUID, float]) -> dict[uuid.UUID, float]:
        bad = [str(k) for k, v in value.items() if not math.isfinite(v)]
        if bad:
            raise ValueError(f"outcomes must be finite numbers; not for {bad[:5]}")
        return value


class CorrelationOut(BaseModel):
    n: int
    pearson: float | None
    pearson_ci: tuple[float, float] | None
    spearman: float | None
    spearman_ci: tuple[float, float] | None


class PairwiseOut(BaseModel):
    """Fractions of the ``pairs`` same-architecture pairs where the rule picked the better model
    (wins), the worse one (losses), or abstained (undecided)."""

    pairs: int
    wins: float
    losses: float
    undecided: float


class MarkerBacktestOut(BaseModel):
    pooled: CorrelationOut
    by_architecture: dict[str, CorrelationOut]
    pairwise: PairwiseOut


class BacktestOut(BaseModel):
    n_models: int
    architectures: dict[str, int]
    markers: dict[str, MarkerBacktestOut]
    geometry_rule: PairwiseOut | None
    rule_markers: tuple[str, str]
    notes: list[str]
