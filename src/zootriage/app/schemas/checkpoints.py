"""Bodies of the checkpoint upload and of the uploads list."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

from zootriage.app.db.models import Checkpoint
from zootriage.app.references import CANONICAL_SUFFIX


class CheckpointOut(BaseModel):
    """An accepted upload, named by its sha256 (``id``); a job names it as ``model.path`` =
    ``model_path`` (the id plus the format's suffix, which tells a program from a state_dict)."""

    model_config = ConfigDict(from_attributes=True)

    @model_validator(mode="before")
    @classmethod
    def _from_row(cls, data: Any) -> Any:
        """A ``Checkpoint`` row: its sha256 is the id, and the id with its format's suffix the path."""
        if not isinstance(data, Checkpoint):
            return data
        derived = {"id": data.sha256, "model_path": data.sha256 + CANONICAL_SUFFIX[data.format]}
        return {name: derived[name] if name in derived else getattr(data, name) for name in cls.model_fields}

    id: str
    model_path: str
    size_bytes: int
    format: str
    library: str | None
    architecture: str | None
    filename: str | None = Field(description="the client's file name")
    name: str | None
    tags: dict[str, str]
    preprocess: dict[str, Any] | None = Field(description="given at upload; overrides the file's")
    label_space: str | None
    created_at: datetime


class CheckpointPage(BaseModel):
    items: list[CheckpointOut]
    next_cursor: str | None
