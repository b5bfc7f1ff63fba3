"""The tables: uploaded checkpoints, jobs, runs and their markers and tags, API keys, page sessions,
projects (with their runs) and baseline aliases (with their history).

Markers are one row per (run, name) rather than a JSON blob so that the history can be filtered and
sorted by any marker with an index. A run is identified by its run key (weights content hash, dataset
fingerprint, sampling, protocol, the model reference's options such as preprocessing and label space:
``app.db.run_key``), which is unique: the same question is never answered twice.
"""

from __future__ import annotations

import enum
import uuid
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import (
    Boolean,
    CheckConstraint,
    Float,
    ForeignKey,
    Index,
    String,
    Text,
    UniqueConstraint,
    text,
    true,
)
from sqlalchemy.orm import Mapped, mapped_column, relationship

from zootriage.app.db.base import Base, BigId, JsonDoc, UtcDateTime
from zootriage.app.labels import NAME_CHARS, TAG_KEY_CHARS, TAG_VALUE_CHARS
from zootriage.app.project_names import DEFAULT_PROJECT, SLUG_CHARS
from zootriage.core.protocol import Protocol


def utcnow() -> datetime:
    return datetime.now(UTC)


def default_project_id(context: Any) -> int:
    """The id of the ``default`` project (made here when missing), for a job or gate inserted without
    one: whatever names no project lands in the default project, as every row did before projects."""
    conn = context.connection
    find = text(f"SELECT id FROM projects WHERE name = '{DEFAULT_PROJECT}'")
    found = conn.execute(find).scalar()
    if found is None:
        conn.execute(
            text(
                "INSERT INTO projects (name, description, created_at) VALUES (:name, :about, :now) "
                "ON CONFLICT (name) DO NOTHING"
            ),
            {"name": DEFAULT_PROJECT, "about": "what was asked without naming a project", "now": utcnow()},
        )
        found = conn.execute(find).scalar_one()
    return int(found)


class JobStatus(enum.StrEnum):
    queued = "queued"
    running = "running"
    succeeded = "succeeded"
    failed = "failed"
    cancelled = "cancelled"


ACTIVE_STATUSES = (JobStatus.queued, JobStatus.running)
_STATUS_VALUES = ", ".join(f"'{s.value}'" for s in JobStatus)
_ACTIVE_VALUES = ", ".join(f"'{s.value}'" for s in ACTIVE_STATUSES)
Timestamp = UtcDateTime()


class Checkpoint(Base):
    """An uploaded weights file, stored under its sha256, which is also its public id."""

    __tablename__ = "checkpoints"
    __table_args__ = (Index("ix_checkpoints_created_at_sha256", "created_at", "sha256"),)  # the uploads list

    sha256: Mapped[str] = mapped_column(String(64), primary_key=True)
    size_bytes: Mapped[int] = mapped_column(BigId)
    format: Mapped[str] = mapped_column(String(32))
    library: Mapped[str | None] = mapped_column(String(32))
    architecture: Mapped[str | None] = mapped_column(String(128))
    filename: Mapped[str | None] = mapped_column(String(255))
    name: Mapped[str | None] = mapped_column(String(NAME_CHARS))
    tags: Mapped[dict[str, Any]] = mapped_column(default=dict, server_default=text("'{}'"))
    # Given at upload; a job on this checkpoint that gives none uses these (``app.services.inherit``).
    preprocess: Mapped[dict[str, Any] | None]
    label_space: Mapped[str | None] = mapped_column(String(64))
    created_at: Mapped[datetime] = mapped_column(Timestamp, default=utcnow)


class Run(Base):
    """One computed answer: the markers of some weights on some data under one protocol."""

    __tablename__ = "runs"
    __table_args__ = (Index("ix_runs_created_at_id", "created_at", "id"),)

    id: Mapped[uuid.UUID] = mapped_column(primary_key=True, default=uuid.uuid4)
    run_key: Mapped[str] = mapped_column(String(64), unique=True)
    # The request key of the job that computed it: how the API finds a run without opening anything.
    request_key: Mapped[str | None] = mapped_column(String(64), index=True)
    model_ref: Mapped[dict[str, Any]]
    name: Mapped[str | None] = mapped_column(String(NAME_CHARS), index=True)
    architecture: Mapped[str | None] = mapped_column(String(128), index=True)
    weights_sha256: Mapped[str] = mapped_column(String(64), index=True)
    dataset_ref: Mapped[dict[str, Any]]
    dataset_fingerprint: Mapped[str] = mapped_column(String(64), index=True)
    sampling: Mapped[dict[str, Any]]
    protocol: Mapped[Protocol]
    model_meta: Mapped[dict[str, Any]]
    code_version: Mapped[str] = mapped_column(String(64))
    device: Mapped[str] = mapped_column(String(32))
    n_images: Mapped[int]
    timings: Mapped[dict[str, Any]]
    created_at: Mapped[datetime] = mapped_column(Timestamp, default=utcnow)
    # A free text about the run, editable like its name (``app.labels.DESCRIPTION_CHARS`` at most).
    description: Mapped[str | None] = mapped_column(Text)
    # Set: hidden from listings, rankings from stored runs, recommendations and trends; still found by id.
    archived_at: Mapped[datetime | None] = mapped_column(Timestamp, index=True)

    markers: Mapped[list[Marker]] = relationship(
        back_populates="run", cascade="all, delete-orphan", order_by="Marker.name", lazy="raise"
    )
    tags: Mapped[list[RunTag]] = relationship(
        back_populates="run", cascade="all, delete-orphan", order_by="RunTag.key", lazy="selectin"
    )

    @property
    def tag_map(self) -> dict[str, str]:
        return {tag.key: tag.value for tag in self.tags}


class RunTag(Base):
    """One ``key=value`` label of a run; the (key, value, run_id) index answers a tag filter."""

    __tablename__ = "run_tags"
    __table_args__ = (
        UniqueConstraint("run_id", "key", name="uq_run_tags_run_id_key"),
        Index("ix_run_tags_key_value_run_id", "key", "value", "run_id"),
    )

    id: Mapped[int] = mapped_column(BigId, primary_key=True, autoincrement=True)
    run_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("runs.id", ondelete="CASCADE"))
    key: Mapped[str] = mapped_column(String(TAG_KEY_CHARS))
    value: Mapped[str] = mapped_column(String(TAG_VALUE_CHARS))

    run: Mapped[Run] = relationship(back_populates="tags")


class Marker(Base):
    __tablename__ = "markers"
    __table_args__ = (
        UniqueConstraint("run_id", "name", name="uq_markers_run_id_name"),
        Index("ix_markers_name_value_run_id", "name", "value", "run_id"),
    )

    id: Mapped[int] = mapped_column(BigId, primary_key=True, autoincrement=True)
    run_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("runs.id", ondelete="CASCADE"))
    name: Mapped[str] = mapped_column(String(64))
    value: Mapped[float | None] = mapped_column(Float)
    std: Mapped[float | None] = mapped_column(Float)
    applicable: Mapped[bool] = mapped_column(Boolean, default=True)
    reason: Mapped[str | None] = mapped_column(Text)
    # False: the value is shown but may not decide (a degenerate GLUE regime; ``reason`` says why).
    decidable: Mapped[bool] = mapped_column(Boolean, default=True, server_default=true())
    version: Mapped[str] = mapped_column(String(32))

    run: Mapped[Run] = relationship(back_populates="markers")


class Job(Base):
    """A request to compute a run; its row is the single source of truth for status and progress.

    ``request_key`` hashes the normalised request (``app.db.run_key.request_key``) and is known at
    submit; ``run_key`` hashes content (weights sha256, dataset fingerprint) and is filled in by the
    worker, which computes that content identity. At most one queued or running job exists per request
    key (a partial unique index), which is what makes concurrent identical posts collapse into one job.
    """

    __tablename__ = "jobs"
    __table_args__ = (
        CheckConstraint(f"status IN ({_STATUS_VALUES})", name="status"),
        Index(
            "uq_jobs_active_request_key",
            "request_key",
            unique=True,
            postgresql_where=text(f"status IN ({_ACTIVE_VALUES})"),
            sqlite_where=text(f"status IN ({_ACTIVE_VALUES})"),
        ),
        Index("ix_jobs_created_at_id", "created_at", "id"),  # the jobs list, newest first
    )

    id: Mapped[uuid.UUID] = mapped_column(primary_key=True, default=uuid.uuid4)
    status: Mapped[str] = mapped_column(String(16), default=JobStatus.queued.value, index=True)
    request_key: Mapped[str] = mapped_column(String(64), index=True)
    run_key: Mapped[str | None] = mapped_column(String(64), index=True)
    request: Mapped[dict[str, Any]]
    # The name and tags the run will carry: the job's own, else its checkpoint's (set at submit).
    name: Mapped[str | None] = mapped_column(String(NAME_CHARS))
    tags: Mapped[dict[str, Any]] = mapped_column(default=dict, server_default=text("'{}'"))
    idempotency_key: Mapped[str | None] = mapped_column(String(255), unique=True)
    request_hash: Mapped[str] = mapped_column(String(64))
    stage: Mapped[str | None] = mapped_column(String(32))
    done: Mapped[int] = mapped_column(default=0)
    total: Mapped[int] = mapped_column(default=0)
    error_code: Mapped[str | None] = mapped_column(String(64))
    error_message: Mapped[str | None] = mapped_column(Text)
    attempts: Mapped[int] = mapped_column(default=0)
    run_id: Mapped[uuid.UUID | None] = mapped_column(ForeignKey("runs.id", ondelete="SET NULL"))
    created_at: Mapped[datetime] = mapped_column(Timestamp, default=utcnow)
    started_at: Mapped[datetime | None] = mapped_column(Timestamp)
    # Running: the worker's last sign of life. Queued: when the task was last published. The reaper
    # (app/services/reaper.py) reads it to find jobs whose worker or message was lost.
    heartbeat_at: Mapped[datetime | None] = mapped_column(Timestamp)
    # Running: the delivery that claimed it (``worker.claims.ClaimToken``), so that the same message
    # handed out again while that claim still lives is dropped instead of run twice.
    claimed_by: Mapped[str | None] = mapped_column(String(255))
    # How many times a stage of the job was published; each message carries the number it went out
    # under and only the latest may claim the job (app/queue.py), so a stale copy is dropped.
    publication: Mapped[int] = mapped_column(default=0, server_default=text("0"))
    finished_at: Mapped[datetime | None] = mapped_column(Timestamp)
    duration_s: Mapped[float | None] = mapped_column(Float)
    # The extraction stage's record (``core.scoring.Extracted`` + the worker that made it), set when a
    # GPU worker hands the job to the marker stage: any CPU worker resumes from it (worker/runner.py).
    features: Mapped[dict[str, Any] | None]
    # hash(model, dataset, sampling) of a request on immutable data (``app.db.run_key.extraction_key``):
    # a new job with the key of an extracted one starts at the marker stage.
    extraction_key: Mapped[str | None] = mapped_column(String(64), index=True)
    # The sweep that created it (its in-flight limit governs when the task is published), and when the
    # task was first published: None while a sweep holds the job back (``app.services.sweep_queue``).
    sweep_id: Mapped[uuid.UUID | None] = mapped_column(
        ForeignKey("sweeps.id", ondelete="SET NULL"), index=True
    )
    published_at: Mapped[datetime | None] = mapped_column(Timestamp)
    # The project it was asked in; the run it produces or reuses joins that project (``ProjectRun``).
    project_id: Mapped[int] = mapped_column(
        BigId, ForeignKey("projects.id"), index=True, default=default_project_id
    )


class Sweep(Base):
    """One request scoring many models on one dataset, sampling and protocol: one job per model, of
    which at most ``settings.sweep_in_flight`` are published at a time; the ranking is computed when
    every job has finished. Status and progress are read from the jobs, never stored twice."""

    __tablename__ = "sweeps"
    __table_args__ = (Index("ix_sweeps_created_at_id", "created_at", "id"),)

    id: Mapped[uuid.UUID] = mapped_column(primary_key=True, default=uuid.uuid4)
    name: Mapped[str | None] = mapped_column(String(NAME_CHARS))
    tags: Mapped[dict[str, Any]] = mapped_column(default=dict, server_default=text("'{}'"))
    # How the models were asked for: {"models": [...]}, {"preset": "v1v2"} or {"timm_filter": "..."}.
    selection: Mapped[dict[str, Any]]
    dataset: Mapped[dict[str, Any]]
    sampling: Mapped[dict[str, Any]]
    protocol: Mapped[Protocol]
    rule: Mapped[str] = mapped_column(String(64))
    created_at: Mapped[datetime] = mapped_column(Timestamp, default=utcnow)
    cancelled_at: Mapped[datetime | None] = mapped_column(Timestamp)
    # The project it was created in, and the only one it is in: its members' jobs and runs may be in
    # others (a model answered by a stored run or an active job it joined), which never see it.
    project_id: Mapped[int] = mapped_column(
        BigId, ForeignKey("projects.id"), index=True, default=default_project_id
    )

    members: Mapped[list[SweepMember]] = relationship(
        back_populates="sweep", cascade="all, delete-orphan", order_by="SweepMember.position", lazy="raise"
    )


class SweepMember(Base):
    """One model of a sweep, in the order given: the job computing it (the sweep's own, or an identical
    active job it joined), or the run already stored for it when the sweep was created."""

    __tablename__ = "sweep_members"

    sweep_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("sweeps.id", ondelete="CASCADE"), primary_key=True)
    position: Mapped[int] = mapped_column(primary_key=True)
    model: Mapped[dict[str, Any]]
    label: Mapped[str | None] = mapped_column(String(NAME_CHARS))
    job_id: Mapped[uuid.UUID | None] = mapped_column(ForeignKey("jobs.id", ondelete="SET NULL"), index=True)
    run_id: Mapped[uuid.UUID | None] = mapped_column(ForeignKey("runs.id", ondelete="SET NULL"))

    sweep: Mapped[Sweep] = relationship(back_populates="members")


class ApiKey(Base):
    """A credential with scopes; only its sha256 is stored, the key itself is shown once at creation.

    A revoked key keeps its row (``revoked_at`` set) so that the listing still shows who had access.
    """

    __tablename__ = "api_keys"

    id: Mapped[int] = mapped_column(BigId, primary_key=True, autoincrement=True)
    name: Mapped[str] = mapped_column(String(128))
    key_hash: Mapped[str] = mapped_column(String(64), unique=True)
    scopes: Mapped[list[str]] = mapped_column(JsonDoc)
    created_at: Mapped[datetime] = mapped_column(Timestamp, default=utcnow)
    last_used_at: Mapped[datetime | None] = mapped_column(Timestamp)
    revoked_at: Mapped[datetime | None] = mapped_column(Timestamp)
    # The project names the key may see and write; None: every project.
    projects: Mapped[list[str] | None] = mapped_column(JsonDoc)


class Gate(Base):
    """A CI gate decision: a candidate run checked against a baseline run by rules, kept for audit.

    The runs are referenced with ``SET NULL`` so that pruning old runs never deletes a decision; the
    values each rule compared are in ``outcomes``, so the record stays readable without them.
    """

    __tablename__ = "gates"
    __table_args__ = (Index("ix_gates_created_at_id", "created_at", "id"),)

    id: Mapped[uuid.UUID] = mapped_column(primary_key=True, default=uuid.uuid4)
    candidate_run_id: Mapped[uuid.UUID | None] = mapped_column(ForeignKey("runs.id", ondelete="SET NULL"))
    baseline_run_id: Mapped[uuid.UUID | None] = mapped_column(ForeignKey("runs.id", ondelete="SET NULL"))
    # How each side was called when the gate decided (``app.labels``): readable after its run is gone.
    candidate_label: Mapped[str | None] = mapped_column(String(255))
    baseline_label: Mapped[str | None] = mapped_column(String(255))
    candidate: Mapped[dict[str, Any]]
    baseline: Mapped[dict[str, Any]]
    dataset: Mapped[dict[str, Any]]
    rules: Mapped[list[str]] = mapped_column(JsonDoc)
    outcomes: Mapped[list[dict[str, Any]]] = mapped_column(JsonDoc)
    passed: Mapped[bool] = mapped_column(Boolean, index=True)
    # passed, failed or inconclusive (no rule failed, but one could not decide beyond the noise).
    status: Mapped[str] = mapped_column(String(16))
    created_at: Mapped[datetime] = mapped_column(Timestamp, default=utcnow)
    project_id: Mapped[int] = mapped_column(
        BigId, ForeignKey("projects.id"), index=True, default=default_project_id
    )
    # The alias the baseline was named by (``alias:NAME``); ``baseline_run_id`` is the run it pointed to.
    baseline_alias: Mapped[str | None] = mapped_column(String(SLUG_CHARS))

    project: Mapped[Project] = relationship(lazy="joined")

    @property
    def project_name(self) -> str:
        return self.project.name


class PageSession(Base):
    """A login of the web pages (``app.ui.session``): the browser holds a random token, this row its
    sha256 (a database leak opens no session), the sha256 of the API key it was opened with (whose
    revocation ends it) and when it ends. Logging out deletes the row, so a copied cookie dies with it.
    """

    __tablename__ = "page_sessions"

    token_hash: Mapped[str] = mapped_column(String(64), primary_key=True)
    key_hash: Mapped[str] = mapped_column(String(64), index=True)
    created_at: Mapped[datetime] = mapped_column(Timestamp, default=utcnow)
    expires_at: Mapped[datetime] = mapped_column(Timestamp, index=True)


class Project(Base):
    """A namespace for jobs, gates and aliases, like an experiment; ``default`` holds whatever was
    asked without naming one (``app.project_names.DEFAULT_PROJECT``)."""

    __tablename__ = "projects"

    id: Mapped[int] = mapped_column(BigId, primary_key=True, autoincrement=True)
    name: Mapped[str] = mapped_column(String(SLUG_CHARS), unique=True)
    description: Mapped[str | None] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(Timestamp, default=utcnow)


class ProjectRun(Base):
    """A run's membership of a project. A run is stored once (its run key is unique across users), so
    it belongs to every project in which a job produced or reused it; ``created_at`` is when it joined."""

    __tablename__ = "project_runs"

    project_id: Mapped[int] = mapped_column(
        BigId, ForeignKey("projects.id", ondelete="CASCADE"), primary_key=True
    )
    run_id: Mapped[uuid.UUID] = mapped_column(
        ForeignKey("runs.id", ondelete="CASCADE"), primary_key=True, index=True
    )
    created_at: Mapped[datetime] = mapped_column(Timestamp, default=utcnow)


class ProjectJob(Base):
    """A project that asked for a job of another project while it was active (the same request is
    never queued twice): the run the job produces joins this project too (``app.db.project_queries``)."""

    __tablename__ = "project_jobs"

    project_id: Mapped[int] = mapped_column(
        BigId, ForeignKey("projects.id", ondelete="CASCADE"), primary_key=True
    )
    job_id: Mapped[uuid.UUID] = mapped_column(
        ForeignKey("jobs.id", ondelete="CASCADE"), primary_key=True, index=True
    )


class Alias(Base):
    """A name for a run within a project (``production``, ``baseline``), moved by ``alias set``; a gate
    against ``alias:NAME`` compares with the run it points to when the gate is asked. ``run_id`` is
    None only when that run was deleted since."""

    __tablename__ = "aliases"
    __table_args__ = (UniqueConstraint("project_id", "name", name="uq_aliases_project_id_name"),)

    id: Mapped[int] = mapped_column(BigId, primary_key=True, autoincrement=True)
    project_id: Mapped[int] = mapped_column(BigId, ForeignKey("projects.id", ondelete="CASCADE"))
    name: Mapped[str] = mapped_column(String(SLUG_CHARS))
    run_id: Mapped[uuid.UUID | None] = mapped_column(ForeignKey("runs.id", ondelete="SET NULL"))
    created_at: Mapped[datetime] = mapped_column(Timestamp, default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(Timestamp, default=utcnow)


class AliasEvent(Base):
    """One move of an alias, for audit: from which run to which, by which key, when. The run ids are
    plain values (no foreign key) so that the history still says what happened after a run is gone."""

    __tablename__ = "alias_events"
    __table_args__ = (Index("ix_alias_events_alias_id_created_at_id", "alias_id", "created_at", "id"),)

    id: Mapped[int] = mapped_column(BigId, primary_key=True, autoincrement=True)
    alias_id: Mapped[int] = mapped_column(BigId, ForeignKey("aliases.id", ondelete="CASCADE"))
    from_run_id: Mapped[uuid.UUID | None]
    to_run_id: Mapped[uuid.UUID]
    # The key's name and id (None for a key given by hash in the settings, or no key on an open server).
    actor: Mapped[str | None] = mapped_column(String(128))
    actor_key_id: Mapped[int | None] = mapped_column(BigId)
    created_at: Mapped[datetime] = mapped_column(Timestamp, default=utcnow)
