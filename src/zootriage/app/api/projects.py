"""Projects and their baseline aliases: ``/v1/projects`` (list, create, show) and
``/v1/projects/{project}/aliases[/{name}[/history]]`` (list, show, move with PUT, history)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path
from fastapi.responses import JSONResponse

from zootriage.app.api.deps import CallerDep, SessionDep, WriteAccess
from zootriage.app.api.errors import ApiError, responses
from zootriage.app.api.project_scope import PathProject
from zootriage.app.project_names import SLUG_CHARS
from zootriage.app.schemas.projects import (
    AliasHistory,
    AliasList,
    AliasOut,
    AliasRequest,
    AliasSet,
    ProjectList,
    ProjectOut,
    ProjectRequest,
)
from zootriage.app.services import projects as project_service

router = APIRouter(prefix="/v1/projects", tags=["projects"])
AliasName = Annotated[str, Path(max_length=SLUG_CHARS, description="the alias, e.g. production")]


@router.get("", response_model=ProjectList, responses=responses(401, 403))
def get_projects(session: SessionDep, caller: CallerDep) -> ProjectList:
    """The projects the key may use, by name, with how many runs, jobs and aliases each has."""
    return ProjectList(items=project_service.list_projects(session, caller))


@router.post("", status_code=201, response_model=ProjectOut, responses=responses(401, 403, 409, 422))
def post_project(
    body: ProjectRequest, session: SessionDep, caller: CallerDep, _: WriteAccess
) -> JSONResponse:
    """Create a project (write scope; not with a key limited to projects); 409 ``project_exists``."""
    if caller is not None and caller.projects is not None:
        raise ApiError(
            403,
            "forbidden",
            f"the API key {caller.name!r} is limited to projects: it may not create one",
        )
    out = project_service.create_project(session, body.name, body.description)
    return JSONResponse(
        out.model_dump(mode="json"), status_code=201, headers={"Location": f"/v1/projects/{out.name}"}
    )


@router.get("/{project}", response_model=ProjectOut, responses=responses(403, 404, 422))
def get_project(project: PathProject, session: SessionDep) -> ProjectOut:
    return project_service.project_out(session, project)


@router.get("/{project}/aliases", response_model=AliasList, responses=responses(403, 404, 422))
def get_aliases(project: PathProject, session: SessionDep) -> AliasList:
    """The project's aliases by name, each with the run it points to."""
    return AliasList(items=project_service.list_aliases(session, project))


@router.get("/{project}/aliases/{name}", response_model=AliasOut, responses=responses(403, 404, 422))
def get_alias(project: PathProject, name: AliasName, session: SessionDep) -> AliasOut:
    return project_service.show_alias(session, project, name)


@router.put(
    "/{project}/aliases/{name}", response_model=AliasSet, responses=responses(401, 403, 404, 409, 422)
)
def put_alias(
    project: PathProject,
    name: AliasName,
    body: AliasRequest,
    session: SessionDep,
    caller: CallerDep,
    _: WriteAccess,
) -> AliasSet:
    """Point the alias at a run (its id or a unique prefix), creating the alias on first use; the move
    is kept in its history with the key that made it (``moved`` is null when it already pointed there)."""
    return project_service.set_alias(session, project, name, body.run, caller)


@router.get(
    "/{project}/aliases/{name}/history", response_model=AliasHistory, responses=responses(403, 404, 422)
)
def get_alias_history(project: PathProject, name: AliasName, session: SessionDep) -> AliasHistory:
    """Every move of the alias, oldest first: from which run to which, by which key, when."""
    return project_service.alias_history(session, project, name)
