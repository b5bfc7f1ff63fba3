"""Bodies of the project and alias endpoints (``/v1/projects``)."""

from __future__ import annotations

import uuid
from datetime import datetime

from pydantic import BaseModel, ConfigDict, Field

from zootriage.app.project_names import ProjectName


class ProjectRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: ProjectName
    description: str | None = Field(None, max_length=2000)


class ProjectOut(BaseModel):
    name: str
    description: str | None
    created_at: datetime
    runs: int = Field(description="runs that joined the project (asked for in it, or aliased or gated in it)")
    jobs: int = Field(description="jobs asked for in it")
    aliases: int


class ProjectList(BaseModel):
    items: list[ProjectOut]


class AliasRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    run: str = Field(
        min_length=1, max_length=80, description="the run: its id or its first 8 or more hex digits"
    )


class AliasMove(BaseModel):
    """One move of an alias: from which run to which, by whom, when."""

    model_config = ConfigDict(from_attributes=True)

    from_run_id: uuid.UUID | None = Field(description="null: the alias was created by this move")
    to_run_id: uuid.UUID
    actor: str | None = Field(description="the API key's name; null: no key (an open server)")
    actor_key_id: int | None = Field(description="the API key's id; null: no key, or one given by hash")
    created_at: datetime


class AliasOut(BaseModel):
    project: str
    name: str
    run_id: uuid.UUID | None = Field(description="the run it points to; null: that run was deleted")
    run_label: str | None
    created_at: datetime
    updated_at: datetime


class AliasSet(AliasOut):
    moved: AliasMove | None = Field(description="the move recorded; null: it already pointed there")


class AliasList(BaseModel):
    items: list[AliasOut]


class AliasHistory(BaseModel):
    project: str
    name: str
    run_id: uuid.UUID | None
    moves: list[AliasMove] = Field(description="oldest first")
