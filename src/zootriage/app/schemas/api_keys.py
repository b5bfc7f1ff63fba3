"""Bodies of the API-key endpoints: what a key may do and when it was used, never its secret or hash."""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, ConfigDict, Field

from zootriage.app.api_keys import DEFAULT_SCOPES, Scope
from zootriage.app.project_names import ProjectName


class ApiKeyRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str = Field(min_length=1, max_length=128, pattern=r"^[^\x00-\x1f]+$")
    scopes: list[Scope] = Field(default_factory=lambda: sorted(DEFAULT_SCOPES), min_length=1, max_length=3)
    projects: list[ProjectName] | None = Field(
        None, min_length=1, max_length=64, description="the projects the key may use; null: every project"
    )


class ApiKeyOut(BaseModel):
    model_config = ConfigDict(from_attributes=True)

    id: int
    name: str
    scopes: list[Scope]
    projects: list[str] | None = Field(description="the projects the key may use; null: every project")
    created_at: datetime
    last_used_at: datetime | None
    revoked_at: datetime | None


class ApiKeyCreated(ApiKeyOut):
    key: str = Field(description="the secret, shown this once: only its hash is kept")


class ApiKeyPage(BaseModel):
    items: list[ApiKeyOut]
    next_cursor: str | None
