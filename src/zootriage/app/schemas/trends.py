"""Bodies of ``GET /v1/trends``: per marker, the selected runs' values in order with their noise, and
whether the marker moved between the first and the last point beyond that noise (``app.services.trends``)."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, Field

Verdict = Literal["drift", "within_noise", "cannot_decide"]
Direction = Literal["higher", "lower", "same"]


class TrendPoint(BaseModel):
    """One run's value of one marker, with the band the pages draw around it."""

    index: int = Field(description="its place among the selected runs, 0 the first (the oldest)")
    run_id: uuid.UUID
    short_id: str = Field(description="the first 8 characters of the run id")
    label: str = Field(description="its name, else the uploaded file's name, else the short reference")
    name: str | None
    created_at: datetime
    at: datetime = Field(
        description="where the point stands in time: when the run was stored, or, along an alias's "
        "history, when the alias moved to it"
    )
    value: float
    std: float | None = Field(description="std over the run's repeats; null: no noise estimate")
    repeats: int
    se: float | None = Field(description="standard error of the value, std/√repeats; null: unmeasured")
    band: tuple[float, float] | None = Field(description="value ± 1 standard error; null without one")
    decidable: bool = Field(description="false: from a degenerate GLUE regime, shown but never decides")
    reason: str | None = Field(description="why it may not decide (null when it may)")
    architecture: str | None
    model: dict[str, Any]
    tags: dict[str, str]


class Drift(BaseModel):
    """last − first, tested against the noise of both: a two-sided Welch t-test at ``alpha``, i.e.
    |difference| > critical · se with se = √(se_first² + se_last²) and ``critical`` the t quantile
    1 − alpha/2 at the Welch–Satterthwaite degrees of freedom (the normal z as they grow)."""

    verdict: Verdict
    reason: str
    first_run_id: uuid.UUID | None
    last_run_id: uuid.UUID | None
    first: float | None
    last: float | None
    difference: float | None = Field(description="last − first")
    se: float | None = Field(description="√(se_first² + se_last²); null: a point has no noise estimate")
    df: float | None = Field(description="Welch–Satterthwaite degrees of freedom (null: infinite or unknown)")
    alpha: float
    critical: float | None = Field(description="the t (or z) quantile 1 − alpha/2 the difference is held to")
    threshold: float | None = Field(description="critical · se: the smallest |difference| called drift")
    p_value: float | None
    direction: Direction | None
    better: bool | None = Field(
        description="drift towards the marker's preferred direction (null: no drift, or no preference)"
    )


class TrendSeries(BaseModel):
    marker: str = Field(description="the registry's name")
    asked: str = Field(description="the name the request used (a registry name, or d_eff, psi_eff, r_eff)")
    description: str
    higher_is_better: bool | None
    points: list[TrendPoint]
    missing: int = Field(description="selected runs without a value of this marker (not applicable, absent)")
    drift: Drift


class TrendSelection(BaseModel):
    """The runs a trend follows, as the request chose them."""

    project: str | None
    alias: str | None
    architecture: str | None
    name_contains: str | None
    tags: list[str]
    dataset: str | None
    since: datetime | None
    limit: int
    order: str = Field(description="what orders the points: created_at, or the alias's moves")


class TrendsOut(BaseModel):
    selection: TrendSelection
    runs: int = Field(description="runs selected (each marker may have fewer points: see missing)")
    truncated: bool = Field(description="more runs matched than the limit: the latest `limit` are shown")
    test: str
    band: str = Field(description="what the band around each point is")
    series: list[TrendSeries]
    warnings: list[str] = Field(
        description="what a reader should know, e.g. that the runs span several datasets"
    )
