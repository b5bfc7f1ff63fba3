"""/compare draws runs whose labels look like mathtext (a 500 when matplotlib parsed them)."""

from __future__ import annotations

from fastapi.testclient import TestClient

from tests.integration.seeding import fake_run
from zootriage.app.db.session import session_scope


def test_compare_with_a_mathtext_architecture_label(client: TestClient, clean_db: str) -> None:
    with session_scope(clean_db) as session:
        runs = [fake_run(1, architecture="$\\undefinedmacro{x}$"), fake_run(2, architecture="$x_{$")]
        session.add_all(runs)
        session.flush()
        ids = ",".join(str(run.id) for run in runs)
    answer = client.get("/compare", params={"runs": ids})
    assert answer.status_code == 200, answer.text[:500]
    assert 'data-points="2"' in answer.text and "$\\undefinedmacro{x}$" in answer.text
