"""Bodies of the jobs API."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from core.data.refs import DatasetRef, Sampling
from core.zoo.refs import ModelRef


class JobRequest(BaseModel):
    """What to score. ``model.path`` of a checkpoint model is the id of an upload (its sha256)."""

    model_config = ConfigDict(extra="forbid")

    model: ModelRef
    dataset: DatasetRef
    sampling: Sampling = Field(default_factory=Sampling)
    protocol: dict[str, Any] = Field(
        default_factory=dict,
        description="GLUE protocol fields (points_per_class, n_t, seed, centering, dichotomy, repeats); "
        "missing fields take their defaults",
    )


class Progress(BaseModel):
    stage: str | None
    done: int
    total: int


class JobError(BaseModel):
    code: str
    message: str


class JobOut(BaseModel):
    id: uuid.UUID
    status: str
    progress: Progress
    error: JobError | None
    attempts: int
    run_id: uuid.UUID | None
    created_at: datetime
    started_at: datetime | None
    finished_at: datetime | None
