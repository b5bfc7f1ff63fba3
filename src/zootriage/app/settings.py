"""Service configuration, read once from ``ZOOTRIAGE_*`` environment variables.

Every default points into one local state folder so that a fresh checkout runs with no servers
(SQLite and a filesystem broker); production sets the PostgreSQL and Redis URLs instead. The same
settings object is read by the API, the worker and the command line, so the three never disagree.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Annotated, Literal

from pydantic import Field, field_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

# ``auto``: open when the API is bound to loopback, a key required anywhere else.
AccessMode = Literal["auto", "open", "key"]


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="ZOOTRIAGE_", extra="ignore")

    # Where the API listens; ``serve`` and ``up`` bind here, and the access policy is decided by it.
    host: str = "127.0.0.1"
    port: int = Field(default=8000, ge=1, le=65535)

    state_dir: Path = Path("var")
    database_url: str | None = None
    broker_url: str | None = None
    data_roots: Annotated[list[Path], NoDecode] = Field(default_factory=list)
    upload_dir: Path | None = None
    cache_dir: Path | None = None
    # Where shared objects live (app.storage.open_store): unset keeps the feature cache in ``cache_dir``;
    # ``s3://bucket/prefix?endpoint=http://host:9000`` puts it in an object store every worker sees
    # (``cache_dir`` then holds only temporary downloads).
    storage_url: str | None = None
    upload_limit_bytes: int = 512 * 1024 * 1024
    # Every other request body (JSON): the largest legitimate one, a back-test of 5000 runs, is ~300 kB.
    body_limit_bytes: int = 1024 * 1024
    page_size_max: int = 200
    # Estimated single-core seconds of GLUE solving a job may ask for (core.glue_cost, docs/glue_cost.md):
    # ImageNet's 1000 classes at the paper's 50 points, n_t = 1000 and one repeat is about 10,300
    # (solver, regime check and geometry at the assumed 4096-wide features).
    glue_cost_budget: float = 12_000.0
    job_time_limit_s: int = 3600
    # The memory a job's sandboxed child may use (features, model, data loaders together), lowered at
    # each start to 80 % of what the host has free (core/memory_limit.py); over it the job fails
    # with resource_limit and the worker carries on.
    child_memory_bytes: int = Field(default=24 << 30, ge=64 << 20)
    # Extraction children each worker process keeps started ahead of its jobs (torch imported, no
    # untrusted byte seen; one job each): a job then skips the child's start. 0 turns it off.
    warm_children: int = Field(default=1, ge=0, le=8)
    # Redis redelivers a task whose worker died once this much time has passed without an ack; it
    # must exceed the longest job, or a slow job runs twice (harmlessly, but wastefully).
    broker_visibility_timeout_s: int = 7200
    broker_timeout_s: float = 2.0
    # Liveness of jobs (app/services/reaper.py): a running job's worker writes its heartbeat every
    # interval; without one for the grace period the job counts as lost and is requeued (up to
    # job_max_attempts claims) or failed. A queued job nobody claimed within queue_grace is
    # published again (its message may have died with a Redis restart); after queue_limit it fails.
    heartbeat_interval_s: float = 10.0
    heartbeat_grace_s: float = 60.0
    queue_grace_s: float = 300.0
    queue_limit_s: float = 86400.0
    reaper_interval_s: float = 15.0
    job_max_attempts: int = 3
    # The task's retry budget for a lost database or broker (exponential backoff, capped).
    job_max_retries: int = 10
    job_retry_backoff_max_s: int = 120
    gpus: int | None = None
    # The stage queues a ``zootriage worker`` consumes (app/queue.py): ``gpu`` (extraction) and ``cpu``
    # (markers). Both by default, so one worker does everything; a GPU host may take ``gpu`` only.
    worker_queues: Annotated[list[str], NoDecode] = Field(default_factory=lambda: ["gpu", "cpu"])
    # Jobs of one sweep published at a time (app/services/sweep_queue.py): the next is published when
    # one finishes, so a sweep never fills the queue ahead of other users' jobs.
    sweep_in_flight: int = Field(default=2, ge=1, le=64)
    # sha256 hashes of API keys given by the deployment (``zootriage create-api-key --no-store``), on
    # top of those the command stored in the database; never the keys themselves.
    api_key_hashes: Annotated[list[str], NoDecode] = Field(default_factory=list)
    # Who may read (history, exports, back-tests, recommendations) and write (jobs, uploads, rankings);
    # ``auto`` writes on loopback are open only until a key exists. /metrics follows ``metrics_access``.
    read_access: AccessMode = "auto"
    write_access: AccessMode = "auto"
    metrics_access: AccessMode = "auto"
    # How long a login of the web pages lasts (app/ui/session.py); logging out ends it sooner.
    page_session_hours: float = Field(default=12.0, gt=0, le=24 * 30)
    # Off loopback the server refuses to start with no key configured, unless this says it knowingly
    # may (e.g. behind a proxy that authenticates).
    allow_no_keys: bool = False
    # A request waits this long for a database slot before it is answered 503 + Retry-After.
    db_slot_wait_s: float = Field(default=2.0, gt=0, le=60)

    @field_validator("data_roots", mode="before")
    @classmethod
    def _split_roots(cls, value: object) -> object:
        """Accept ``a:b`` (like PATH) from the environment as well as a list."""
        if isinstance(value, str):
            return [part for part in value.split(":") if part]
        return value

    @field_validator("storage_url")
    @classmethod
    def _known_store(cls, value: str | None) -> str | None:
        """A storage URL of an unknown kind is refused here, when the service or worker starts."""
        if value:
            from zootriage.app.storage import check_storage_url  # app.storage imports these settings

            check_storage_url(value)
        return value

    @field_validator("worker_queues", mode="before")
    @classmethod
    def _split_queues(cls, value: object) -> object:
        """Accept ``gpu,cpu`` from the environment as well as a list."""
        if isinstance(value, str):
            return [part.strip() for part in value.split(",") if part.strip()]
        return value

    @field_validator("worker_queues")
    @classmethod
    def _known_queues(cls, value: list[str]) -> list[str]:
        unknown = sorted(set(value) - {"gpu", "cpu"})
        if unknown or not value:
            raise ValueError(f"worker queues are some of gpu, cpu (got {value})")
        return value

    @field_validator("api_key_hashes", mode="before")
    @classmethod
    def _split_hashes(cls, value: object) -> object:
        """Accept ``h1,h2`` from the environment as well as a list."""
        if isinstance(value, str):
            return [part.strip().lower() for part in value.split(",") if part.strip()]
        return value

    @property
    def effective_database_url(self) -> str:
        return self.database_url or f"sqlite:///{(self.state_dir / 'zootriage.db').resolve()}"

    @property
    def effective_broker_url(self) -> str:
        return self.broker_url or "filesystem://"

    @property
    def broker_folder(self) -> Path:
        """Where the embedded filesystem broker keeps its messages."""
        return (self.state_dir / "broker").resolve()

    @property
    def effective_upload_dir(self) -> Path:
        return (self.upload_dir or self.state_dir / "uploads").resolve()

    @property
    def effective_cache_dir(self) -> Path:
        return (self.cache_dir or self.state_dir / "cache").resolve()

    @property
    def effective_data_roots(self) -> list[Path]:
        return [root.resolve() for root in self.data_roots] or [(self.state_dir / "data").resolve()]


@lru_cache
def get_settings() -> Settings:
    return Settings()
