"""Bodies of the sweeps API: one request scoring many models on one dataset, sampling and protocol."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from zootriage.app.labels import Name, Tags
from zootriage.app.schemas.jobs import JobOut
from zootriage.app.schemas.triage import RULE_FIELD, Candidate, RankingOut
from zootriage.core.data.refs import DatasetRef, Sampling
from zootriage.core.protocol import Protocol
from zootriage.core.zoo.sweep_models import TIMM_FILTER

MAX_SWEEP_MODELS = 64
SweepStatus = Literal["running", "finished", "cancelled"]
MemberStatus = Literal["held", "queued", "running", "succeeded", "failed", "cancelled", "missing"]


class PresetSelection(BaseModel):
    """``v1v2``: every torchvision architecture with both IMAGENET1K_V1 and IMAGENET1K_V2 weights."""

    model_config = ConfigDict(extra="forbid")
    preset: Literal["v1v2"]


class TimmSelection(BaseModel):
    """timm's pretrained names matching a filter (fnmatch rules, e.g. ``resnet50.*``)."""

    model_config = ConfigDict(extra="forbid")
    timm_filter: str = Field(pattern=TIMM_FILTER, examples=["resnet50.*"])


Selection = Annotated[
    Annotated[list[Candidate], Field(min_length=1, max_length=MAX_SWEEP_MODELS)]
    | PresetSelection
    | TimmSelection,
    Field(union_mode="left_to_right"),
]


class SweepRequest(BaseModel):
    """Many models scored like ``POST /v1/jobs`` scores one (one job per model, deduplicated as jobs
    are), then ranked by ``rule``. ``name`` and ``tags`` label the sweep and every run it creates."""

    model_config = ConfigDict(extra="forbid")

    models: Selection = Field(
        description=f'model references (or {{model, name, tags}}), {{"preset": "v1v2"}} or '
        f'{{"timm_filter": "resnet50.*"}}; at most {MAX_SWEEP_MODELS} models'
    )
    dataset: DatasetRef
    sampling: Sampling = Field(default_factory=Sampling)
    protocol: Protocol = Field(default_factory=Protocol)
    rule: str | None = RULE_FIELD
    name: Name | None = None
    tags: Tags = Field(default_factory=dict)


class SweepProgress(BaseModel):
    total: int = Field(description="models in the sweep")
    counts: dict[str, int] = Field(description="models by status (held: waiting for the sweep's turn)")
    finished: int = Field(description="models whose job has reached a final state")
    fraction: float = Field(description="mean over the models of their job's progress through its stages")


class SweepMemberOut(BaseModel):
    position: int
    label: str | None
    model: dict[str, Any]
    status: MemberStatus
    job: JobOut | None = Field(description="null: a run was already stored when the sweep was made")
    run_id: uuid.UUID | None


class SweepSummary(BaseModel):
    id: uuid.UUID
    name: str | None
    tags: dict[str, str]
    rule: str
    status: SweepStatus
    progress: SweepProgress
    created_at: datetime
    cancelled_at: datetime | None


class SweepOut(SweepSummary):
    selection: dict[str, Any]
    dataset: dict[str, Any]
    sampling: dict[str, Any]
    protocol: dict[str, Any]
    jobs: list[SweepMemberOut]
    ranking: RankingOut | None = Field(
        description="once no job is left to run: the finished runs ranked by the rule (ties kept)"
    )


class SweepPage(BaseModel):
    items: list[SweepSummary]
    next_cursor: str | None
