"""The run-management commands against the in-process API on the real PostgreSQL: ``label
--description``, ``archive`` and ``restore``, ``history --search`` and ``--archived``, ``show`` of an
archived run, ``uploads`` and ``jobs``; every id as the user typed it (a prefix resolved by the
service), an ambiguous or too short one exit 2 with the service's one-line reason."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from typing import Any, cast

import pytest
from fastapi.testclient import TestClient
from typer.testing import CliRunner, Result

from tests.integration.access import app_client
from tests.integration.jobs import job_body
from tests.integration.stored_runs import stored_run
from zootriage.app.cli import app as cli
from zootriage.app.cli.client import Client
from zootriage.app.db.models import Run
from zootriage.app.db.session import session_scope
from zootriage.app.settings import Settings

MARKERS: dict[str, float | None] = {"dimension": 2.0, "utilization": 0.4, "id_accuracy": 0.9}
TWINS = (uuid.UUID("5eed0001-0000-4000-8000-000000000000"), uuid.UUID("5eed0001-1111-4000-8000-000000000000"))

pytestmark = pytest.mark.usefixtures("wide_consoles")


@pytest.fixture
def in_process(settings: Settings, clean_db: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[TestClient]:
    """The commands' HTTP client is the app under test; queued jobs are not published."""
    import zootriage.app.services.jobs as jobs

    monkeypatch.setattr(jobs, "enqueue_score", lambda *_args, **_kwargs: None)
    with app_client(settings) as client:

        def use_app(self: Client, _url: str, api_key: str | None, _timeout: float = 120.0) -> None:
            self.http = cast(Any, client)

        monkeypatch.setattr(Client, "__init__", use_app)
        yield client


def zootriage(*args: str) -> Result:
    result = CliRunner().invoke(cli, list(args), env={"COLUMNS": "200", "ZOOTRIAGE_API_KEY": None})
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise AssertionError(repr(result.exception)) from result.exception
    return result


def named_run(database_url: str, name: str, run_id: uuid.UUID | None = None) -> uuid.UUID:
    return stored_run(database_url, f"cli-{uuid.uuid4()}", MARKERS, run_id=run_id, name=name)


def test_label_sets_and_clears_a_description_by_a_prefix(in_process: TestClient, clean_db: str) -> None:
    run_id = named_run(clean_db, "described", TWINS[0])
    done = zootriage("label", str(run_id)[:8], "--description", "why this run matters")
    assert done.exit_code == 0, done.output
    shown = zootriage("show", "5eed0001-0000")
    assert shown.exit_code == 0 and "why this run matters" in shown.stdout
    assert zootriage("label", "5eed0001", "--clear-description").exit_code == 0
    assert in_process.get(f"/v1/runs/{run_id}").json()["description"] is None
    both = zootriage("label", "5eed0001", "--description", "x", "--clear-description")
    assert both.exit_code == 2 and "contradict" in both.stderr
    nothing = zootriage("label", "5eed0001")
    assert nothing.exit_code == 2 and "--description" in nothing.stderr


def test_archive_restore_and_the_history_filters(in_process: TestClient, clean_db: str) -> None:
    kept = named_run(clean_db, "Keeper ResNet")
    gone = named_run(clean_db, "old resnet_50")
    archived = zootriage("archive", str(gone)[:8])
    assert archived.exit_code == 0, archived.output
    assert f"run {gone}" in archived.stdout and "archived since" in archived.stdout
    history = zootriage("history", "--json")
    assert [item["id"] for item in json.loads(history.stdout)["items"]] == [str(kept)]
    both = zootriage("history", "--search", "RESNET", "--archived", "include", "--json")
    searched = json.loads(both.stdout)
    assert {item["id"] for item in searched["items"]} == {str(kept), str(gone)}
    only = json.loads(zootriage("history", "--archived", "only", "--json").stdout)
    assert [item["id"] for item in only["items"]] == [str(gone)]
    literal = json.loads(zootriage("history", "--search", "t_5", "--archived", "include", "--json").stdout)
    assert [item["id"] for item in literal["items"]] == [str(gone)]
    table = zootriage("history", "--archived", "include")
    assert table.exit_code == 0 and "(archived)" in table.stdout
    csv = zootriage("history", "--search", "keeper", "--csv").stdout.splitlines()
    assert [line.split(",")[0] for line in csv[1:]] == [str(kept)]
    shown = zootriage("show", str(gone))
    assert shown.exit_code == 0 and "archived" in shown.stdout
    restored = zootriage("restore", str(gone)[:10], "--json")
    assert restored.exit_code == 0 and json.loads(restored.stdout)["archived_at"] is None
    bad = zootriage("history", "--archived", "sometimes")
    assert bad.exit_code == 2


def test_an_ambiguous_or_short_id_exits_2_with_the_reason(in_process: TestClient, clean_db: str) -> None:
    for run_id in TWINS:
        named_run(clean_db, "twin", run_id)
    ambiguous = zootriage("archive", "5eed0001")
    assert ambiguous.exit_code == 2
    assert "409 (ambiguous_id: 2 runs have ids beginning with" in ambiguous.stderr
    assert "Traceback" not in ambiguous.output
    short = zootriage("show", "5eed")
    assert short.exit_code == 2 and "too short" in short.stderr
    assert zootriage("show", "..").exit_code == 2
    assert zootriage("archive", "5eed0001-1").exit_code == 0  # one digit more decides
    with session_scope(clean_db) as session:
        assert session.get(Run, TWINS[1]).archived_at is not None  # type: ignore[union-attr]
        assert session.get(Run, TWINS[0]).archived_at is None  # type: ignore[union-attr]


def test_uploads_and_jobs_list_a_page_at_a_time(
    in_process: TestClient, clean_db: str, program_ref: dict[str, Any]
) -> None:
    upload_id = program_ref["path"].split(".")[0]
    uploads = zootriage("uploads")
    assert uploads.exit_code == 0 and upload_id in uploads.stdout and "torch_export" in uploads.stdout
    ids = [in_process.post("/v1/jobs", json=job_body(program_ref, seed=s)).json()["id"] for s in range(3)]
    cancelled = zootriage("cancel", ids[0][:8])
    assert cancelled.exit_code == 0 and "cancelled" in cancelled.stdout
    first = zootriage("jobs", "--limit", "2")
    assert first.exit_code == 0 and ids[2] in first.stdout and ids[1] in first.stdout
    assert ids[0] not in first.stdout
    token = first.stderr.split("--cursor ")[1].strip()
    rest = json.loads(zootriage("jobs", "--limit", "2", "--cursor", token, "--json").stdout)
    assert [job["id"] for job in rest["items"]] == [ids[0]] and rest["next_cursor"] is None
    only = json.loads(zootriage("jobs", "--status", "cancelled", "--json").stdout)
    assert [job["id"] for job in only["items"]] == [ids[0]]
    status = zootriage("status", ids[1][:8], "--no-watch")
    assert status.exit_code == 0 and f"job {ids[1]}" in status.stdout and "queued" in status.stdout
    assert zootriage("jobs", "--status", "done").exit_code == 2
    listed = json.loads(zootriage("uploads", "--json").stdout)
    assert [item["id"] for item in listed["items"]] == [upload_id]
