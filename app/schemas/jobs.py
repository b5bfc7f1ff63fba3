"""Bodies of the jobs API."""

from __future__ import annotations

import uuid
from datetime import datetime

from pydantic import BaseModel, ConfigDict, Field

from app.schemas.scoring import ProtocolFields
from core.data.refs import DatasetRef, Sampling
from core.zoo.refs import ModelRef


class JobRequest(BaseModel):
    """What to score. ``model.path`` of a checkpoint model is the id of an upload (its sha256)."""

    model_config = ConfigDict(extra="forbid")

    model: ModelRef
    dataset: DatasetRef
    sampling: Sampling = Field(default_factory=Sampling)
    protocol: ProtocolFields = Field(default_factory=ProtocolFields)


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
