"""``/recommendations/{arch}``: one pair's verdict from stored runs (written straight into PostgreSQL),
in each of its states, and never a job queued by viewing it."""

from __future__ import annotations

import html
import re
import uuid
from urllib.parse import parse_qsl, urlencode

from fastapi.testclient import TestClient

from tests.integration.access import PUBLIC, app_client, stored_key
from tests.integration.stored_runs import QUERY, count_jobs, stored_run
from zootriage.app.api_keys import Scope
from zootriage.app.settings import Settings
from zootriage.core.catalogue.torchvision import weights_info
from zootriage.core.zoo.weight_caches import hub_checkpoint


def _state(page: str) -> str:
    found = re.search(r'id="state-text" data-state="([^"]+)"', page)
    assert found, page[-600:]
    return found.group(1)


def _store(database_url: str, arch: str, weights: str, d: float, u: float, **noise: float) -> str:
    model = {"source": "torchvision", "arch": arch, "weights": weights}
    stds = noise or None
    return str(
        stored_run(
            database_url, f"{arch}-{weights}", {"dimension": d, "utilization": u}, model=model, stds=stds
        )
    )


def _place_weights(arch: str, weights: str) -> None:
    """An empty file where torch hub caches the weights: the API's check looks for it, never reads it."""
    path = hub_checkpoint(weights_info(arch, weights).file)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.touch()


def test_a_pair_page_shows_each_state_and_queues_nothing(api: TestClient, database_url: str) -> None:
    url = f"/recommendations/mobilenet_v2?{QUERY}&rule=geometry"  # the rule whose states are shown
    form_only = api.get("/recommendations/mobilenet_v2")
    assert form_only.status_code == 200 and "state-text" not in form_only.text
    assert "71.88" in form_only.text  # v1's ImageNet acc@1 from the weights' metadata
    assert _state(api.get(url).text) == "not-scored"
    v1 = _store(database_url, "mobilenet_v2", "IMAGENET1K_V1", 1.0, 0.2)
    half = api.get(url).text
    assert _state(half) == "not-scored" and f'href="/runs/{v1}"' in half
    v2 = _store(database_url, "mobilenet_v2", "IMAGENET1K_V2", 1.5, 0.3)
    page = api.get(url)
    assert page.status_code == 200 and _state(page.text) == "v2"
    assert f"/compare?runs={v1},{v2}" in page.text
    table = page.text.split('id="comparisons-table"')[1].split("</table>")[0]
    assert re.findall(r'<th scope="row">([^<]+)</th>', table) == ["dimension", "utilization"]
    assert "0.5" in table  # the difference in dimension, with its noise beside it
    # 72.154 vs 71.878 acc@1 is within the noise of 50,000 images: ID accuracy picks neither
    assert 'id="accuracy-pick">undecided' in page.text and "no agreement to report" in page.text
    assert "does NOT show this rule beating ID accuracy" in page.text  # core/evidence.py's statement
    by_logme = api.get(url.replace("rule=geometry", "rule=logme")).text
    assert _state(by_logme) == "inconclusive"  # no run carries logme
    assert _state(api.get(url.replace("n_t=20", "n_t=30")).text) == "not-scored"
    assert count_jobs(database_url) == 0


def test_a_verdict_within_the_noise_is_inconclusive(api: TestClient, database_url: str) -> None:
    for weights, d, u in (("IMAGENET1K_V1", 1.0, 0.2), ("IMAGENET1K_V2", 1.5, 0.3)):
        _store(database_url, "regnet_x_400mf", weights, d, u, dimension=0.5, utilization=0.01)
    page = api.get(f"/recommendations/regnet_x_400mf?{QUERY}&rule=geometry").text
    assert _state(page) == "inconclusive" and "difference within noise" in page
    index = html.unescape(api.get(f"/recommendations?{QUERY}&rule=geometry").text)
    assert f'href="/recommendations/regnet_x_400mf?{QUERY.replace(":", "%3A")}"' in index
    row = index.split('href="/recommendations/regnet_x_400mf?')[1].split("</tr>")[0]
    # The index applies the default rule; whatever it decides, the row's answer names a rule and its
    # confidence, never a bare inconclusive (issue 24).
    assert "(rule " in row and "confidence" in row
    assert index.count('data-state="not-scored"') == 23
    assert count_jobs(database_url) == 0


def test_pair_page_errors_are_4xx_pages(api: TestClient) -> None:
    for path, status, says in (
        (f"/recommendations/no_such_net?{QUERY}", 404, "unknown_model"),
        (f"/recommendations/resnet18?{QUERY}", 422, "no_v1_v2_pair"),
        ("/recommendations/mobilenet_v2?dataset=nope", 422, "bad_reference"),
        (f"/recommendations/mobilenet_v2?{QUERY}&rule=radius", 422, "unknown_rule"),
        (f"/recommendations/mobilenet_v2?{QUERY.replace('n_t=20', 'n_t=0')}", 422, "n_t"),
    ):
        answer = api.get(path)
        assert answer.status_code == status, (path, answer.text[-400:])
        assert 'role="alert"' in answer.text and says in answer.text, (path, answer.text[-400:])


def test_the_page_queues_through_its_form_with_the_csrf_token(api: TestClient, database_url: str) -> None:
    url = f"/recommendations/mobilenet_v2?{QUERY}&rule=geometry"
    page = api.get(url).text
    assert 'id="queue-form" method="post" action="/recommendations/mobilenet_v2"' in page
    csrf = api.cookies["zt_csrf"]
    assert f'name="csrf" value="{csrf}"' in page
    form = {**dict(parse_qsl(QUERY)), "rule": "geometry"}
    for key, value in form.items():  # the form carries the dataset, sample, protocol and rule asked
        assert f'name="{key}" value="{value}"' in page
    forged = api.post("/recommendations/mobilenet_v2", data=form)
    assert forged.status_code == 403 and "csrf_failed" in forged.text
    refused = api.post("/recommendations/mobilenet_v2", data={**form, "csrf": csrf})
    assert refused.status_code == 404 and "weights_not_available" in refused.text  # no weights cached here
    assert _state(refused.text) == "not-scored"
    assert count_jobs(database_url) == 0
    for weights, d, u in (("IMAGENET1K_V1", 1.0, 0.2), ("IMAGENET1K_V2", 1.5, 0.3)):
        _store(database_url, "mobilenet_v2", weights, d, u)
        _place_weights("mobilenet_v2", weights)  # the static check before the stored runs are found
    done = api.post("/recommendations/mobilenet_v2", data={**form, "csrf": csrf}, follow_redirects=False)
    assert done.status_code == 303  # both stored: nothing to queue, back to the verdict
    assert done.headers["location"] == f"/recommendations/mobilenet_v2?{urlencode(form)}"
    assert _state(api.get(done.headers["location"]).text) == "v2"
    assert count_jobs(database_url) == 0
    noted = api.get(f"/recommendations/mobilenet_v2?{QUERY}&rule=logme&queued=2").text
    assert "2 job(s) are computing the missing runs" not in noted  # shown only while not scored
    _store(database_url, "regnet_x_400mf", "IMAGENET1K_V1", 1.0, 0.2)
    waiting = api.get(f"/recommendations/regnet_x_400mf?{QUERY}&queued=1").text
    assert _state(waiting) == "not-scored" and "1 job(s) are computing the missing runs" in waiting


def test_the_queue_form_sends_the_project_chosen(api: TestClient, database_url: str) -> None:
    project = f"rec-{uuid.uuid4().hex[:8]}"
    assert api.post("/v1/projects", json={"name": project}).status_code == 201
    url = f"/recommendations/mobilenet_v2?{QUERY}&rule=geometry"
    page = api.get(url).text
    select = page.split('<select id="q-project" name="project">')[1].split("</select>")[0]
    assert '<option value="default" selected>default</option>' in select
    assert f'<option value="{project}">{project}</option>' in select
    chosen = api.get(f"{url}&project={project}").text.split('id="q-project"')[1].split("</select>")[0]
    assert f'<option value="{project}" selected>' in chosen and 'value="default" selected' not in chosen
    csrf = api.cookies["zt_csrf"]
    form = {**dict(parse_qsl(QUERY)), "rule": "geometry", "csrf": csrf}
    for name, status, says in (
        ("nope-none", 404, "project_not_found"),
        ("Not A Slug", 422, "invalid_request"),
    ):
        refused = api.post("/recommendations/mobilenet_v2", data={**form, "project": name})
        assert refused.status_code == status and says in refused.text, refused.text[-400:]
        assert 'role="alert"' in refused.text and _state(refused.text) == "not-scored"
    runs = [
        _store(database_url, "mobilenet_v2", w, d, u)
        for w, d, u in (("IMAGENET1K_V1", 1.0, 0.2), ("IMAGENET1K_V2", 1.5, 0.3))
    ]
    for weights in ("IMAGENET1K_V1", "IMAGENET1K_V2"):
        _place_weights("mobilenet_v2", weights)
    done = api.post(
        "/recommendations/mobilenet_v2", data={**form, "project": project}, follow_redirects=False
    )
    assert done.status_code == 303
    assert dict(parse_qsl(done.headers["location"].split("?", 1)[1]))["project"] == project
    joined = api.get(f"/v1/runs?project={project}").json()["items"]
    assert sorted(run["id"] for run in joined) == sorted(runs)  # the stored runs joined the project chosen
    assert count_jobs(database_url) == 0


def test_the_queue_form_offers_and_takes_only_the_keys_projects(settings: Settings, clean_db: str) -> None:
    admin = {"X-API-Key": stored_key(clean_db, Scope.admin, name="root")}
    with app_client(settings, **PUBLIC) as client:
        for name in ("audio", "vision"):
            assert client.post("/v1/projects", json={"name": name}, headers=admin).status_code == 201
        made = client.post(
            "/v1/api-keys", json={"name": "ci", "scopes": ["write"], "projects": ["audio"]}, headers=admin
        )
        audio = {"X-API-Key": made.json()["key"]}
        page = client.get(f"/recommendations/mobilenet_v2?{QUERY}", headers=audio).text
        select = page.split('<select id="q-project" name="project">')[1].split("</select>")[0]
        assert re.findall(r'<option value="([^"]+)"', select) == ["audio"]
        csrf = client.cookies["zt_csrf"]
        form = {**dict(parse_qsl(QUERY)), "csrf": csrf}
        for chosen in ({"project": "vision"}, {}):  # another project, or the default one: not the key's
            refused = client.post("/recommendations/mobilenet_v2", data={**form, **chosen}, headers=audio)
            assert refused.status_code == 403 and "forbidden" in refused.text, refused.text[-400:]
            assert 'role="alert"' in refused.text and _state(refused.text) == "not-scored"
    assert count_jobs(clean_db) == 0
