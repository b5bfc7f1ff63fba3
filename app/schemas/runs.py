"""Bodies of the run history: a summary per row, the full record for one run, a page with a cursor."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field


class MarkerOut(BaseModel):
    model_config = ConfigDict(from_attributes=True)

    name: str
    value: float | None
    std: float | None
    applicable: bool
    reason: str | None
    version: str


class RunIdentity(BaseModel):
    """What a run is: the fields its history row and its detail share."""

    id: uuid.UUID
    run_key: str
    created_at: datetime
    label: str = Field(description="its name, else the uploaded file's name, else the short reference")
    name: str | None
    tags: dict[str, str]
    warnings: list[str] = Field(description="what a reader should know, e.g. that no preprocessing was given")
    architecture: str | None
    weights_sha256: str
    dataset_fingerprint: str
    model: dict[str, Any]
    dataset: dict[str, Any]


class RunSummary(RunIdentity):
    markers: dict[str, float | None]


class RunDetail(RunIdentity):
    sampling: dict[str, Any]
    protocol: dict[str, Any]
    model_meta: dict[str, Any]
    code_version: str
    device: str
    n_images: int
    timings: dict[str, Any]
    markers: list[MarkerOut]


class RunPage(BaseModel):
    items: list[RunSummary]
    next_cursor: str | None
