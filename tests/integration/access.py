"""Access helpers: a stored API key, and an in-process client of an app with changed settings."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from fastapi.testclient import TestClient

from zootriage.app.api_keys import Scope, create_api_key
from zootriage.app.db.session import session_scope
from zootriage.app.main import create_app
from zootriage.app.settings import Settings

PUBLIC = {"host": "0.0.0.0"}  # a non-loopback bind: the policy that needs keys


def stored_key(database_url: str, *scopes: Scope, name: str = "test") -> str:
    with session_scope(database_url) as session:
        return create_api_key(session, name, frozenset(scopes)).key


@contextmanager
def app_client(settings: Settings, **changes: object) -> Iterator[TestClient]:
    with TestClient(create_app(settings.model_copy(update=changes)), raise_server_exceptions=False) as client:
        yield client
