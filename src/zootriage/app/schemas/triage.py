"""Bodies of the triage API: recommendations (v1 vs v2), rankings and CI gates.

Every triage answer comes in two shapes: 202 with the scoring jobs still running (``Pending``), or the
answer itself once every run it needs is stored.
"""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, model_validator

from zootriage.app.db.models import Gate
from zootriage.app.labels import Name, Tags
from zootriage.app.project_names import AliasName
from zootriage.app.schemas.jobs import JobOut
from zootriage.core.data.refs import DatasetRef, Sampling
from zootriage.core.noise import GATE_TEST
from zootriage.core.protocol import Protocol
from zootriage.core.zoo.refs import AnyModelRef, ModelRef

MAX_CANDIDATES = 32
MAX_RULES = 50

RULE_FIELD: Any = Field(
    None,
    max_length=64,
    description="what 'better' means: geometry (higher dimension and utilization), id_accuracy, logme "
    "or any marker with a preferred direction; null or absent: the product's default, chosen by the "
    "pre-registered back-test (see the answer's rule.default_reason)",
)


class Pending(BaseModel):
    """The runs are being computed: poll the jobs, then ask again for the answer."""

    status: Literal["pending"] = "pending"
    jobs: list[JobOut]


class MarkerStat(BaseModel):
    value: float | None
    std: float | None = Field(description="std over GLUE repeats; null: no noise estimate or no noise")
    decidable: bool = Field(True, description="false: shown, but from a degenerate GLUE regime")
    reason: str | None = None


class RuleUsed(BaseModel):
    """The rule an answer applied, and the evidence behind it from the back-test study."""

    name: str = Field(description="geometry (dimension and utilization), or a marker name")
    markers: list[str]
    glue_variant: str = Field(description="dichotomy,centering of the GLUE analysis")
    noise_test: str
    description: str
    evidence: str = Field(description="one line: the rule's back-test win rate beside ID accuracy's")
    evidence_detail: dict[str, Any] | None = Field(description="null when the study did not test the rule")
    chosen_by: Literal["request", "default"] = Field(
        description="named by the request, or the product's default (the pre-registered study's choice)"
    )
    default_reason: str | None = Field(description="why the product's default is this rule (null if named)")


class RuleAnswerOut(BaseModel):
    """One candidate rule's answer to the question, beside its own evidence."""

    rule: str
    evidence_key: str = Field(description="the rule's key in the evidence file, with its GLUE variant")
    pick: str | None = Field(description="v1/v2 or a candidate; null: no difference beyond the noise")
    answer: str = Field(
        description="the pick, 'no difference beyond the noise', or 'cannot decide' (see reason)"
    )
    reason: str
    win_rate: float | None = Field(description="measured win rate on this question; null: no evidence")
    win_rate_ci: tuple[float, float] | None = Field(
        description="its 95% interval (Wilson; study 3: the architecture-cluster bootstrap)"
    )
    pairs: int | None = Field(description="the number of pairs the win rate counts")
    tally: tuple[int, int, int] | None = Field(
        None, description="study 3: correct, wrong and undecided picks over the pairs; null otherwise"
    )
    evidence: str = Field(description="one line: the win rate with its interval, or 'no evidence'")
    validated: bool = Field(description="pre-registered, and the whole interval above 1/2")
    primary: bool = Field(description="the rule the request named, or the product's default")
    source: str | None = Field(None, description="where a value not measured on the run came from")


class AdviceOut(BaseModel):
    """Never a bare undecided: every candidate rule's answer, the one followed and why, its confidence."""

    question: Literal["v1_v2", "ranking"]
    evidence_outcome: str = Field(description="the evidence file's outcome that answers this question")
    study: str
    pick: str | None = Field(
        description="the answer; null: no rule separates the candidates beyond the noise"
    )
    answer: str = Field(description="the pick, or 'no difference beyond the noise'")
    followed_rule: str
    why: str
    exploratory: bool = Field(description="true unless the followed rule's evidence validates it")
    confidence: float | None = Field(description="the followed rule's measured win rate; null: no evidence")
    confidence_ci: tuple[float, float] | None
    confidence_pairs: int | None
    summary: str
    rules: list[RuleAnswerOut]


class ScoredModel(BaseModel):
    """One model's stored run and its markers."""

    label: str = Field(description="its name, else the uploaded file's name, else the short reference")
    model: dict[str, Any]
    run_id: uuid.UUID
    markers: dict[str, MarkerStat]
    warnings: list[str] = Field(default_factory=list, description="e.g. that no preprocessing was given")


# --- recommendations ---------------------------------------------------------------------------------


class Comparison(BaseModel):
    marker: str
    v1: float | None
    v2: float | None
    v1_std: float | None
    v2_std: float | None
    difference: float | None = Field(description="v2 − v1")
    noise: float | None = Field(description="standard error of the difference; null: no noise estimate")
    p_value: float | None = Field(description="two-sided Welch test of the difference")
    favours: Literal["v1", "v2"] | None


class WeightsOut(ScoredModel):
    weights: str
    imagenet_acc1: float | None = Field(description="ImageNet-1k acc@1 from the weights' metadata")


class Recommendation(BaseModel):
    architecture: str
    verdict: Literal["v1", "v2", "undecided"] = Field(
        description="v1 (v2) when every marker of the rule prefers it beyond the noise"
    )
    reason: str
    rule: RuleUsed
    comparisons: list[Comparison]
    v1: WeightsOut
    v2: WeightsOut
    id_accuracy_pick: Literal["v1", "v2", "undecided"] = Field(
        description="what picking the higher ImageNet acc@1 would choose, beyond the binomial noise of its "
        "50,000 validation images (undecided within it)"
    )
    picks_agree: bool | None = Field(description="None when either pick is undecided")
    advice: AdviceOut = Field(description="every candidate rule's verdict and the answer the product gives")


class RecommendationSummary(BaseModel):
    architecture: str
    v1_acc1: float | None
    v2_acc1: float | None
    verdict: Literal["v1", "v2", "undecided"] | None = Field(description="None: not computed yet")
    reason: str | None
    id_accuracy_pick: Literal["v1", "v2", "undecided"]
    picks_agree: bool | None
    advice: AdviceOut | None = Field(None, description="None: not computed yet")


class RecommendationPage(BaseModel):
    items: list[RecommendationSummary]
    rule: RuleUsed = Field(description="the rule every verdict of the page applied, with its evidence")
    next_cursor: str | None


# --- rankings ------------------------------------------------------------------------------------------


class NamedModel(BaseModel):
    """A model with the name and tags its run gets (as in ``POST /v1/jobs``); the name labels it here."""

    model_config = ConfigDict(extra="forbid")

    model: ModelRef
    name: Name | None = None
    tags: Tags = Field(default_factory=dict)


Candidate = Annotated[ModelRef | NamedModel, Field(union_mode="left_to_right")]


class RankingRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    candidates: list[Candidate] = Field(
        min_length=1,
        max_length=MAX_CANDIDATES,
        description="model references, or {model, name, tags} to name a candidate",
    )
    dataset: DatasetRef
    sampling: Sampling = Field(default_factory=Sampling)
    protocol: Protocol = Field(default_factory=Protocol)
    rule: str | None = RULE_FIELD


class RankedOut(ScoredModel):
    rank: int | None = Field(
        description="rank by the rule, 1 = best; candidates the noise cannot separate share a rank; "
        "None = unrankable"
    )
    front: int | None = Field(description="front of 'better beyond the noise', 1 = nobody is better")
    unrankable: str | None = Field(description="why the rule cannot place this candidate")
    id_accuracy_rank: int | None
    logme_rank: int | None
    disagrees_with_id_accuracy: bool
    disagrees_with_logme: bool
    missing: list[str]


class RankingOut(BaseModel):
    entries: list[RankedOut]
    pick: str | None
    reason: str = Field(description="why the rule picks this candidate, or nobody")
    rule: RuleUsed
    id_accuracy_pick: str | None = Field(
        description="the candidate ID accuracy alone puts first beyond the noise, as the rule's pick (None: "
        "it cannot pick)"
    )
    logme_pick: str | None
    picks_agree: bool | None
    id_accuracy_discordant: list[tuple[str, str]] = Field(
        description="(the rule's better, the rule's worse) pairs that ID accuracy orders the other way, "
        "beyond the noise"
    )
    logme_discordant: list[tuple[str, str]]
    advice: AdviceOut = Field(description="every candidate rule's pick and the answer the product gives")


# --- gates ---------------------------------------------------------------------------------------------


class StoredRun(BaseModel):
    """A run already in the history, by id (or a unique prefix of it: ``app.services.short_ids``)."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    source: Literal["run"] = "run"
    id: str = Field(
        min_length=1, max_length=80, description="the run's id, or its first 8 or more hex digits"
    )


class AliasRef(BaseModel):
    """The run a baseline alias of the gate's project points to when the gate is asked
    (``alias:NAME`` on the command line)."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    source: Literal["alias"] = "alias"
    name: AliasName


Reference = Annotated[AnyModelRef | StoredRun | AliasRef, Field(discriminator="source")]
Subject = Annotated[Reference | NamedModel, Field(union_mode="left_to_right")]


class GateRequest(BaseModel):
    """A candidate against a baseline, each a model (scored now, or found scored) or a stored run.

    Both are compared under one dataset sample and protocol: this request's, or, when a side is a
    stored run, that run's own sampling and protocol as stored (fields the request states must agree
    with them, else 422 ``incomparable_runs``).
    """

    model_config = ConfigDict(extra="forbid")

    candidate: Subject
    baseline: Subject
    dataset: DatasetRef
    sampling: Sampling = Field(default_factory=Sampling)
    protocol: Protocol = Field(default_factory=Protocol)
    rules: list[Annotated[str, Field(max_length=200)]] = Field(
        min_length=1,
        max_length=MAX_RULES,
        description="'metric: kind threshold', kind one of min, max, max_drop, max_relative_drop, "
        "max_rise, max_relative_rise",
    )

    @model_validator(mode="after")
    def _alias_is_a_baseline(self) -> GateRequest:
        if isinstance(self.candidate, AliasRef):
            raise ValueError("an alias names a baseline: the candidate is a model or a stored run")
        return self


class RuleOut(BaseModel):
    rule: str
    metric: str
    kind: str
    threshold: float
    candidate: float | None
    baseline: float | None
    change: float | None = Field(description="candidate − baseline")
    relative_change: float | None = Field(description="change / |baseline|")
    passed: bool
    status: Literal["passed", "failed", "inconclusive"]
    interval: list[float] | None = Field(
        None, description="the rule statistic's one-sided 95% bounds (a two-sided 90% interval, as in TOST)"
    )
    reason: str
    evidence: str | None = Field(None, description="the back-test evidence for this metric, one line")


class GateOut(BaseModel):
    # A stored gate decision, read from its row: ``GateOut.model_validate(gate)``.

    model_config = ConfigDict(from_attributes=True)

    id: uuid.UUID
    passed: bool
    status: Literal["passed", "failed", "inconclusive"] = Field(
        description="inconclusive: no rule failed, but one could not decide beyond the noise"
    )
    noise_test: str
    candidate_run_id: uuid.UUID | None
    baseline_run_id: uuid.UUID | None
    candidate_label: str | None = Field(description="the candidate's label when the gate decided")
    baseline_label: str | None
    baseline_alias: str | None = Field(
        None, description="the alias the baseline was named by; baseline_run_id is the run it pointed to"
    )
    project: str = Field("default", description="the project the gate was asked in")
    candidate: dict[str, Any]
    baseline: dict[str, Any]
    dataset: dict[str, Any]
    rules: list[RuleOut]
    warnings: list[str] = Field(
        default_factory=list, description="e.g. that a side's run is archived (the gate still used it)"
    )
    created_at: datetime

    @model_validator(mode="before")
    @classmethod
    def _from_row(cls, data: Any, info: ValidationInfo) -> Any:
        """A ``Gate`` row keeps each rule's outcome in ``outcomes`` (outcomes stored before gates could
        be inconclusive have only ``passed``) and was decided under the noise test of this version; the
        context's ``warnings`` say what is true of its runs now (``app.services.gates.gate_out``)."""
        if not isinstance(data, Gate):
            return data
        derived = {
            "warnings": (info.context or {}).get("warnings", []),
            "project": data.project_name,
            "noise_test": GATE_TEST,
            "rules": [{"status": "passed" if o["passed"] else "failed", **o} for o in data.outcomes],
        }
        return {name: derived[name] if name in derived else getattr(data, name) for name in cls.model_fields}


class GatePage(BaseModel):
    items: list[GateOut]
    next_cursor: str | None
