"""Access helpers: a stored API key, an in-process client of an app with changed settings, and a
public server of a test's own."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from tests.integration.databases import migrate, scratch_database
from zootriage.app.api_keys import Scope, create_api_key
from zootriage.app.db.session import session_scope
from zootriage.app.main import create_app
from zootriage.app.services import jobs as job_service
from zootriage.app.services import sweep_queue
from zootriage.app.settings import Settings

PUBLIC = {"host": "0.0.0.0"}  # a non-loopback bind: the policy that needs keys


def stored_key(database_url: str, *scopes: Scope, name: str = "test") -> str:
    with session_scope(database_url) as session:
        return create_api_key(session, name, frozenset(scopes)).key


@contextmanager
def app_client(settings: Settings, **changes: object) -> Iterator[TestClient]:
    with TestClient(create_app(settings.model_copy(update=changes)), raise_server_exceptions=False) as client:
        yield client


@contextmanager
def public_server(
    settings: Settings, monkeypatch: pytest.MonkeyPatch, torch_home: Path
) -> Iterator[Settings]:
    """Settings of a public server (keys needed) on a database of the test alone; nothing reaches a
    broker (jobs and sweeps record their publishing instead of sending it), and TORCH_HOME is
    ``torch_home``, empty but for what the test puts there."""
    monkeypatch.setattr(sweep_queue, "enqueue_score", lambda *_args, **_kw: None)
    monkeypatch.setattr(job_service, "enqueue_score", lambda *_args, **_kw: None)
    monkeypatch.setenv("TORCH_HOME", str(torch_home))
    with scratch_database() as url:
        migrate(url)
        yield settings.model_copy(update={"database_url": url, "reaper_interval_s": 3600, **PUBLIC})
