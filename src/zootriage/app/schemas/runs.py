"""Bodies of the run history: a summary per row, the full record for one run, a page with a cursor.

Both are read from a ``Run`` row: ``RunSummary.model_validate(run, context={"filenames": ...,
"markers": {name: value}})`` and ``RunDetail.model_validate(run, context={"filenames": ..., "markers":
[Marker rows]})``; ``filenames`` maps upload ids to the client's file names (for the label).
"""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, model_validator

from zootriage.app.db.models import Run
from zootriage.app.labels import MAX_TAGS, TAG_KEY, Description, Name, check_tags, run_label, warnings_of
from zootriage.core.protocol import Protocol


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

    model_config = ConfigDict(from_attributes=True)

    id: uuid.UUID
    run_key: str
    created_at: datetime
    label: str = Field(description="its name, else the uploaded file's name, else the short reference")
    name: str | None
    tags: dict[str, str]
    description: str | None = Field(description="free text about the run, editable like its name")
    archived_at: datetime | None = Field(
        description="when it was archived (hidden from listings, stored-run recommendations and trends); "
        "null: not archived"
    )
    warnings: list[str] = Field(description="what a reader should know, e.g. that no preprocessing was given")
    architecture: str | None
    weights_sha256: str
    dataset_fingerprint: str
    model: dict[str, Any]
    dataset: dict[str, Any]

    @model_validator(mode="before")
    @classmethod
    def _from_row(cls, data: Any, info: ValidationInfo) -> Any:
        """A ``Run`` row: its columns under their API names, its label and warnings, the markers the
        context holds; every other field is read by name."""
        if not isinstance(data, Run):
            return data
        context = info.context or {}
        derived = {
            "label": run_label(data, context.get("filenames", {})),
            "tags": data.tag_map,
            "warnings": warnings_of(data.model_meta),
            "model": data.model_ref,
            "dataset": data.dataset_ref,
            "markers": context.get("markers"),
        }
        return {name: derived[name] if name in derived else getattr(data, name) for name in cls.model_fields}


class RunSummary(RunIdentity):
    markers: dict[str, float | None]


class RunDetail(RunIdentity):
    sampling: dict[str, Any]
    protocol: Protocol
    model_meta: dict[str, Any]
    code_version: str
    device: str
    n_images: int
    timings: dict[str, Any]
    markers: list[MarkerOut]


class RunLabels(BaseModel):
    """A JSON merge patch (RFC 7396) of a run's labels, which describe it and change no number:
    ``name`` and ``description`` replace the run's (``null`` removes them); each member of ``tags``
    sets that tag, or removes it when ``null``; a field left out stays as it is. Every name, description
    and tag is checked as at submit (``app.labels``)."""

    model_config = ConfigDict(extra="forbid")

    name: Name | None = Field(default=None, description="the new name; null removes it")
    description: Description | None = Field(
        default=None, description="the new free-text description (line breaks allowed); null removes it"
    )
    tags: dict[str, str | None] = Field(
        default_factory=dict,
        max_length=MAX_TAGS,
        description='tags to set, or to remove with null, e.g. {"stage": "prod", "old": null}',
    )

    @model_validator(mode="after")
    def _check_tags(self) -> RunLabels:
        removed = [key for key, value in self.tags.items() if value is None]
        for key in removed:
            if not TAG_KEY.match(key):
                raise ValueError(f"tag key {key[:40]!r} is not a tag key")
        check_tags({key: value for key, value in self.tags.items() if value is not None})
        return self


class RunPage(BaseModel):
    items: list[RunSummary]
    next_cursor: str | None
