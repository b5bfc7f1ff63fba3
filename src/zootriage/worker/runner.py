"""One job in two stages: claim the row, extract (``gpu``) and hand over, or compute the markers from
the cached features (``cpu``) and store the run and its markers atomically.

Between the stages the job is queued again with ``stage = "extracted"`` and its extraction record
(``core.scoring.Extracted`` plus the worker that made it) in ``Job.features``: whichever CPU worker
claims it next reads the features from the shared cache, never the first worker's disk. That claim is
the same attempt; a claim after a lost stage (the reaper cleared the stage) is another one.

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

from sqlalchemy import select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from zootriage.app.db import job_lifecycle
from zootriage.app.db.job_lifecycle import EXTRACTED
from zootriage.app.db.models import Checkpoint, Job, JobStatus, Marker, Run, RunTag
from zootriage.app.db.run_key import reusable_by_request, run_key
from zootriage.app.db.session import session_scope
from zootriage.app.queue import EXTRACT_TASK, MARKERS_TASK, publish
from zootriage.app.references import local_model, parse_request
from zootriage.app.settings import Settings
from zootriage.app.storage import feature_cache, upload_store
from zootriage.core.device import resolve_device
from zootriage.core.markers import list_markers
from zootriage.core.scoring import (
    EXTRACTION_VERSION,
    Extracted,
    FeaturesMissing,
    ScoreResult,
    extract_features,
    score_cached,
)
from zootriage.core.zoo.loader import PROGRAM
from zootriage.worker.claims import ClaimToken, claim_lives
from zootriage.worker.messages import public_message
from zootriage.worker.progress import ProgressWriter
from zootriage.worker.warm import child_limits, children

log = logging.getLogger(__name__)
CODE_VERSION = f"zootriage {package_version('zootriage')} extraction v{EXTRACTION_VERSION}"


EXTRACT, MARKERS = "extract", "markers"


class JobNotVisible(Exception):
    """The task arrived before the API's transaction committed the job row: retry shortly."""


class SentBack(Exception):
    """The marker stage found no features in the cache: the job went back to extraction."""


@dataclass(frozen=True)
class Claimed:
    job_id: uuid.UUID
    request_key: str
    request: dict[str, Any]
    started: float
    name: str | None = None
    tags: dict[str, str] = field(default_factory=dict)
    stage: str = "extract"
    features: dict[str, Any] | None = None
    publication: int | None = None  # the job's publication this claim runs under (the fence)


def claim(
    settings: Settings,
    job_id: uuid.UUID,
    stage: str = EXTRACT,
    token: ClaimToken | None = None,
    publication: int | None = None,
) -> Claimed | None:
    """Move the job to running for ``stage``; ``None`` when there is nothing left to do, when the
    message is stale (``publication``, the number it was published under, is not the job's latest:
    ``app.db.job_lifecycle``), or when ``token`` is a second delivery of the message whose claim still runs
    (``worker.claims``). A message from before publication numbers (``None``) is taken as current.
    A markers claim right after the hand-over is the same attempt; any other claim counts one more."""
    with session_scope(settings.effective_database_url) as session:
        job = session.get(Job, job_id, with_for_update=True)
        if job is None:
            raise JobNotVisible(str(job_id))
        now = datetime.now(UTC)
        if token is not None and _duplicate_of_live_claim(settings, job, token, now):
            log.info("job %s: a second delivery of its running task, dropped", job_id)
            return None
        current = job.publication if publication is None else publication
        existing = None
        if reusable_by_request(job.request):
            existing = session.scalar(select(Run).where(Run.request_key == job.request_key).limit(1))
        if existing is not None:  # computed meanwhile by another job: nothing to recompute
            _dropped(job_lifecycle.finish(session, job_id, existing.id, existing.run_key, current), stage)
            return None
        handed_over = stage == MARKERS and job.stage == EXTRACTED
        claimed = Claimed(
            job.id,
            job.request_key,
            dict(job.request),
            time.monotonic(),
            job.name,
            dict(job.tags or {}),
            stage,
            dict(job.features) if job.features is not None else None,
            current,
        )
        # The progress starts over from what this task reports: the marker task from "markers" (the
        # features are extracted), the extraction task from nothing (its first report is "sample").
        progress = MARKERS if stage == MARKERS else None
        holder = token.encode() if token is not None else None
        moved = job_lifecycle.claim(session, job_id, current, progress, holder, same_attempt=handed_over)
        if not moved.moved:
            _dropped(moved, stage)
            return None
        return claimed


def _dropped(moved: job_lifecycle.Transition, stage: str) -> None:
    if moved.outcome is job_lifecycle.Outcome.STALE:
        log.info("a stale %s message (the job is at publication %s), dropped", stage, moved.publication)


def _duplicate_of_live_claim(settings: Settings, job: Job, token: ClaimToken, now: datetime) -> bool:
    if job.status != JobStatus.running.value:
        return False
    holder = ClaimToken.decode(job.claimed_by)
    if holder is None or not holder.same_delivery(token):
        return False
    return claim_lives(
        holder, job.heartbeat_at, now, settings.heartbeat_interval_s, settings.heartbeat_grace_s
    )


def fail(settings: Settings, job_id: uuid.UUID, code: str, message: str) -> None:
    """Fail an active job; ``message`` is shown to anyone who can read the job, so it is made public
    (``worker.messages.public_message``): the details stay in the worker log."""
    log.info("job %s failed as %s: %s", job_id, code, message)
    with session_scope(settings.effective_database_url) as session:
        public = _users_file_names(session, job_id, public_message(message))
        job_lifecycle.fail(session, job_id, code, public)


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


def extract(settings: Settings, claimed: Claimed) -> Extracted:
    """The GPU stage: the upload fetched from the store into a temporary local file (the isolated child
    loads it from there), the sample extracted, the features left in the shared feature cache."""
    model, dataset, sampling, _ = parse_request(claimed.request)
    progress = ProgressWriter(settings.effective_database_url, claimed.job_id)
    scratch = settings.effective_upload_dir
    with local_model(model, upload_store(settings), scratch) as local:
        return extract_features(
            local,
            dataset,
            sampling,
            cache=feature_cache(settings),
            device=resolve_device(None),
            progress=progress,
            data_roots=settings.effective_data_roots,
            child_limits=child_limits(settings),
            child=children(settings),
            cancel=progress.cancelled,
        )


def markers(settings: Settings, claimed: Claimed) -> ScoreResult:
    """The CPU stage: the markers of the features the job's extraction record names."""
    assert claimed.features is not None, "a markers claim carries the extraction record"
    _, _, _, protocol = parse_request(claimed.request)
    progress = ProgressWriter(settings.effective_database_url, claimed.job_id)
    try:
        return score_cached(
            Extracted.from_dict(claimed.features),
            protocol,
            cache=feature_cache(settings),
            device=resolve_device(None),
            progress=progress,
            cancel=progress.cancelled,
        )
    except FeaturesMissing:
        send_back(settings, claimed.job_id, claimed.publication)
        raise SentBack(str(claimed.job_id)) from None


def hand_over(settings: Settings, claimed: Claimed, extracted: Extracted, worker: str) -> None:
    """Queue the job for the marker stage with its extraction record, then publish that stage. A lost
    publish leaves the job queued: the reaper publishes it again (to ``cpu``: the features are cached)."""
    record = {**extracted.to_dict(), "worker": worker}
    with session_scope(settings.effective_database_url) as session:
        moved = job_lifecycle.hand_over(session, claimed.job_id, claimed.publication, record)
    if not moved.moved or moved.publication is None:
        log.info("job %s left the running state during extraction (%s)", claimed.job_id, moved.outcome)
        return
    try:
        publish(settings, MARKERS_TASK, str(claimed.job_id), moved.publication)
    except Exception as exc:
        log.warning("job %s: marker stage not published (%s); the reaper will", claimed.job_id, exc)


def send_back(settings: Settings, job_id: uuid.UUID, publication: int | None = None) -> None:
    """The cache lost the job's features (evicted, another store): extract them again."""
    with session_scope(settings.effective_database_url) as session:
        moved = job_lifecycle.send_back(session, job_id, publication)
    if not moved.moved or moved.publication is None:  # cancelled, failed or taken over meanwhile
        return
    log.warning("job %s: its features are not in the cache; extracting again", job_id)
    try:
        publish(settings, EXTRACT_TASK, str(job_id), moved.publication)
    except Exception as exc:
        log.warning("job %s: extraction not published (%s); the reaper will", job_id, exc)


def _architecture(session: Session, result: ScoreResult) -> str:
    """What the run is described as: the model's own architecture, or for a program that names none,
    what its upload record says (the ``architecture`` given at upload)."""
    architecture = result.model.architecture
    if architecture == PROGRAM:
        row = session.get(Checkpoint, result.weights_sha256)
        architecture = (row.architecture if row is not None else None) or PROGRAM
    return architecture


def _run_row(claimed: Claimed, result: ScoreResult, architecture: str, worker: str) -> Run:
    request = claimed.request
    key = run_key(
        result.weights_sha256,
        result.dataset_fingerprint,
        request["sampling"],
        request["protocol"],
        request["model"],
    )
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
            # Which worker did each stage (its Celery node name): extraction and markers may differ.
            "workers": {"extract": (claimed.features or {}).get("worker"), "markers": worker},
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


def store(settings: Settings, claimed: Claimed, result: ScoreResult, worker: str) -> None:
    """The run, its markers and the job's success in one transaction; a duplicate run key links instead."""
    url = settings.effective_database_url
    took = time.monotonic() - claimed.started
    try:
        with session_scope(url) as session:
            run = _run_row(claimed, result, _architecture(session, result), worker)
            session.add(run)
            session.flush()
            job_lifecycle.finish(session, claimed.job_id, run.id, run.run_key, duration_s=took)
    except IntegrityError:
        log.info("run %s was stored by another attempt; linking job %s to it", run.run_key, claimed.job_id)
        with session_scope(url) as session:
            existing = session.scalar(select(Run.id).where(Run.run_key == run.run_key))
            job_lifecycle.finish(session, claimed.job_id, existing, run.run_key, duration_s=took)
