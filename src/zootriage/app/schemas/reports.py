"""The body of a run's report (``GET /v1/runs/{id}/report``): everything needed to read and reproduce
its numbers, in one self-contained document (the HTML report renders exactly this)."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from pydantic import BaseModel, Field

REPORT_VERSION = 1


class MarkerReport(BaseModel):
    """One marker: its value and its noise. ``std`` is the spread s of its R repeats (``docs/noise.md``);
    ``se`` = s/√R with ``df`` = R − 1, and ``interval`` = value ± t₀.₉₇₅,R−1 · se, the two-sided 95%
    Student-t interval of the stored mean. All three are null when no noise was measured (one repeat,
    or a reason says why): the value then has noise nobody measured, never zero noise."""

    name: str
    value: float | None
    std: float | None
    se: float | None
    df: float | None
    interval: tuple[float, float] | None
    applicable: bool
    decidable: bool
    reason: str | None
    version: str


class ModelSection(BaseModel):
    reference: str = Field(description="the short reference a user would type, hashes shortened")
    ref: dict[str, Any]
    architecture: str | None
    weights_sha256: str
    meta: dict[str, Any] = Field(description="what the worker learned of the model (label space, sizes)")


class DatasetSection(BaseModel):
    reference: str = Field(description="the short reference, e.g. builtin:mnist")
    ref: dict[str, Any]
    fingerprint: str = Field(description="covers the sampled images, their labels and the sampling")


class Provenance(BaseModel):
    """The job that computed the run (the first linked to it) and how many jobs asked for it."""

    job_id: uuid.UUID | None
    job_created_at: datetime | None
    job_started_at: datetime | None
    job_finished_at: datetime | None
    attempts: int | None
    jobs_linked: int
    workers: dict[str, Any] = Field(description="the worker of each stage (extraction, markers)")


class RunReport(BaseModel):
    report_version: int = REPORT_VERSION
    generated_at: datetime
    id: uuid.UUID
    short_id: str
    run_key: str
    label: str
    name: str | None
    description: str | None
    tags: dict[str, str]
    created_at: datetime
    model: ModelSection
    dataset: DatasetSection
    sampling: dict[str, Any]
    protocol: dict[str, Any]
    n_images: int
    code_version: str
    device: str
    timings: dict[str, Any]
    provenance: Provenance
    noise: str = Field(description="how to read each marker's std, se and interval")
    markers: list[MarkerReport]
