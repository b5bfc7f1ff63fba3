"""The commands that queue many jobs send ``--project`` as ``?project=`` (as ``submit`` does), and
``ckpt:`` takes a short upload id, which the service resolves: what they send, with the HTTP calls
recorded instead of made."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from typer.testing import CliRunner

from zootriage.app.cli import app
from zootriage.app.cli.client import Client

Call = tuple[str, str, dict[str, Any]]


@pytest.fixture
def calls(monkeypatch: pytest.MonkeyPatch) -> list[Call]:
    """Every call the client makes; each answers 201 with a fresh sweep, or 200 with a verdict."""
    made: list[Call] = []

    def call(_self: Client, method: str, path: str, **kwargs: Any) -> httpx.Response:
        made.append((method, path, kwargs))
        if path.startswith("/v1/sweeps"):
            return httpx.Response(201, json={"id": "s1", "progress": {"total": 1}})
        return httpx.Response(200, json={"verdict": "v2"})

    monkeypatch.setattr(Client, "call", call)
    monkeypatch.delenv("ZOOTRIAGE_PROJECT", raising=False)
    return made


@pytest.mark.parametrize(("option", "params"), [([], {}), (["--project", "vision"], {"project": "vision"})])
def test_sweep_start_sends_its_project_and_a_short_upload_id(
    calls: list[Call], option: list[str], params: dict[str, str]
) -> None:
    args = ["sweep", "start", "ckpt:0123abcd", "--dataset", "builtin:mnist", "--no-wait", "--json"]
    result = CliRunner().invoke(app, [*args, *option])
    assert result.exit_code == 0, result.output
    [(method, path, sent)] = calls
    assert (method, path, sent["params"]) == ("POST", "/v1/sweeps", params)
    assert sent["json"]["models"] == [{"source": "checkpoint", "path": "0123abcd.pt2"}]


@pytest.mark.parametrize(("option", "project"), [([], None), (["--project", "vision"], "vision")])
def test_recommend_sends_its_project(calls: list[Call], option: list[str], project: str | None) -> None:
    args = ["recommend", "mobilenet_v2", "--dataset", "builtin:digits", "--json"]
    result = CliRunner().invoke(app, [*args, *option])
    assert result.exit_code == 0, result.output
    [(method, path, sent)] = calls
    assert (method, path) == ("POST", "/v1/recommendations/mobilenet_v2")
    assert sent["params"].get("project") == project and sent["params"]["dataset"] == "builtin:digits"


@pytest.mark.parametrize(
    ("option", "env", "params"),
    [
        ([], None, {"limit": 20}),
        (["--project", "vision"], None, {"limit": 20, "project": "vision"}),
        ([], "audio", {"limit": 20, "project": "audio"}),
        (["--project", "vision"], "audio", {"limit": 20, "project": "vision"}),
    ],
)
def test_sweep_list_sends_its_project(
    calls: list[Call], option: list[str], env: str | None, params: dict[str, Any]
) -> None:
    environment = {"ZOOTRIAGE_PROJECT": env} if env else {}
    result = CliRunner().invoke(app, ["sweep", "list", "--json", *option], env=environment)
    assert result.exit_code == 0, result.output
    [(method, path, sent)] = calls
    assert (method, path, sent["params"]) == ("GET", "/v1/sweeps", params)
