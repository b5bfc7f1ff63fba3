"""The pages that show stored rows render them: a run with its protocol and markers, two runs compared,
the history and the home page (runs written straight into the database, no stack needed)."""

from __future__ import annotations

from fastapi.testclient import TestClient

from tests.integration.seeding import seed_runs
from zootriage.app.db.session import session_scope
from zootriage.core.protocol import Protocol


def test_stored_runs_render_on_every_page_that_shows_them(client: TestClient, clean_db: str) -> None:
    with session_scope(clean_db) as session:
        runs = seed_runs(session, 2)
        runs[1].protocol = Protocol(n_t=321, centering="global")
        session.flush()
        first, second = (str(run.id) for run in runs)
    page = client.get(f"/runs/{second}")
    assert page.status_code == 200, page.text[-400:]
    assert "321" in page.text and "global" in page.text  # the protocol, field by field
    assert "dimension" in page.text
    compared = client.get(f"/compare?runs={first},{second}")
    assert compared.status_code == 200, compared.text[-400:]
    assert first in compared.text and second in compared.text
    for path in ("/runs", "/", "/gates", "/ui/jobs"):
        answer = client.get(path)
        assert answer.status_code == 200, (path, answer.text[-400:])
    assert second in client.get("/runs").text
