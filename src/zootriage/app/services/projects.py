"""Projects and baseline aliases: creating and listing projects, which projects a key may use, and
moving, reading and resolving aliases. The queries are ``app.db.project_queries``.

Access. A key limited to some projects (``ApiKey.projects``) sees and writes only in them: naming any
other project is 403 ``forbidden`` (checked before the project is looked up, so a key learns nothing
of projects it may not use); listings without a project show the runs and gates of its own projects.
A key with no limit, or no key on an open server, uses every project.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Sequence

from sqlalchemy.orm import Session

from zootriage.app.api_keys import Caller
from zootriage.app.db import project_queries as q
from zootriage.app.db.models import Alias, Project, Run
from zootriage.app.db.run_queries import run_by_id, upload_filenames
from zootriage.app.labels import run_label
from zootriage.app.project_names import DEFAULT_PROJECT, BadSlug, check_alias_name, check_project_name
from zootriage.app.schemas.projects import (
    AliasHistory,
    AliasMove,
    AliasOut,
    AliasSet,
    ProjectOut,
)
from zootriage.app.services import short_ids
from zootriage.app.services.errors import ServiceError


def _checked(name: str) -> str:
    try:
        return check_project_name(name)
    except BadSlug as exc:
        raise ServiceError(422, "invalid_request", str(exc)) from None


def _alias_name(name: str) -> str:
    try:
        return check_alias_name(name)
    except BadSlug as exc:
        raise ServiceError(422, "invalid_request", str(exc)) from None


def check_access(caller: Caller | None, name: str) -> None:
    """403 ``forbidden`` when ``caller``'s key is limited to other projects than ``name``."""
    if caller is not None and not caller.sees(name):
        allowed = ", ".join(sorted(caller.projects or ())) or "none"
        raise ServiceError(
            403, "forbidden", f"the API key {caller.name!r} may use only the projects {allowed}, not {name!r}"
        )


def find_project(session: Session, name: str) -> Project:
    """The project ``name`` (the default one is made when first needed); 404 ``project_not_found``."""
    try:
        return q.project_named(session, _checked(name))
    except q.UnknownProject as exc:
        raise ServiceError(404, exc.code, exc.message) from None


def project_for(session: Session, caller: Caller | None, name: str | None) -> Project:
    """The project a request works in: ``name``, or the default project when it names none; 422 for a
    malformed name, 403 for one the key may not use, 404 for one that does not exist."""
    chosen = _checked(name) if name is not None else DEFAULT_PROJECT
    if (
        name is None
        and caller is not None
        and caller.projects is not None
        and DEFAULT_PROJECT not in caller.projects
    ):
        raise ServiceError(
            403,
            "forbidden",
            f"the API key {caller.name!r} may use only the projects {', '.join(sorted(caller.projects))}: "
            "name one (?project=NAME, or --project NAME)",
        )
    check_access(caller, chosen)
    return find_project(session, chosen)


def visible_project_ids(session: Session, caller: Caller | None, name: str | None) -> tuple[int, ...] | None:
    """The projects a listing shows: ``name`` alone when given (checked as :func:`project_for`), else
    every project the key may use; None: every project (no filter)."""
    if name is not None:
        return (project_for(session, caller, name).id,)
    if caller is None or caller.projects is None:
        return None
    return tuple(q.project_ids(session, caller.projects))


def visible_project_names(
    session: Session, caller: Caller | None, name: str | None
) -> tuple[str, ...] | None:
    """:func:`visible_project_ids` by name, sorted (``app.db.run_queries.RunFilter.projects`` takes
    names): the same projects, the same 403/404/422; None: every project."""
    ids = visible_project_ids(session, caller, name)
    if ids is None:
        return None
    return tuple(sorted(q.project_names_by_id(session, ids).values()))


def check_projects_exist(session: Session, names: Iterable[str]) -> None:
    """Each name is a project (the default one is made if needed); 422 malformed, 404 unknown."""
    for name in sorted(set(names)):
        find_project(session, name)


def check_run_visible(session: Session, caller: Caller | None, run_id: uuid.UUID) -> None:
    """403 when ``caller``'s key is limited to projects none of which the run has joined. (A key with
    no limit may alias or gate any run in a project: the run then joins that project.)"""
    check_runs_visible(session, caller, [run_id])


def check_runs_visible(session: Session, caller: Caller | None, run_ids: Sequence[uuid.UUID]) -> None:
    """:func:`check_run_visible` for many runs in one query: 403 naming the first the key may not see."""
    if caller is None or caller.projects is None:
        return
    seen = q.runs_in_projects(session, run_ids, q.project_ids(session, caller.projects))
    hidden = next((run_id for run_id in run_ids if run_id not in seen), None)
    if hidden is not None:
        raise ServiceError(
            403, "forbidden", f"run {hidden} is in none of the projects the API key {caller.name!r} may use"
        )


def check_uploads_visible(caller: Caller | None) -> None:
    """403 for a key limited to projects: uploads are stored once for everyone and belong to no
    project, so such a key may upload and score its uploads by id but not list or read others'."""
    if caller is not None and caller.projects is not None:
        raise ServiceError(
            403,
            "forbidden",
            f"the API key {caller.name!r} is limited to projects; uploads belong to no project, so "
            "listing or reading them needs a key without a project limit",
        )


def check_job_visible(session: Session, caller: Caller | None, job_id: uuid.UUID) -> None:
    """403 when ``caller``'s key is limited to projects none of which asked for the job."""
    if caller is None or caller.projects is None:
        return
    if not q.job_in_projects(session, job_id, q.project_ids(session, caller.projects)):
        raise ServiceError(
            403, "forbidden", f"job {job_id} is in none of the projects the API key {caller.name!r} may use"
        )


# --- projects ------------------------------------------------------------------------------------------


def project_out(session: Session, project: Project) -> ProjectOut:
    return ProjectOut(
        name=project.name,
        description=project.description,
        created_at=project.created_at,
        **q.project_counts(session, project.id),
    )


def create_project(session: Session, name: str, description: str | None) -> ProjectOut:
    """A new project; 409 ``project_exists`` when the name is taken."""
    made = q.create_project(session, _checked(name), description)
    if made is None:
        raise ServiceError(409, "project_exists", f"a project {name!r} exists already")
    session.commit()
    return project_out(session, made)


def list_projects(session: Session, caller: Caller | None) -> list[ProjectOut]:
    """Every project the caller may use, by name (the default one always among them when allowed)."""
    if caller is None or caller.sees(DEFAULT_PROJECT):
        q.project_named(session, DEFAULT_PROJECT)
        session.commit()
    names = None if caller is None or caller.projects is None else caller.projects
    return [project_out(session, row) for row in q.list_projects(session, names)]


# --- aliases ---------------------------------------------------------------------------------------------


def _alias_out(session: Session, project: Project, alias: Alias) -> AliasOut:
    run = run_by_id(session, alias.run_id) if alias.run_id is not None else None
    label = run_label(run, upload_filenames(session, [run])) if run is not None else None
    return AliasOut(
        project=project.name,
        name=alias.name,
        run_id=alias.run_id,
        run_label=label,
        created_at=alias.created_at,
        updated_at=alias.updated_at,
    )


def _alias(session: Session, project: Project, name: str) -> Alias:
    found = q.alias_by_name(session, project.id, _alias_name(name))
    if found is None:
        raise ServiceError(404, "alias_not_found", f"project {project.name!r} has no alias {name!r}")
    return found


def set_alias(
    session: Session, project: Project, name: str, run_text: str, caller: Caller | None
) -> AliasSet:
    """Point the alias ``name`` of ``project`` at the run ``run_text`` names (a full id or a unique
    prefix: 404/409/422 as ``app.services.short_ids``), creating it on first use; the move is recorded
    with the key that made it, and the run joins the project."""
    run_id = short_ids.resolve_uuid(session, short_ids.RUN, run_text)
    if run_by_id(session, run_id) is None:
        raise ServiceError(404, "run_not_found", f"no run {run_id}")
    check_run_visible(session, caller, run_id)
    actor = caller.name if caller is not None else None
    key_id = caller.key_id if caller is not None else None
    alias, event = q.move_alias(session, project.id, _alias_name(name), run_id, actor, key_id)
    session.commit()
    out = _alias_out(session, project, alias)
    moved = AliasMove.model_validate(event) if event is not None else None
    return AliasSet(**out.model_dump(), moved=moved)


def list_aliases(session: Session, project: Project) -> list[AliasOut]:
    return [_alias_out(session, project, row) for row in q.aliases_of(session, project.id)]


def show_alias(session: Session, project: Project, name: str) -> AliasOut:
    return _alias_out(session, project, _alias(session, project, name))


def alias_history(session: Session, project: Project, name: str) -> AliasHistory:
    alias = _alias(session, project, name)
    moves = q.alias_history(session, project.name, alias.name)
    return AliasHistory(
        project=project.name,
        name=alias.name,
        run_id=alias.run_id,
        moves=[AliasMove.model_validate(event) for event in moves],
    )


def resolve_alias(session: Session, project: Project, name: str) -> Run:
    """The run the alias points to now (a gate's ``alias:NAME`` baseline); 404 ``alias_not_found``,
    409 ``alias_run_gone`` when its run was deleted since."""
    alias = _alias(session, project, name)
    run = run_by_id(session, alias.run_id) if alias.run_id is not None else None
    if run is None:
        raise ServiceError(
            409,
            "alias_run_gone",
            f"alias {name!r} of project {project.name!r} points to a run that was deleted: move it "
            f"(`zootriage alias set {project.name} {name} RUN`)",
        )
    return run
