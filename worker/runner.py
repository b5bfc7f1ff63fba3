"""One job, end to end: claim the row, score through core, store the run and its markers atomically.

Safe to run more than once for the same job (a redelivered message after a worker died, a retry):
a finished job is left alone, a run already stored for the same request is reused (immutable data only),
and the unique run key turns a duplicate insert into "link to the existing run". That is what makes
acks_late safe, and how a request the API could not match by its request key (a mutable folder, or
another spelling of the same content) ends up on the run its content identity names.
"""

from __future__ import annotations

import logging
import time
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime
from importlib.metadata import version as package_version
from pathlib import Path
from typing import Any

from sqlalchemy import select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from zootriage.app.db.models import ACTIVE_STATUSES, Checkpoint, Job, JobStatus, Marker, Run, RunTag
from zootriage.app.db.run_key import reusable_by_request, run_key
from zootriage.app.db.session import session_scope
from zootriage.app.references import local_model, parse_request
from zootriage.app.settings import Settings
from zootriage.app.storage import feature_cache
from zootriage.core.device import resolve_device
from zootriage.core.isolation import ChildLimits
from zootriage.core.markers import list_markers
from zootriage.core.scoring import EXTRACTION_VERSION, ScoreResult, score
from zootriage.core.zoo.loader import PROGRAM
from zootriage.worker.messages import public_message
from zootriage.worker.progress import ProgressWriter

log = logging.getLogger(__name__)
CODE_VERSION = f"zootriage {package_version('zootriage')} extraction v{EXTRACTION_VERSION}"


class JobNotVisible(Exception):
    """The task arrived before the API's transaction committed the job row: retry shortly."""


@dataclass(frozen=True)
class Claimed:
    job_id: uuid.UUID
    request_key: str
    request: dict[str, Any]
    started: float
    name: str | None = None
    tags: dict[str, str] = field(default_factory=dict)


def claim(settings: Settings, job_id: uuid.UUID) -> Claimed | None:
    """Move the job to running (counting the attempt); ``None`` when there is nothing left to do."""
    with session_scope(settings.effective_database_url) as session:
        job = session.get(Job, job_id, with_for_update=True)
        if job is None:
            raise JobNotVisible(str(job_id))
        if job.status not in [s.value for s in ACTIVE_STATUSES]:
            return None
        existing = None
        if reusable_by_request(job.request):
            existing = session.scalar(select(Run).where(Run.request_key == job.request_key).limit(1))
        now = datetime.now(UTC)
        if existing is not None:  # computed meanwhile by another job: nothing to recompute
            job.status, job.run_id, job.finished_at = JobStatus.succeeded.value, existing.id, now
            job.run_key = existing.run_key
            return None
        job.status = JobStatus.running.value
        job.started_at = job.started_at or now
        job.heartbeat_at = now
        job.attempts += 1
        job.error_code = job.error_message = None
        return Claimed(
            job.id, job.request_key, dict(job.request), time.monotonic(), job.name, dict(job.tags or {})
        )


def fail(settings: Settings, job_id: uuid.UUID, code: str, message: str) -> None:
    """Fail an active job; ``message`` is shown to anyone who can read the job, so it is made public
    (``worker.messages.public_message``): the details stay in the worker log."""
    log.info("job %s failed as %s: %s", job_id, code, message)
    with session_scope(settings.effective_database_url) as session:
        public = _users_file_names(session, job_id, public_message(message))
        session.execute(
            update(Job)
            .where(Job.id == job_id, Job.status.in_([s.value for s in ACTIVE_STATUSES]))
            .values(
                status=JobStatus.failed.value,
                error_code=code[:64],
                error_message=public,
                finished_at=datetime.now(UTC),
            )
        )


def _users_file_names(session: Session, job_id: uuid.UUID, message: str) -> str:
    """The message with the stored upload's name (``<sha256>.pt``) replaced by the name the user
    uploaded it under: the only file name they know."""
    job = session.get(Job, job_id)
    model = job.request.get("model", {}) if job is not None else {}
    if model.get("source") != "checkpoint":
        return message
    stored = Path(str(model.get("path", ""))).name
    row = session.get(Checkpoint, stored.partition(".")[0])
    if row is None or not row.filename or not stored:
        return message
    return message.replace(stored, row.filename)


def compute(settings: Settings, claimed: Claimed) -> ScoreResult:
    model, dataset, sampling, protocol = parse_request(claimed.request)
    progress = ProgressWriter(settings.effective_database_url, claimed.job_id)
    return score(
        local_model(model, settings.effective_upload_dir),
        dataset,
        sampling,
        protocol,
        device=resolve_device(None),
        progress=progress,
        cache=feature_cache(settings),
        data_roots=settings.effective_data_roots,
        child_limits=ChildLimits(wall_s=settings.job_time_limit_s),
        cancel=progress.cancelled,
    )


def _architecture(session: Session, result: ScoreResult) -> str:
    """What the run is described as: the model's own architecture, or for a program that names none,
    what its upload record says (the ``architecture`` given at upload)."""
    architecture = result.model.architecture
    if architecture == PROGRAM:
        row = session.get(Checkpoint, result.weights_sha256)
        architecture = (row.architecture if row is not None else None) or PROGRAM
    return architecture


def _run_row(claimed: Claimed, result: ScoreResult, architecture: str) -> Run:
    request = claimed.request
    key = run_key(result.weights_sha256, result.dataset_fingerprint, request["sampling"], request["protocol"])
    versions = {spec.name: spec.version for spec in list_markers()}
    return Run(
        run_key=key,
        request_key=claimed.request_key,
        model_ref=request["model"],
        name=claimed.name,
        tags=[RunTag(key=key, value=value) for key, value in sorted(claimed.tags.items())],
        architecture=architecture,
        weights_sha256=result.weights_sha256,
        dataset_ref=request["dataset"],
        dataset_fingerprint=result.dataset_fingerprint,
        sampling=request["sampling"],
        protocol=request["protocol"],
        model_meta={
            **result.model.to_dict(),
            "n_classes": result.n_classes,
            "feature_dim": result.feature_dim,
            "logits_match_labels": result.logits_match_labels,
            "features_cached": result.features_cached,
        },
        code_version=CODE_VERSION,
        device=str(result.device),
        n_images=result.n_images,
        timings=dict(result.timings),
        markers=[
            Marker(
                name=name,
                value=mv.value,
                std=mv.std,
                applicable=mv.applicable,
                reason=mv.reason,
                decidable=mv.decidable,
                version=str(versions.get(name, 1)),
            )
            for name, mv in result.markers.items()
        ],
    )


def store(settings: Settings, claimed: Claimed, result: ScoreResult) -> None:
    """The run, its markers and the job's success in one transaction; a duplicate run key links instead."""
    url = settings.effective_database_url
    finished = {"finished_at": datetime.now(UTC), "duration_s": time.monotonic() - claimed.started}
    done = {"status": JobStatus.succeeded.value, "stage": "done", **finished}
    active = [s.value for s in ACTIVE_STATUSES]
    try:
        with session_scope(url) as session:
            run = _run_row(claimed, result, _architecture(session, result))
            session.add(run)
            session.flush()
            session.execute(
                update(Job)
                .where(Job.id == claimed.job_id, Job.status.in_(active))
                .values(run_id=run.id, run_key=run.run_key, **done)
            )
    except IntegrityError:
        log.info("run %s was stored by another attempt; linking job %s to it", run.run_key, claimed.job_id)
        with session_scope(url) as session:
            existing = session.scalar(select(Run.id).where(Run.run_key == run.run_key))
            session.execute(
                update(Job)
                .where(Job.id == claimed.job_id, Job.status.in_(active))
                .values(run_id=existing, run_key=run.run_key, **done)
            )
