"""``/backtests`` (outcomes pasted as CSV, the API's back-test service, a linked scatter) and
``/backtests/study`` (the project's evidence), on runs written straight into PostgreSQL."""

from __future__ import annotations

import html
import re
import uuid

import pytest
from fastapi.testclient import TestClient

from tests.integration.seeding import fake_run
from zootriage.app.db.models import RunTag
from zootriage.app.db.session import session_scope
from zootriage.core.evidence import load_evidence


@pytest.fixture
def zoo(clean_db: str) -> list[str]:
    """Five resnet18 runs whose dimension rises with i, and one vgg11 run."""
    runs = [fake_run(i, markers={"dimension": float(i), "utilization": 0.1 * i}) for i in range(5)]
    runs.append(fake_run(9, architecture="vgg11", markers={"dimension": 2.0, "utilization": 0.5}))
    with session_scope(clean_db) as session:
        session.add_all(runs)
        session.flush()
        return [str(run.id) for run in runs]


def _post(client: TestClient, outcomes: str, **fields: str):  # type: ignore[no-untyped-def]
    client.get("/backtests")
    token = client.cookies.get("zt_csrf")
    return client.post("/backtests", data={"csrf": token, "outcomes": outcomes, **fields})


def _alert(page: str, field: str) -> str:
    found = re.search(rf'id="{field}-error" role="alert">([^<]*)<', page)
    assert found, page[-800:]
    return html.unescape(found.group(1))


@pytest.fixture
def seeded(clean_db: str) -> list[str]:
    """resnet18: 3 recipes × 2 seeds, vgg11: 2 recipes × 2 seeds (tag ``recipe``); dimension rises
    with the recipe. Outcomes are given by ``_seeded_outcomes``."""
    runs = []
    for a, (arch, recipes) in enumerate((("resnet18", 3), ("vgg11", 2))):
        for recipe in range(recipes):
            for seed in range(2):
                run = fake_run(
                    50 + 10 * a + 2 * recipe + seed,
                    architecture=arch,
                    markers={"dimension": recipe + 0.01 * seed, "utilization": 0.1 * recipe},
                )
                run.tags = [RunTag(key="recipe", value=f"r{recipe}")]
                runs.append(run)
    with session_scope(clean_db) as session:
        session.add_all(runs)
        session.flush()
        return [str(run.id) for run in runs]


def test_pasted_outcomes_give_the_apis_statistics_and_a_linked_scatter(
    client: TestClient, seeded: list[str]
) -> None:
    # Outcomes rise with the recipe (runs come in seed pairs: index // 2 is the recipe within its arch).
    outcomes = {run: 0.5 + 0.1 * (i % 6 // 2) + 0.001 * (i % 2) for i, run in enumerate(seeded)}
    lines = ["run_id,outcome", *(f"{run},{value}" for run, value in outcomes.items()), ""]
    page = _post(client, "\n".join(lines), n_boot="200", method="preregistered")
    assert page.status_code == 200, page.text[-800:]
    assert "Method: <strong>preregistered</strong>" in page.text
    api = client.post(
        "/v1/backtests", json={"outcomes": outcomes, "n_boot": 200, "method": "preregistered"}
    ).json()
    assert api["method"] == "preregistered" and api["recipes"] == 5
    found = api["rules"]["dimension"]["correlation"]
    low, high = found["rho_bar_ci"]
    title = f"ρ̄ = {found['rho_bar']:.2f} [95% CI {low:.2f}, {high:.2f}], {found['recipes']} recipes"
    assert title in html.unescape(page.text)  # the figure's title and its label
    assert 'data-points="10"' in page.text
    links = re.findall(r'<a xlink:href="(/runs/[^"]+)"', page.text)
    assert sorted(links) == sorted(f"/runs/{run}" for run in seeded)
    table = page.text.split('id="backtest-table"')[1].split("</table>")[0]
    assert table.count('<tr class="rule">') == len(api["rules"]) == 3  # dimension, utilization, geometry
    geometry = api["rules"]["geometry"]["pairwise"]
    assert geometry["eligible_pairs"] == 4 and f'<td class="num">{geometry["eligible_pairs"]}</td>' in table
    shown = _post(client, "\n".join(lines), n_boot="200", marker="utilization", method="preregistered")
    assert "utilization: ρ̄ = " in html.unescape(shown.text)
    untagged = _post(client, "\n".join(lines), n_boot="200", recipe_tag="arm")
    assert "10 run(s) have no recipe label" in html.unescape(untagged.text)


def test_the_page_shows_the_confirmatory_answer_by_default(client: TestClient, seeded: list[str]) -> None:
    outcomes = {run: 0.5 + 0.1 * (i % 6 // 2) + 0.001 * (i % 2) for i, run in enumerate(seeded)}
    lines = ["run_id,outcome", *(f"{run},{value}" for run, value in outcomes.items()), ""]
    page = _post(client, "\n".join(lines), n_boot="200")
    assert page.status_code == 200, page.text[-800:]
    text = html.unescape(page.text)
    assert "Method: <strong>confirmatory</strong>" in text and 'id="backtest-table"' not in text
    api = client.post("/v1/backtests", json={"outcomes": outcomes, "n_boot": 200}).json()
    assert api["method"] == "confirmatory"
    rules = api["confirmatory_rules"]
    table = text.split('id="confirmatory-table"')[1].split("</table>")[0]
    assert table.count('<tr class="rule">') == len(rules) == 3  # dimension, utilization, geometry
    dimension = rules["dimension"]
    assert (dimension["correct"], dimension["pairs"]) == (4, 4) and dimension["vs_id_accuracy"] is None
    low, high = dimension["ci95"]
    assert f"dimension: accuracy 1.00 [95% CI {low:.2f}, {high:.2f}], 4 eligible pairs" in text
    utilization = rules["utilization"]
    row = table.split('<th scope="row">utilization</th>')[1].split("</tr>")[0]
    cells = re.findall(r'<td class="num">([^<]*)</td>', row)
    assert cells[:4] == [str(utilization[k]) for k in ("correct", "wrong", "undecided", "pairs")]
    assert "no run carries id_accuracy" in text


def test_bad_forms_show_their_error_beside_the_field(client: TestClient, zoo: list[str]) -> None:
    ghost = uuid.uuid4()
    good = "\n".join(f"{run},0.5" for run in zoo[:3])
    for outcomes, fields, field, status, says in (
        ("nonsense,0.5\n", {}, "outcomes", 422, "line 1: 'nonsense' is not a run id"),
        (f"{zoo[0]},high\n", {}, "outcomes", 422, "line 1: 'high' is not a number"),
        (f"{zoo[0]},1\n{zoo[0]},2\n", {}, "outcomes", 422, "given twice"),
        (f"{zoo[0]},1,2\n", {}, "outcomes", 422, "want run_id,outcome"),
        (f"{zoo[0]},1\n{zoo[1]},2\n", {}, "outcomes", 422, "invalid_request: outcomes"),
        (f"{good}\n{ghost},0.1", {}, "outcomes", 404, f"run_not_found: no run(s) {ghost}"),
        ("x" * 400_000, {}, "outcomes", 422, "at most"),
        (good, {"n_boot": "5"}, "n_boot", 422, "n_boot"),
        (good, {"marker": "nothing"}, "marker", 422, "unknown_marker"),
        (good, {"marker": "nc1"}, "marker", 422, "no run carries 'nc1'"),
        (good, {"recipe_tag": "t" * 65}, "recipe_tag", 422, "recipe_tag"),
    ):
        page = _post(client, outcomes, **fields)
        assert page.status_code == status, (says, page.text[-600:])
        assert says in _alert(page.text, field), says
    forged = client.post("/backtests", data={"outcomes": good, "csrf": "stale"})
    assert forged.status_code == 403 and _alert(forged.text, "outcomes").startswith("csrf_failed")


def test_the_study_page_shows_every_rule_of_every_outcome(client: TestClient) -> None:
    doc = load_evidence()
    page = client.get("/backtests/study")
    assert page.status_code == 200
    assert page.text.count('<tr class="rule">') == sum(len(o["rules"]) for o in doc["outcomes"].values())
    primary = doc["outcomes"][doc["primary_outcome"]]
    assert f"{primary['id_accuracy_win_rate']:.0%}" in page.text
    assert "not shown" in page.text  # some rule does not beat ID accuracy, and the page says so
    first = page.text.index(f'id="outcome-{doc["primary_outcome"]}"')
    assert all(first <= page.text.index(f'id="outcome-{name}"') for name in doc["outcomes"])


def test_the_back_test_runs_off_the_event_loop(
    client: TestClient, zoo: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The page is async (it reads its form), but the back-test itself (seconds of numpy and scipy for
    a large one) runs in the thread pool: run on the event loop, it held every other request, /healthz
    included, for as long (an audit measured 9.5 s)."""
    import asyncio

    from zootriage.app.services import backtests as backtest_service

    real, seen = backtest_service.backtest_with_records, []

    def where(*args: object, **kwargs: object) -> object:
        try:
            asyncio.get_running_loop()
            seen.append("event loop")
        except RuntimeError:
            seen.append("worker thread")
        return real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(backtest_service, "backtest_with_records", where)
    outcomes = "\n".join(f"{run_id},{0.1 * k}" for k, run_id in enumerate(zoo))
    answer = _post(client, outcomes, method="preregistered")
    assert answer.status_code in (200, 422), answer.text[-500:]  # the zoo has no recipes: a refusal
    assert seen == ["worker thread"]


def test_a_method_the_page_does_not_offer_is_refused_beside_its_field(
    client: TestClient, zoo: list[str]
) -> None:
    """The API's "first-study" answers in a shape the page cannot plot: it was a 500 from the form."""
    outcomes = "\n".join(f"{run_id},{0.1 * k}" for k, run_id in enumerate(zoo))
    answer = _post(client, outcomes, method="first-study")
    assert answer.status_code == 422 and _alert(answer.text, "method").startswith("invalid_request: method")
