"""Bodies of the jobs API."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

from zootriage.app.labels import Name, Tags
from zootriage.core.data.refs import DatasetRef, Sampling
from zootriage.core.protocol import Protocol
from zootriage.core.zoo.refs import ModelRef


class JobRequest(BaseModel):
    """What to score. ``model.path`` of a checkpoint model is the id of an upload (its sha256).
    A sampling without ``per_class`` extracts enough images for disjoint GLUE repeats
    (``Sampling.for_repeats``). ``name`` and ``tags`` label the run (a checkpoint's own are used when
    the job gives none); they are not part of what is computed, so a run already stored for the same
    request keeps its labels (``PATCH /v1/runs/{id}`` changes them). Everything else is: a job that asks
    for other preprocessing, label space, sampling or protocol gets a run of its own
    (``app.db.run_key``).
    """

    model_config = ConfigDict(extra="forbid")

    model: ModelRef
    dataset: DatasetRef
    sampling: Sampling = Field(default_factory=Sampling)
    protocol: Protocol = Field(default_factory=Protocol)
    name: Name | None = None
    tags: Tags = Field(default_factory=dict, description="key=value labels, e.g. {\"team\": \"vision\"}")

    @model_validator(mode="after")
    def _images_for_the_repeats(self) -> JobRequest:
        self.sampling = self.sampling.for_repeats(self.protocol.points_per_class, self.protocol.repeats)
        return self


class Progress(BaseModel):
    stage: str | None
    done: int
    total: int


class JobError(BaseModel):
    code: str
    message: str


class JobOut(BaseModel):
    # A job as the API shows it, read from its row: ``JobOut.model_validate(job)``; the row keeps
    # progress and error in flat columns, nested here.

    model_config = ConfigDict(from_attributes=True)

    id: uuid.UUID
    name: str | None
    tags: dict[str, str]
    status: str
    progress: Progress
    error: JobError | None
    attempts: int
    run_id: uuid.UUID | None
    created_at: datetime
    started_at: datetime | None
    finished_at: datetime | None

    @model_validator(mode="before")
    @classmethod
    def _nest_row_columns(cls, data: Any) -> Any:
        if isinstance(data, dict):
            return data
        error = None
        if data.error_code:
            error = JobError(code=data.error_code, message=data.error_message or "")
        flat = {name: getattr(data, name) for name in cls.model_fields if name not in ("progress", "error")}
        progress = Progress(stage=data.stage, done=data.done, total=data.total)
        return {**flat, "progress": progress, "error": error}


class JobPage(BaseModel):
    items: list[JobOut]
    next_cursor: str | None
