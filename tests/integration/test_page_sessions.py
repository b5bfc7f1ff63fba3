"""Page logins live on the server: the cookie holds a random token (never the key), logging out or
expiry or revoking the key ends the login, and a replayed cookie then opens nothing."""

from __future__ import annotations

from datetime import timedelta

from alembic import command
from fastapi.testclient import TestClient
from sqlalchemy import create_engine, inspect, select, update

from tests.integration.access import PUBLIC, app_client, stored_key
from tests.integration.databases import alembic_config, migrate, scratch_database
from zootriage.app.api_keys import Scope, hash_key, revoke_api_key
from zootriage.app.db.models import ApiKey, PageSession, utcnow
from zootriage.app.db.session import session_scope
from zootriage.app.settings import Settings


def _log_in(client: TestClient, key: str) -> str:
    """Log in through the form; the session cookie's value."""
    client.get("/login")
    form = {"key": key, "next": "/runs", "csrf": client.cookies["zt_csrf"]}
    answer = client.post("/login", data=form, follow_redirects=False)
    assert answer.status_code == 303, answer.text
    token = client.cookies.get("zt_session")
    assert token and key not in answer.headers["set-cookie"]
    return token


def _opens_runs(settings: Settings, cookies: dict[str, str]) -> bool:
    with app_client(settings, **PUBLIC) as other:  # another browser, replaying cookies
        other.cookies.update(cookies)
        answer = other.get("/runs", follow_redirects=False)
        assert answer.status_code in {200, 303}, answer.text
        return answer.status_code == 200


def _rows(database_url: str) -> list[PageSession]:
    with session_scope(database_url) as session:
        return list(session.scalars(select(PageSession)))


def test_the_cookie_holds_an_expiring_token_stored_as_its_hash(settings: Settings, clean_db: str) -> None:
    key = stored_key(clean_db, Scope.read)
    hours = 2.5
    with app_client(settings, **PUBLIC, page_session_hours=hours) as client:
        client.get("/login")
        form = {"key": key, "next": "/runs", "csrf": client.cookies["zt_csrf"]}
        cookie = client.post("/login", data=form, follow_redirects=False).headers["set-cookie"]
        assert f"Max-Age={int(hours * 3600)}" in cookie
        assert "HttpOnly" in cookie and "SameSite=strict" in cookie
        token = client.cookies["zt_session"]
        assert client.get("/runs").status_code == 200
    (row,) = _rows(clean_db)
    assert row.token_hash == hash_key(token) and row.key_hash == hash_key(key)
    assert timedelta(hours=hours - 0.1) < row.expires_at - utcnow() <= timedelta(hours=hours)


def test_a_cookie_replayed_after_logout_is_refused(settings: Settings, clean_db: str) -> None:
    key = stored_key(clean_db, Scope.read)
    with app_client(settings, **PUBLIC) as client:
        token = _log_in(client, key)
        assert _opens_runs(settings, {"zt_session": token})
        out = client.post("/logout", data={"csrf": client.cookies["zt_csrf"]}, follow_redirects=False)
        assert out.status_code == 303
    assert _rows(clean_db) == []
    assert not _opens_runs(settings, {"zt_session": token})


def test_an_expired_login_is_refused_and_removed(settings: Settings, clean_db: str) -> None:
    key = stored_key(clean_db, Scope.read)
    with app_client(settings, **PUBLIC) as client:
        token = _log_in(client, key)
    with session_scope(clean_db) as session:
        session.execute(update(PageSession).values(expires_at=utcnow() - timedelta(seconds=1)))
    with app_client(settings, **PUBLIC) as client:
        client.cookies.set("zt_session", token)
        refused = client.get("/runs", follow_redirects=False)
        assert refused.status_code == 303 and "login+has+ended" in refused.headers["location"]
    assert _rows(clean_db) == []


def test_revoking_the_key_ends_its_logins(settings: Settings, clean_db: str) -> None:
    key = stored_key(clean_db, Scope.read)
    with app_client(settings, **PUBLIC) as client:
        token = _log_in(client, key)
    stored_key(clean_db, Scope.read, name="other")  # a server off loopback needs one key to start
    with session_scope(clean_db) as session:
        revoke_api_key(session, session.scalars(select(ApiKey.id).where(ApiKey.name == "test")).one())
    assert not _opens_runs(settings, {"zt_session": token})


def test_the_raw_key_in_a_cookie_opens_no_page(settings: Settings, clean_db: str) -> None:
    key = stored_key(clean_db, Scope.read)
    assert not _opens_runs(settings, {"zt_key": key})
    assert not _opens_runs(settings, {"zt_session": key})
    assert not _opens_runs(settings, {"zt_session": hash_key(key)})


def test_the_migration_is_reversible() -> None:
    with scratch_database() as url:
        migrate(url)
        command.downgrade(alembic_config(url), "0011")
        engine = create_engine(url)
        assert "page_sessions" not in inspect(engine).get_table_names()
        migrate(url)
        assert "page_sessions" in inspect(engine).get_table_names()
        engine.dispose()
