"""``GET /v1/trends`` and the ``/trends`` page on PostgreSQL: the points in time (or alias-move) order
with their noise, the drift verdict held to the Welch test's own numbers, the selection (filters,
projects, aliases, archived runs, the key's projects), and every refusal as ``{code, message}``."""

from __future__ import annotations

import math
from datetime import datetime
from typing import Any

from fastapi.testclient import TestClient
from scipy import stats
from sqlalchemy import update

from tests.integration.access import PUBLIC, app_client, stored_key
from tests.integration.trend_runs import REPEATS, T0, move_alias, trend_run
from zootriage.app.api_keys import Scope, create_api_key
from zootriage.app.db.models import Run
from zootriage.app.db.session import session_scope
from zootriage.app.settings import Settings


def _series(answer: dict[str, Any], marker: str) -> dict[str, Any]:
    return next(s for s in answer["series"] if s["marker"] == marker)


def _welch(first: float, last: float, std_first: float, std_last: float) -> tuple[float, float, float]:
    """(p, se, critical) of the two-sided Welch test on two means of REPEATS repeats each."""
    p = float(
        stats.ttest_ind_from_stats(last, std_last, REPEATS, first, std_first, REPEATS, equal_var=False).pvalue
    )
    v1, v2 = std_first**2 / REPEATS, std_last**2 / REPEATS
    df = (v1 + v2) ** 2 / (v1**2 / (REPEATS - 1) + v2**2 / (REPEATS - 1))
    return p, math.sqrt(v1 + v2), float(stats.t.ppf(0.975, df))


def test_points_follow_creation_with_their_noise_and_the_drift_is_the_welch_test(
    client: TestClient, clean_db: str
) -> None:
    values = [1.00, 1.01, 0.99, 1.12]
    stds = [0.02, 0.03, 0.02, 0.04]
    # Stored out of order: the trend orders by creation time, not by insertion.
    ids = {
        day: trend_run(
            clean_db, f"release-{day}", {"dimension": values[day], "utilization": 0.5},
            day=day, stds={"dimension": stds[day], "utilization": None},
        )
        for day in (2, 0, 3, 1)
    }
    answer = client.get("/v1/trends", params={"marker": ["d_eff", "psi_eff"]})
    assert answer.status_code == 200, answer.text
    body = answer.json()
    assert body["runs"] == 4 and not body["truncated"] and body["warnings"] == []
    dimension = _series(body, "dimension")
    assert dimension["asked"] == "d_eff" and dimension["missing"] == 0
    points = dimension["points"]
    assert [p["run_id"] for p in points] == [str(ids[d]) for d in range(4)]
    assert [p["index"] for p in points] == [0, 1, 2, 3]
    assert [p["name"] for p in points] == [f"release-{d}" for d in range(4)]
    assert [p["at"] for p in points] == [p["created_at"] for p in points]
    for point, value, std in zip(points, values, stds, strict=True):
        se = std / math.sqrt(REPEATS)
        assert point["value"] == value and point["std"] == std and point["repeats"] == REPEATS
        assert math.isclose(point["se"], se)
        assert math.isclose(point["band"][0], value - se) and math.isclose(point["band"][1], value + se)
        assert point["short_id"] == point["run_id"][:8] and point["decidable"]

    drift = dimension["drift"]
    p, se, critical = _welch(values[0], values[-1], stds[0], stds[-1])
    assert drift["verdict"] == ("drift" if p < 0.05 else "within_noise") == "drift"
    assert math.isclose(drift["p_value"], p, rel_tol=1e-6) and math.isclose(drift["se"], se)
    assert math.isclose(drift["critical"], critical, rel_tol=1e-6)
    assert math.isclose(drift["threshold"], critical * se, rel_tol=1e-6)
    assert abs(drift["difference"]) > drift["threshold"]
    assert drift["first_run_id"] == str(ids[0]) and drift["last_run_id"] == str(ids[3])
    assert drift["direction"] == "higher" and drift["better"] is True  # higher D_eff is preferred
    assert drift["alpha"] == 0.05

    utilization = _series(body, "utilization")  # stored without a std: no band, no verdict
    assert utilization["asked"] == "psi_eff"
    assert all(p["se"] is None and p["band"] is None for p in utilization["points"])
    assert utilization["drift"]["verdict"] == "cannot_decide"
    assert "no noise estimate" in utilization["drift"]["reason"]
    assert utilization["drift"]["p_value"] is None and utilization["drift"]["threshold"] is None


def test_a_change_inside_the_noise_is_no_drift_and_the_same_change_under_less_noise_is(
    client: TestClient, clean_db: str
) -> None:
    """0.05 apart: within the noise at std 0.1 (p ≈ 0.45), beyond it at std 0.01; the verdict
    follows the noise, not the size of the change."""
    for suite, std in (("a", 0.1), ("b", 0.01)):
        for day, value in enumerate([1.0, 1.05]):
            noise = {"dimension": std}
            trend_run(clean_db, f"{suite}{day}", {"dimension": value}, day=day, stds=noise, tags={"s": suite})
    noisy = _series(client.get("/v1/trends?marker=dimension&tag=s=a").json(), "dimension")["drift"]
    quiet = _series(client.get("/v1/trends?marker=dimension&tag=s=b").json(), "dimension")["drift"]
    assert noisy["verdict"] == "within_noise" and noisy["better"] is None
    assert abs(noisy["difference"]) <= noisy["threshold"]
    assert math.isclose(noisy["p_value"], _welch(1.0, 1.05, 0.1, 0.1)[0], rel_tol=1e-6)
    assert quiet["verdict"] == "drift" and quiet["p_value"] < 0.05


def test_a_first_or_last_point_that_cannot_decide_gives_no_verdict(client: TestClient, clean_db: str) -> None:
    trend_run(clean_db, "a", {"dimension": 1.0, "radius": 2.0}, day=0, stds={"radius": 0.01})
    degenerate = {"dimension": "degenerate"}
    trend_run(clean_db, "b", {"dimension": 3.0, "radius": 9.0}, day=1, undecidable=degenerate)
    body = client.get("/v1/trends?marker=dimension&marker=r_eff").json()
    dimension = _series(body, "dimension")["drift"]
    assert dimension["verdict"] == "cannot_decide" and "may not decide: degenerate" in dimension["reason"]
    assert dimension["difference"] == 2.0 and dimension["se"] is None  # the change is shown, not judged
    radius = _series(body, "radius")
    assert radius["asked"] == "r_eff" and radius["drift"]["verdict"] == "drift"
    assert radius["drift"]["better"] is None  # R_eff has no preferred direction
    one = client.get("/v1/trends?marker=dimension&name_contains=A").json()
    assert one["runs"] == 1 and "fewer than two points" in _series(one, "dimension")["drift"]["reason"]


def test_filters_limit_and_archived_runs_choose_the_points(client: TestClient, clean_db: str) -> None:
    kept = [
        trend_run(clean_db, f"Nightly-{day}", {"dimension": 1.0 + day / 10}, day=day, tags={"team": "vision"})
        for day in range(5)
    ]
    trend_run(clean_db, "nightly-archived", {"dimension": 9.0}, day=6, tags={"team": "vision"}, archived=True)
    trend_run(clean_db, "nightly-vit", {"dimension": 9.0}, day=7, architecture="vit", tags={"team": "vision"})
    trend_run(clean_db, "release-9", {"dimension": 9.0}, day=8, tags={"team": "vision"})
    trend_run(clean_db, "nightly-other", {"dimension": 9.0}, day=9, tags={"team": "audio"})
    params = {"marker": "dimension", "arch": "resnet18", "name_contains": "NIGHTLY", "tag": "team=vision"}
    body = client.get("/v1/trends", params=params).json()
    assert [p["run_id"] for p in _series(body, "dimension")["points"]] == [str(i) for i in kept]
    assert not body["truncated"]
    latest = client.get("/v1/trends", params={**params, "limit": 3}).json()
    assert [p["run_id"] for p in _series(latest, "dimension")["points"]] == [str(i) for i in kept[-3:]]
    assert latest["truncated"] and latest["selection"]["limit"] == 3
    since = client.get("/v1/trends", params={**params, "since": T0.date().replace(day=3).isoformat()}).json()
    assert [p["run_id"] for p in _series(since, "dimension")["points"]] == [str(i) for i in kept[2:]]


def test_points_on_other_datasets_are_flagged(client: TestClient, clean_db: str) -> None:
    trend_run(clean_db, "a", {"dimension": 1.0}, day=0)
    trend_run(clean_db, "b", {"dimension": 1.0}, day=1, fingerprint="e" * 64)
    body = client.get("/v1/trends?marker=dimension").json()
    assert any("span 2 datasets" in warning for warning in body["warnings"])
    only = client.get("/v1/trends", params={"marker": "dimension", "dataset": "e" * 64}).json()
    assert only["runs"] == 1 and only["warnings"] == []


def test_a_project_and_an_alias_history_select_their_runs(client: TestClient, clean_db: str) -> None:
    vision = [
        trend_run(clean_db, f"v{day}", {"dimension": 1.0 + day}, day=day, projects=["vision"])
        for day in range(3)
    ]
    trend_run(clean_db, "audio", {"dimension": 7.0}, day=1, projects=["audio"])
    shared = trend_run(clean_db, "both", {"dimension": 5.0}, day=4, projects=["audio", "vision"])
    body = client.get("/v1/trends?marker=dimension&project=vision").json()
    assert [p["run_id"] for p in _series(body, "dimension")["points"]] == [str(i) for i in [*vision, shared]]
    assert body["selection"]["project"] == "vision"

    # The alias moves v2 → v0 → both → v0 (a rollback): one point per move, in the order of the moves.
    archived = trend_run(clean_db, "gone", {"dimension": 3.0}, day=5, projects=["vision"])
    order = [vision[2], vision[0], archived, shared, vision[0]]
    moved_at = [move_alias(clean_db, "vision", "production", run_id) for run_id in order]
    with session_scope(clean_db) as session:
        session.execute(update(Run).where(Run.id == archived).values(archived_at=T0))
    history = client.get("/v1/trends?marker=dimension&project=vision&alias=production").json()
    points = _series(history, "dimension")["points"]
    expected = [(r, t) for r, t in zip(order, moved_at, strict=True) if r != archived]
    assert [p["run_id"] for p in points] == [str(r) for r, _ in expected]
    assert [datetime.fromisoformat(p["at"]) for p in points] == [t for _, t in expected]
    assert all(p["at"] != p["created_at"] for p in points)  # placed by the move, not by the run's birth
    assert "moves of alias 'production'" in history["selection"]["order"]
    assert any("archived or deleted" in warning for warning in history["warnings"])
    last_two = client.get("/v1/trends?marker=dimension&project=vision&alias=production&limit=2").json()
    assert [p["run_id"] for p in _series(last_two, "dimension")["points"]] == [str(shared), str(vision[0])]
    assert last_two["truncated"]


def test_refusals_are_code_and_message(client: TestClient, clean_db: str) -> None:
    trend_run(clean_db, "a", {"dimension": 1.0}, day=0, projects=["vision"])
    move_alias(clean_db, "vision", "production", trend_run(clean_db, "b", {"dimension": 1.0}, day=1))
    cases: list[tuple[dict[str, Any], int, str]] = [
        ({"marker": "d_efff"}, 422, "unknown_marker"),
        ({"marker": [f"m{i}" for i in range(9)]}, 422, "too_many_markers"),
        ({"marker": "dimension", "limit": 1}, 422, "invalid_request"),
        ({"marker": "dimension", "limit": 501}, 422, "invalid_request"),
        ({"marker": "dimension", "since": "last tuesday"}, 422, "invalid_request"),
        ({"marker": "dimension", "tag": "no-equals"}, 422, "invalid_request"),
        ({"marker": "dimension", "project": "Not A Slug"}, 422, "invalid_request"),
        ({"marker": "dimension", "project": "nope"}, 404, "project_not_found"),
        ({"marker": "dimension", "project": "vision", "alias": "staging"}, 404, "alias_not_found"),
        ({"marker": "dimension", "project": "vision", "alias": "Prod!"}, 422, "invalid_request"),
        ({"marker": "dimension", "project": "vision", "alias": "production", "arch": "x"}, 422,
         "invalid_request"),
        ({"marker": "x" * 200}, 422, "unknown_marker"),
    ]
    for params, status, code in cases:
        answer = client.get("/v1/trends", params=params)
        assert answer.status_code == status, (params, answer.text)
        body = answer.json()
        assert body["code"] == code and body["message"], (params, body)
    unknown = client.get("/v1/trends", params={"marker": "d_efff"}).json()["message"]
    assert "dimension" in unknown and "d_eff" in unknown  # names what would have worked


def test_a_key_limited_to_a_project_sees_only_its_trends(settings: Settings, clean_db: str) -> None:
    trend_run(clean_db, "v", {"dimension": 1.0}, day=0, projects=["vision"])
    trend_run(clean_db, "a", {"dimension": 2.0}, day=1, projects=["audio"])
    stored_key(clean_db, Scope.admin, name="admin")  # keys exist: reads need one
    with session_scope(clean_db) as session:
        limited = create_api_key(session, "vision-only", frozenset({Scope.read}), frozenset({"vision"})).key
    with app_client(settings, **PUBLIC) as public:
        headers = {"X-API-Key": limited}
        mine = public.get("/v1/trends?marker=dimension", headers=headers).json()
        assert [p["name"] for p in _series(mine, "dimension")["points"]] == ["v"]
        other = public.get("/v1/trends?marker=dimension&project=audio", headers=headers)
        assert other.status_code == 403 and other.json()["code"] == "forbidden"
        assert public.get("/v1/trends?marker=dimension").status_code == 401


def test_the_page_draws_each_marker_with_its_band_and_shows_a_refusal(
    client: TestClient, clean_db: str
) -> None:
    ids = [
        trend_run(clean_db, f"r{day}", {"dimension": 1.0 + day, "utilization": 0.3}, day=day,
                  stds={"utilization": None})
        for day in range(3)
    ]
    page = client.get("/trends")
    assert page.status_code == 200
    html = page.text
    assert 'data-points="6"' in html  # two default markers (d_eff, psi_eff) × three runs
    for run_id in ids:
        assert html.count(f'xlink:href="/runs/{run_id}"') == 2 and f'href="/runs/{run_id}"' in html
    assert 'id="band-dimension"' in html and 'id="points-utilization"' in html
    assert 'id="band-utilization"' not in html  # no std stored: no band drawn
    refused = client.get("/trends?marker=nope")
    assert refused.status_code == 422 and "unknown_marker" in refused.text and "<svg" not in refused.text
