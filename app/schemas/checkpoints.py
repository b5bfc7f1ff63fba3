"""Bodies of the checkpoint upload."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field


class CheckpointOut(BaseModel):
    """An accepted upload, named by its sha256 (``id``); a job names it as ``model.path`` =
    ``model_path`` (the id plus the format's suffix, which tells a program from a state_dict)."""

    model_config = ConfigDict(from_attributes=True)

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
