"""The access policy and API keys against real PostgreSQL: scopes, revocation, the bind-address rule."""

from __future__ import annotations

import hmac
import os
import traceback
from collections.abc import Iterator
from unittest.mock import patch

import pytest
from click.testing import Result
from typer.testing import CliRunner

from tests.integration.access import PUBLIC, app_client, stored_key
from zootriage.app.access import UnsafeBind
from zootriage.app.api_keys import Scope, hash_key
from zootriage.app.cli import app as cli
from zootriage.app.main import create_app
from zootriage.app.settings import Settings, get_settings

pytestmark = pytest.mark.usefixtures("wide_consoles")

INVALID_JOB = {"model": {"source": "magic"}, "dataset": {"source": "builtin", "name": "mnist"}}


@pytest.fixture(autouse=True)
def fresh_settings() -> Iterator[None]:
    """The commands read ``get_settings()`` (cached): each test's environment is read afresh."""
    get_settings.cache_clear()
    yield
    get_settings.cache_clear()


def zootriage(database_url: str, *args: str, **settings: str) -> Result:
    """``zootriage ARGS`` in this process; its ZOOTRIAGE_ settings are the database and ``settings``.
    The environment is put back afterwards: ``serve`` exports its address for uvicorn's workers."""
    env: dict[str, str | None] = {key: None for key in os.environ if key.startswith("ZOOTRIAGE_")}
    env |= {"ZOOTRIAGE_DATABASE_URL": database_url, "COLUMNS": "200", **settings}
    get_settings.cache_clear()
    with patch.dict(os.environ):
        result = CliRunner().invoke(cli, list(args), env=env)
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise AssertionError("".join(traceback.format_exception(*result.exc_info)))
    return result


def test_the_loopback_default_is_open_for_reads_and_writes_until_a_key_exists(
    settings: Settings, clean_db: str
) -> None:
    with app_client(settings) as client:
        assert client.get("/v1/runs").status_code == 200
        assert client.get("/v1/runs?format=csv").status_code == 200
        assert client.get("/metrics").status_code == 200
        assert client.post("/v1/jobs", json=INVALID_JOB).status_code == 422  # validated, not refused
        stored_key(clean_db, Scope.write)
        assert client.post("/v1/jobs", json=INVALID_JOB).status_code == 401
        assert client.get("/v1/runs").status_code == 200


def test_off_loopback_anonymous_reads_writes_and_metrics_are_refused(
    settings: Settings, clean_db: str
) -> None:
    stored_key(clean_db, Scope.admin)
    with app_client(settings, **PUBLIC) as client:
        for method, path in (
            ("GET", "/v1/runs"),
            ("GET", "/v1/runs?format=csv"),
            ("POST", "/v1/backtests"),
            ("GET", "/v1/recommendations?dataset=builtin:mnist"),
            ("GET", "/v1/gates"),
            ("GET", "/metrics"),
            ("GET", "/v1/api-keys"),
            ("POST", "/v1/jobs"),
        ):
            refused = client.request(method, path, json=INVALID_JOB if method == "POST" else None)
            assert (refused.status_code, refused.json()["code"]) == (401, "unauthorized"), path
        assert client.get("/healthz").status_code == 200
        assert client.get("/readyz").status_code == 200


def test_read_and_metrics_access_can_be_opened_explicitly_off_loopback(
    settings: Settings, clean_db: str
) -> None:
    stored_key(clean_db, Scope.admin)
    with app_client(settings, **PUBLIC, read_access="open", metrics_access="open") as client:
        assert client.get("/v1/runs").status_code == 200
        assert client.get("/metrics").status_code == 200
        assert client.post("/v1/jobs", json=INVALID_JOB).status_code == 401
        assert client.get("/v1/api-keys").status_code == 401  # admin routes always need an admin key


def test_scopes_are_enforced_on_read_write_and_admin_routes(settings: Settings, clean_db: str) -> None:
    reader = {"X-API-Key": stored_key(clean_db, Scope.read)}
    writer = {"X-API-Key": stored_key(clean_db, Scope.write)}
    admin = {"X-API-Key": stored_key(clean_db, Scope.admin)}
    with app_client(settings, **PUBLIC) as client:
        assert client.get("/v1/runs", headers=reader).status_code == 200
        denied = client.post("/v1/jobs", json=INVALID_JOB, headers=reader)
        assert (denied.status_code, denied.json()["code"]) == (403, "forbidden")
        assert client.get("/v1/api-keys", headers=reader).status_code == 403
        # Reading a recommendation is a read; queueing its runs (POST) is a write.
        read = client.get("/v1/recommendations/mobilenet_v2?dataset=builtin:digits", headers=reader)
        assert (read.status_code, read.json()["code"]) == (404, "not_scored")
        queue = client.post("/v1/recommendations/mobilenet_v2?dataset=builtin:digits", headers=reader)
        assert (queue.status_code, queue.json()["code"]) == (403, "forbidden")
        assert client.get("/v1/runs", headers=writer).status_code == 200  # write includes read
        assert client.post("/v1/jobs", json=INVALID_JOB, headers=writer).status_code == 422
        assert client.get("/v1/api-keys", headers=writer).status_code == 403
        assert client.post("/v1/jobs", json=INVALID_JOB, headers=admin).status_code == 422
        assert client.get("/metrics", headers=reader).status_code == 200
        assert client.get("/v1/api-keys", headers=admin).status_code == 200
        wrong = client.get("/v1/runs", headers={"X-API-Key": "zt_not_a_key"})
        assert (wrong.status_code, wrong.json()["code"]) == (401, "unauthorized")


def test_keys_lifecycle_through_the_api(settings: Settings, clean_db: str) -> None:
    admin = {"X-API-Key": stored_key(clean_db, Scope.admin, name="root")}
    with app_client(settings, **PUBLIC) as client:
        created = client.post("/v1/api-keys", json={"name": "ci", "scopes": ["read"]}, headers=admin)
        assert created.status_code == 201, created.text
        new = created.json()
        assert new["key"].startswith("zt_") and new["scopes"] == ["read"] and new["revoked_at"] is None
        assert client.get("/v1/runs", headers={"X-API-Key": new["key"]}).status_code == 200

        listing = client.get("/v1/api-keys", headers=admin).json()
        assert [item["name"] for item in listing["items"]] == ["root", "ci"]
        ci = listing["items"][1]
        assert ci["last_used_at"] is not None  # the read above
        assert "key" not in ci and "key_hash" not in ci and new["key"] not in str(listing)
        first_page = client.get("/v1/api-keys?limit=1", headers=admin).json()
        assert [item["name"] for item in first_page["items"]] == ["root"]
        rest = client.get(f"/v1/api-keys?cursor={first_page['next_cursor']}", headers=admin).json()
        assert [item["name"] for item in rest["items"]] == ["ci"] and rest["next_cursor"] is None

        revoked = client.delete(f"/v1/api-keys/{new['id']}", headers=admin)
        assert revoked.status_code == 200 and revoked.json()["revoked_at"] is not None
        again = client.delete(f"/v1/api-keys/{new['id']}", headers=admin)
        assert again.json()["revoked_at"] == revoked.json()["revoked_at"]
        refused = client.get("/v1/runs", headers={"X-API-Key": new["key"]})
        assert (refused.status_code, refused.json()["code"]) == (401, "unauthorized")
        missing = client.delete("/v1/api-keys/999999", headers=admin)
        assert (missing.status_code, missing.json()["code"]) == (404, "api_key_not_found")
        bad = client.post("/v1/api-keys", json={"name": "x", "scopes": ["root"]}, headers=admin)
        assert bad.status_code == 422


def test_keys_lifecycle_through_the_command_line(settings: Settings, clean_db: str) -> None:
    created = zootriage(clean_db, "api-keys", "create", "nightly", "--scope", "read")
    assert created.exit_code == 0, created.stderr
    key = created.stdout.strip()
    assert key.startswith("zt_")
    with app_client(settings, **PUBLIC) as client:
        assert client.get("/v1/runs", headers={"X-API-Key": key}).status_code == 200
        assert client.post("/v1/jobs", json=INVALID_JOB, headers={"X-API-Key": key}).status_code == 403

        listed = zootriage(clean_db, "api-keys", "list")
        assert listed.exit_code == 0, listed.stderr
        row = next(line for line in listed.stdout.splitlines() if "nightly" in line)
        assert "read" in row and key not in listed.stdout and hash_key(key) not in listed.stdout
        key_id = row.split()[0]
        assert row.rstrip().endswith("-")  # not revoked

        assert zootriage(clean_db, "api-keys", "revoke", key_id).exit_code == 0
        assert client.get("/v1/runs", headers={"X-API-Key": key}).status_code == 401
    listed = zootriage(clean_db, "api-keys", "list")
    revoked_row = next(line for line in listed.stdout.splitlines() if "nightly" in line)
    assert not revoked_row.rstrip().endswith("-")
    unknown = zootriage(clean_db, "api-keys", "revoke", "999999")
    assert unknown.exit_code == 2 and "no API key 999999" in unknown.stderr
    assert "Traceback" not in unknown.stderr


def test_a_key_given_by_hash_in_the_settings_reads_and_writes(settings: Settings, clean_db: str) -> None:
    printed = zootriage(clean_db, "api-keys", "create", "deploy", "--no-store")
    key, hashes = printed.stdout.split()
    with app_client(settings, **PUBLIC, api_key_hashes=[hashes.split("=")[1]]) as client:
        assert client.get("/v1/runs", headers={"X-API-Key": key}).status_code == 200
        assert client.post("/v1/jobs", json=INVALID_JOB, headers={"X-API-Key": key}).status_code == 422
        assert client.get("/v1/api-keys", headers={"X-API-Key": key}).status_code == 403


def test_stored_keys_are_compared_in_constant_time(
    settings: Settings, clean_db: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    key = stored_key(clean_db, Scope.read)
    compared: list[tuple[bytes, bytes]] = []
    real = hmac.compare_digest

    def spy(a: bytes, b: bytes) -> bool:
        compared.append((a, b))
        return real(a, b)

    monkeypatch.setattr(hmac, "compare_digest", spy)
    with app_client(settings, **PUBLIC) as client:
        assert client.get("/v1/runs", headers={"X-API-Key": key}).status_code == 200
    digest = hash_key(key).encode()
    assert (digest, digest) in compared


def test_off_loopback_the_server_refuses_to_start_without_a_key(settings: Settings, clean_db: str) -> None:
    with pytest.raises(UnsafeBind, match="not loopback"):
        create_app(settings.model_copy(update=PUBLIC))
    create_app(settings.model_copy(update={**PUBLIC, "allow_no_keys": True}))
    create_app(settings.model_copy(update={**PUBLIC, "api_key_hashes": [hash_key("zt_x")]}))

    host_before = os.environ.get("ZOOTRIAGE_HOST")
    refused = zootriage(clean_db, "serve", "--host", "0.0.0.0", "--no-migrate")
    assert os.environ.get("ZOOTRIAGE_HOST") == host_before  # nothing leaks into later tests' stacks
    assert refused.exit_code == 2
    assert "refusing to serve on 0.0.0.0" in refused.stderr and "ZOOTRIAGE_ALLOW_NO_KEYS" in refused.stderr
    assert "Traceback" not in refused.stderr
    by_setting = zootriage(clean_db, "serve", "--no-migrate", ZOOTRIAGE_HOST="10.1.2.3")
    assert by_setting.exit_code == 2 and "refusing to serve on 10.1.2.3" in by_setting.stderr

    stored_key(clean_db, Scope.admin)
    create_app(settings.model_copy(update=PUBLIC))
