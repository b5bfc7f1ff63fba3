"""The pages that show stored rows render them: a run with its protocol and markers, two runs compared,
the history and the home page (runs written straight into the database, no stack needed)."""

from __future__ import annotations

import re
import uuid

from fastapi.testclient import TestClient

from tests.integration.seeding import seed_runs
from tests.integration.stored_runs import stored_run
from zootriage.app.db.session import session_scope
from zootriage.core.protocol import Protocol


def test_stored_runs_render_on_every_page_that_shows_them(client: TestClient, clean_db: str) -> None:
    with session_scope(clean_db) as session:
        runs = seed_runs(session, 2)
        runs[1].protocol = Protocol(n_t=321, centering="global")
        session.flush()
        first, second = (str(run.id) for run in runs)
    # The stored values in their places: a number or an id anywhere on the page (the run's own id is
    # in its URL; the compare form echoes the ids asked for) would prove nothing.
    page = client.get(f"/runs/{second}")
    assert page.status_code == 200, page.text[-400:]
    assert "<dt>n_t</dt><dd>321</dd>" in page.text  # the protocol, field by field
    assert "<dt>centering</dt><dd>global</dd>" in page.text
    assert re.search(r'<th scope="row">dimension</th>\s*<td class="num">0\.1</td>', page.text)
    compared = client.get(f"/compare?runs={first},{second}")
    assert compared.status_code == 200, compared.text[-400:]
    for run_id, architecture in ((first, "vgg11"), (second, "resnet18")):  # a column per run, in order
        assert f'<a href="/runs/{run_id}">{architecture} {run_id[:8]}</a>' in compared.text
    cells = r'<th scope="row">dimension</th>\s*<td[^>]*>\s*0</td>\s*<td[^>]*>\s*0\.1</td>'
    assert re.search(cells, compared.text)  # each run's stored marker value in its column
    for path in ("/runs", "/", "/gates", "/ui/jobs"):
        answer = client.get(path)
        assert answer.status_code == 200, (path, answer.text[-400:])
    history = client.get("/runs").text
    assert f'<a href="/runs/{first}">' in history and f'<a href="/runs/{second}">' in history
    unknown = uuid.uuid4()  # and a run that is not stored is not shown as one
    assert client.get(f"/runs/{unknown}").status_code == 404
    assert client.get(f"/compare?runs={first},{unknown}").status_code == 404


def test_a_note_that_markers_share_is_listed_once_on_the_run_page_and_in_its_report(
    client: TestClient, clean_db: str
) -> None:
    degenerate = "degenerate GLUE regime: 40% of the drawn dichotomies are not separable"
    markers = {"dimension": 2.0, "utilization": 0.4, "radius": 0.6, "id_accuracy": 0.9, "nc1": None}
    undecidable = {"dimension": degenerate, "utilization": degenerate, "radius": "only this one"}
    run_id = stored_run(clean_db, "notes", markers, undecidable=undecidable)
    row = r'<th scope="row">(\w+)</th>.*?<td>([^<]*(?:<a href="#note-\d">note \d</a>)?)</td><td>1</td>'
    for path in (f"/runs/{run_id}", f"/runs/{run_id}/report.html"):
        page = client.get(path)
        assert page.status_code == 200, page.text[-400:]
        assert page.text.count(degenerate) == 1, path  # stated once, above the table
        assert f'<li id="note-1">{degenerate} <span class="hint">(2 markers)</span></li>' in page.text
        cells = dict(re.findall(row, page.text, flags=re.S))  # each marker's note cell
        assert cells["dimension"] == cells["utilization"] == '<a href="#note-1">note 1</a>', path
        assert (cells["radius"], cells["nc1"], cells["id_accuracy"]) == ("only this one", "n/a", ""), path
