"""Sweeps: one request scores many models on one dataset, sampling and protocol, then ranks them.

A sweep is created whole or refused: every model is expanded (``core.zoo.sweep_models``, bounded)
and admitted like a job (``jobs.prepare``) before anything is written, so a bad reference is a 4xx
naming the model and no half-made sweep is left. Then each model becomes a job through the job
service (``jobs.create``), so the job rules hold: a run already stored answers its model at once,
an identical active job is joined rather than duplicated. The sweep's own new jobs are held back and
published ``settings.sweep_in_flight`` at a time (``app.services.sweep_queue``).

Status and progress are read from the jobs, never stored twice. A job's progress through its stages
is a fraction ``f`` in [0, 1]: 0 while held or queued, 1 once final (or for a stored run), and while
running in stage ``i`` of the ``K`` ordered stages ``STAGES`` with ``done`` of
``total`` steps, ``f = (i + done / total) / K`` (an unknown stage counts as 0). The sweep's fraction
is the mean of ``f`` over its models. When no job is left to run, the finished runs are ranked with
the rankings service (``rankings.ranked``): the rule's uncertainty-aware order, ties it cannot decide
kept as ties.
"""

from __future__ import annotations

import uuid
from collections import Counter
from collections.abc import Sequence
from datetime import UTC, datetime

from sqlalchemy.orm import Session

from zootriage.app.api_keys import Caller
from zootriage.app.db import job_lifecycle, project_queries
from zootriage.app.db.job_lifecycle import EXTRACTED
from zootriage.app.db.models import ACTIVE_STATUSES, JobStatus, Sweep, SweepMember
from zootriage.app.db.paging import PageKey
from zootriage.app.db.run_queries import markers_of
from zootriage.app.db.sweep_queries import (
    MemberRow,
    list_sweeps,
    members_of,
    own_active_jobs,
    runs_by_id,
    sweep_by_id,
    sweep_in_projects,
)
from zootriage.app.labels import BadLabel, check_tags, reference_of
from zootriage.app.project_names import DEFAULT_PROJECT
from zootriage.app.queue import revoke
from zootriage.app.schemas.jobs import JobOut
from zootriage.app.schemas.sweeps import (
    MAX_SWEEP_MODELS,
    PresetSelection,
    SweepMemberOut,
    SweepOut,
    SweepProgress,
    SweepRequest,
    SweepSummary,
    TimmSelection,
)
from zootriage.app.schemas.triage import RankingOut
from zootriage.app.services import jobs as job_service
from zootriage.app.services import projects as project_service
from zootriage.app.services.errors import ServiceError
from zootriage.app.services.rankings import ranked
from zootriage.app.services.sweep_queue import publish_next
from zootriage.app.services.triage import Gathered, ScoringPlan, Wanted, job_request, triage_rule, wanted
from zootriage.app.settings import Settings
from zootriage.core.errors import ZooError
from zootriage.core.zoo.refs import validate_model_ref
from zootriage.core.zoo.sweep_models import listed, timm_filter, v1_v2_preset

# The stages ``core.scoring`` reports, in order (``load_model`` from its extraction child).
STAGES = ("sample", "load_model", "extract", "markers")
FINAL = {JobStatus.succeeded.value, JobStatus.failed.value, JobStatus.cancelled.value}
ACTIVE = {"held", *(s.value for s in ACTIVE_STATUSES)}


def expand(body: SweepRequest) -> list[Wanted]:
    """The sweep's models, bounded; every run carries the sweep's tags (a model's own win)."""
    selection = body.models
    if isinstance(selection, PresetSelection):
        wants = [Wanted(ref) for ref in v1_v2_preset(MAX_SWEEP_MODELS)]
    elif isinstance(selection, TimmSelection):
        wants = [Wanted(ref) for ref in timm_filter(selection.timm_filter, MAX_SWEEP_MODELS)]
    else:
        wants = [wanted(candidate) for candidate in selection]
        listed([want.model for want in wants], MAX_SWEEP_MODELS)
    seen: set[str] = set()
    for want in wants:
        key = want.model.model_dump_json()
        if key in seen:
            raise ServiceError(
                422, "duplicate_candidates", f"model {reference_of(want.model)} is listed more than once"
            )
        seen.add(key)
    try:
        return [Wanted(want.model, want.name, check_tags({**body.tags, **want.tags})) for want in wants]
    except BadLabel as exc:
        raise ServiceError(422, "bad_label", f"a model's tags with the sweep's: {exc}") from None


def create(
    session: Session, settings: Settings, body: SweepRequest, project_id: int | None = None
) -> SweepOut:
    """Admit every model, then write the sweep and one job per model in project ``project_id`` (None:
    the default project; each run joins it, ``jobs.create``), and publish its first jobs. The sweep
    itself is in that project alone, whatever projects the jobs and runs it joined are in."""
    rule = triage_rule(body.rule)
    scoring = ScoringPlan(body.dataset, body.sampling, body.protocol)
    wants = expand(body)
    prepared = []
    for position, want in enumerate(wants):
        try:
            prepared.append(job_service.prepare(session, settings, job_request(want, scoring)))
        except ZooError as exc:
            raise type(exc)(f"model {position} ({reference_of(want.model)}): {exc.message}") from None
    selection = body.models
    if project_id is None:
        project_id = project_queries.project_named(session, DEFAULT_PROJECT).id
    sweep = Sweep(
        name=body.name,
        tags=dict(body.tags),
        selection=(
            selection.model_dump(mode="json")
            if isinstance(selection, PresetSelection | TimmSelection)
            else {"models": [want.model.model_dump(mode="json") for want in wants]}
        ),
        dataset=body.dataset.model_dump(mode="json"),
        sampling=body.sampling.model_dump(mode="json"),
        protocol=body.protocol,
        rule=rule.name,
        project_id=project_id,
    )
    session.add(sweep)
    session.commit()
    for position, (want, ready) in enumerate(zip(wants, prepared, strict=True)):
        submitted = job_service.create(session, settings, ready, sweep_id=sweep.id, project_id=project_id)
        session.add(
            SweepMember(
                sweep_id=sweep.id,
                position=position,
                model=want.model.model_dump(mode="json"),
                label=want.name,
                job_id=submitted.job.id if submitted.job is not None else None,
                run_id=submitted.run.id if submitted.run is not None else None,
            )
        )
        session.commit()
    publish_next(settings, sweep.id)
    return find(session, sweep.id)


def member_status(row: MemberRow) -> str:
    """``held`` for a job its sweep has not published yet, else the job's status; a stored run is
    ``succeeded``, a member whose job was deleted ``missing``."""
    job = row.job
    if job is None:
        return JobStatus.succeeded.value if row.member.run_id is not None else "missing"
    if job.status == JobStatus.queued.value and job.sweep_id is not None and job.published_at is None:
        return "held"
    return job.status


def job_fraction(status: str, stage: str | None, done: int, total: int) -> float:
    """How far one model is (module docstring): 0 held or queued, 1 final, else through its stages; a
    job queued for its marker task (features extracted) is as far as the start of ``markers``."""
    if status in FINAL or status == "missing":
        return 1.0
    if status == JobStatus.queued.value and stage == EXTRACTED:  # between the gpu and the cpu task
        return STAGES.index("markers") / len(STAGES)
    if status != JobStatus.running.value or stage not in STAGES:
        return 0.0
    within = min(max(done / total, 0.0), 1.0) if total > 0 else 0.0
    return (STAGES.index(stage) + within) / len(STAGES)


def progress(rows: Sequence[MemberRow]) -> SweepProgress:
    statuses = [member_status(row) for row in rows]
    fractions = [
        job_fraction(status, row.job.stage, row.job.done, row.job.total)
        if row.job is not None
        else job_fraction(status, None, 0, 0)
        for status, row in zip(statuses, rows, strict=True)
    ]
    return SweepProgress(
        total=len(rows),
        counts=dict(Counter(statuses)),
        finished=sum(status not in ACTIVE for status in statuses),
        fraction=sum(fractions) / len(fractions) if fractions else 1.0,
    )


def _status(sweep: Sweep, rows: Sequence[MemberRow]) -> str:
    if sweep.cancelled_at is not None:
        return "cancelled"
    return "running" if any(member_status(row) in ACTIVE for row in rows) else "finished"


def _summary(sweep: Sweep, rows: Sequence[MemberRow]) -> SweepSummary:
    return SweepSummary(
        id=sweep.id,
        name=sweep.name,
        tags=dict(sweep.tags),
        rule=sweep.rule,
        status=_status(sweep, rows),  # type: ignore[arg-type]
        progress=progress(rows),
        created_at=sweep.created_at,
        cancelled_at=sweep.cancelled_at,
    )


def _run_id(row: MemberRow) -> uuid.UUID | None:
    if row.job is not None:
        return row.job.run_id if row.job.status == JobStatus.succeeded.value else None
    return row.member.run_id


def _ranking(session: Session, sweep: Sweep, rows: Sequence[MemberRow]) -> RankingOut | None:
    """The finished runs ranked, once no model is left to run (None before, or with no run)."""
    if any(member_status(row) in ACTIVE for row in rows):
        return None
    run_ids = {str(row.member.position): run_id for row in rows if (run_id := _run_id(row)) is not None}
    runs = runs_by_id(session, set(run_ids.values()))
    found = {key: runs[run_id] for key, run_id in run_ids.items() if run_id in runs}
    if not found:
        return None
    models = {
        str(row.member.position): Wanted(validate_model_ref(row.member.model), row.member.label)
        for row in rows
        if str(row.member.position) in found
    }
    gathered = Gathered(found, [], markers_of(session, [run.id for run in found.values()]))
    return ranked(session, triage_rule(sweep.rule), sweep.protocol, models, gathered)


def _out(session: Session, sweep: Sweep, rows: Sequence[MemberRow]) -> SweepOut:
    members = [
        SweepMemberOut(
            position=row.member.position,
            label=row.member.label,
            model=dict(row.member.model),
            status=member_status(row),  # type: ignore[arg-type]
            job=JobOut.model_validate(row.job) if row.job is not None else None,
            run_id=_run_id(row),
        )
        for row in rows
    ]
    return SweepOut(
        **_summary(sweep, rows).model_dump(),
        selection=dict(sweep.selection),
        dataset=dict(sweep.dataset),
        sampling=dict(sweep.sampling),
        protocol=sweep.protocol.to_dict(),
        jobs=members,
        ranking=_ranking(session, sweep, rows),
    )


def _find_row(session: Session, sweep_id: uuid.UUID) -> Sweep:
    sweep = sweep_by_id(session, sweep_id)
    if sweep is None:
        raise ServiceError(404, "sweep_not_found", f"no sweep {sweep_id}")
    return sweep


def check_visible(session: Session, caller: Caller | None, sweep_id: uuid.UUID) -> None:
    """403 when ``caller``'s key is limited to projects none of which is the sweep's (the one it was
    created in, ``app.db.sweep_queries``), as for a job or a run of another project."""
    ids = project_service.visible_project_ids(session, caller, None)
    if ids is not None and caller is not None and not sweep_in_projects(session, sweep_id, ids):
        raise ServiceError(
            403,
            "forbidden",
            f"sweep {sweep_id} is in none of the projects the API key {caller.name!r} may use",
        )


def find(session: Session, sweep_id: uuid.UUID) -> SweepOut:
    """The sweep with its progress, its jobs and (at the end) its ranking; 404 ``sweep_not_found``."""
    sweep = _find_row(session, sweep_id)
    return _out(session, sweep, members_of(session, [sweep.id])[sweep.id])


def cancel(session: Session, settings: Settings, sweep_id: uuid.UUID) -> SweepOut:
    """Cancel the sweep's own jobs still held, queued or running (jobs of other requests it joined are
    theirs and go on); 409 ``sweep_finished`` when none is left."""
    sweep = _find_row(session, sweep_id)
    own = own_active_jobs(session, sweep.id)
    cancelled = [job_id for job_id in own if job_lifecycle.cancel(session, job_id).moved]
    if not cancelled:
        session.rollback()
        raise ServiceError(409, "sweep_finished", f"sweep {sweep_id} has no job left to cancel")
    sweep.cancelled_at = datetime.now(UTC)
    session.commit()
    for job_id in cancelled:
        revoke(settings, str(job_id))
    session.expire_all()
    return find(session, sweep.id)


def sweep_page(
    session: Session, limit: int, after: PageKey | None, projects: tuple[int, ...] | None = None
) -> tuple[list[SweepSummary], PageKey | None]:
    """One page of sweeps (of these projects, when given; None: every project) with their progress,
    newest first, and where the next begins."""
    rows, next_key = list_sweeps(session, limit=limit, after=after, projects=projects)
    members = members_of(session, [sweep.id for sweep in rows])
    return [_summary(sweep, members[sweep.id]) for sweep in rows], next_key
