"""Bodies of ``POST /v1/backtests``: measured OOD outcomes of stored runs in, marker statistics out."""

from __future__ import annotations

import math
import uuid
from typing import Literal

from pydantic import BaseModel, Field, field_validator

from zootriage.core.protocol import Seed

MAX_RUNS = 5000
Method = Literal["confirmatory", "preregistered", "first-study"]


class BacktestRequest(BaseModel):
    """``outcomes`` maps run ids to the OOD accuracy (or any outcome, higher is better) measured for
    them; ``markers`` restricts the analysis (default: every marker the runs carry).

    ``method`` "confirmatory" (the default) applies study 3's method (docs/study/PLAN-3.md,
    ``core.backtest.on_runs3``); "preregistered" study 2's (``core.backtest.on_runs``). For both, runs
    of one architecture tagged with the same ``recipe_tag`` value are the seeds of one recipe.
    "first-study" gives the answer of the first study's method (pooled and per-architecture
    Pearson/Spearman, per-model pairwise win rates), as before this field."""

    outcomes: dict[uuid.UUID, float] = Field(min_length=3, max_length=MAX_RUNS)
    markers: list[str] | None = Field(default=None, min_length=1, max_length=100)
    n_boot: int = Field(default=2000, ge=100, le=20000, description="bootstrap resamples")
    seed: Seed = Field(
        0, description="resampling seed (preregistered, first-study); confirmatory's bootstrap uses seed 0"
    )
    method: Method = Field(
        "confirmatory",
        description="confirmatory (study 3's method, the product's evidence), preregistered (study 2's) "
        "or first-study",
    )
    recipe_tag: str = Field(
        "recipe",
        min_length=1,
        max_length=64,
        description="the run tag whose value names a run's recipe (its seeds share it); confirmatory and "
        "preregistered",
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


class VsIdAccuracyOut(BaseModel):
    """The rule against the ID-accuracy rule on the same eligible pairs (study 3's T1/T2 test)."""

    mean_d: float | None = Field(description="mean over architectures of d_a")
    d_by_architecture: dict[str, float] = Field(
        description="d_a = (rule's correct − ID accuracy's correct) / eligible pairs, per architecture "
        "with an eligible pair"
    )
    n_archs: int = Field(description="architectures in the test (those with an eligible pair)")
    p: float | None = Field(
        description="exact one-sided sign-flip p over all 2^n sign patterns; null when not assessable"
    )
    min_p: float | None = Field(description="the smallest p n architectures allow: 2^−n")
    assessable: bool = Field(description="false with fewer architectures than ``min_archs``")


class ConfirmatoryRuleOut(BaseModel):
    """A rule's picks over eligible recipe pairs: an undecided pick (a tie, a missing value, or the
    geometry rule's markers disagreeing) is counted apart and never as correct."""

    markers: list[str]
    higher_is_better: bool = Field(description="the preferred direction (lower-is-better markers negated)")
    correct: int
    wrong: int
    undecided: int
    pairs: int = Field(description="eligible pairs: correct + wrong + undecided")
    accuracy: float | None = Field(description="correct / pairs")
    ci95: tuple[float, float] | None = Field(description="architecture-cluster bootstrap 95% interval")
    vs_id_accuracy: VsIdAccuracyOut | None = Field(
        description="null for the ID-accuracy rule itself and when no run carries id_accuracy"
    )


class BacktestOut(BaseModel):
    """``method`` says which fields are filled: "confirmatory" fills ``recipes``,
    ``recipes_by_architecture``, ``eligible_pairs``, ``min_archs`` and ``confirmatory_rules``;
    "preregistered" fills ``recipes``, ``recipes_by_architecture`` and ``rules``; "first-study" fills
    ``markers``, ``geometry_rule`` and ``rule_markers`` exactly as the answer before ``method`` existed."""

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
    eligible_pairs: int | None = Field(None, description="confirmatory: recipe pairs beyond the seed noise")
    min_archs: int | None = Field(None, description="confirmatory: architectures a sign-flip test needs")
    confirmatory_rules: dict[str, ConfirmatoryRuleOut] | None = Field(
        None, description="confirmatory: each rule's picks, accuracy and test against ID accuracy"
    )
