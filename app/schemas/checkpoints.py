"""Bodies of the checkpoint upload."""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, ConfigDict


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
    filename: str | None
    created_at: datetime
