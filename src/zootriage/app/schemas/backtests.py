"""Bodies of ``POST /v1/backtests``: measured OOD outcomes of stored runs in, marker statistics out."""

from __future__ import annotations

import math
import uuid
from typing import Literal

from pydantic import BaseModel, Field, field_validator

from zootriage.core.protocol import Seed

MAX_RUNS = 5000
Method = Literal["preregistered", "first-study"]


class BacktestRequest(BaseModel):
    """``outcomes`` maps run ids to the OOD accuracy (or any outcome, higher is better) measured for
    them; ``markers`` restricts the analysis (default: every marker the runs carry).

    ``method`` "preregistered" (the default) applies the pre-registered study's method
    (``core.backtest.on_runs``): runs of one architecture tagged with the same ``recipe_tag`` value
    are the seeds of one recipe. "first-study" gives the answer of the first study's method (pooled
    and per-architecture Pearson/Spearman, per-model pairwise win rates), as before this field."""

    outcomes: dict[uuid.UUID, float] = Field(min_length=3, max_length=MAX_RUNS)
    markers: list[str] | None = Field(default=None, min_length=1, max_length=100)
    n_boot: int = Field(default=2000, ge=100, le=20000, description="bootstrap resamples")
    seed: Seed = 0
    method: Method = Field("preregistered", description="preregistered (the study's method) or first-study")
    recipe_tag: str = Field(
        "recipe",
        min_length=1,
        max_length=64,
        description="the run tag whose value names a run's recipe (its seeds share it); preregistered only",
    )
    n_perm: int = Field(
        10000, ge=0, le=100_000, description="permutations for ρ̄'s p (0: none); preregistered only"
    )

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


class StudyCorrelationOut(BaseModel):
    """ρ̄: the mean over architectures of Spearman ρ(marker, outcome) over recipe means."""

    rho_by_architecture: dict[str, float | None]
    rho_bar: float | None
    rho_bar_ci: tuple[float, float] | None = Field(description="recipe-bootstrap 95% interval")
    p: float | None = Field(description="one-sided within-architecture permutation p (null: n_perm 0)")
    p_mc_error: float | None = Field(description="the Monte Carlo standard error of p")
    recipes: int


class StudyPairwiseOut(BaseModel):
    """The rule's accuracy over recipe pairs whose outcome gap exceeds the seed noise."""

    accuracy: float | None = Field(description="correct picks / eligible pairs; an undecided pick is wrong")
    accuracy_ci: tuple[float, float] | None = Field(description="95% Wilson interval, for reading")
    eligible_pairs: int
    id_accuracy_accuracy: float | None = Field(description="the ID-accuracy rule's on the same pairs")
    delta: float | None = Field(description="accuracy − the ID-accuracy rule's")
    delta_ci: tuple[float, float] | None = Field(description="recipe-bootstrap 95% interval of Δ")
    p: float | None = Field(description="one-sided bootstrap p of Δ ≤ 0")


class StudyRuleOut(BaseModel):
    markers: list[str]
    higher_is_better: bool | None
    correlation: StudyCorrelationOut | None = Field(description="one-marker rules only")
    pairwise: StudyPairwiseOut | None = Field(description="null for a marker with no preferred direction")


class BacktestOut(BaseModel):
    """``method`` says which fields are filled: "preregistered" fills ``recipes``,
    ``recipes_by_architecture`` and ``rules``; "first-study" fills ``markers``, ``geometry_rule`` and
    ``rule_markers`` exactly as the answer before ``method`` existed."""

    method: Method
    n_models: int
    architectures: dict[str, int]
    notes: list[str]
    recipes: int | None = None
    recipes_by_architecture: dict[str, int] | None = None
    rules: dict[str, StudyRuleOut] | None = None
    markers: dict[str, MarkerBacktestOut] | None = None
    geometry_rule: PairwiseOut | None = None
    rule_markers: tuple[str, str] | None = None
