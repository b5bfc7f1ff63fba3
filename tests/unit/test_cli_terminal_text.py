"""Service text reaches the terminal inert: the client commands print what the service answers (run names,
architectures, tags, file names, job errors) with every control and format character shown as its escape
(``\\x1b``, ``\\u202e``), never raw, and ordinary text (accents, emoji, newlines) as it is. The commands
run for real against crafted answers from a mocked HTTP transport (``app.cli.terminal_text``)."""

from __future__ import annotations

import json
import re
import unicodedata
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
from typer.testing import CliRunner, Result

import zootriage.app.cli as cli_package
from zootriage.app.cli import app, client
from zootriage.app.cli.client import Client
from zootriage.app.cli.terminal_text import escape, terminal_safe

# Retitle the window (OSC ... BEL), clear the screen, reset the terminal, a C1 CSI, a bidi override, NUL.
HOSTILE = "\x1b]0;owned\x07\x1b[2J\x1bc\x9b31m\u202eevil\x00end"
SHOWN = "\\x1b]0;owned\\x07\\x1b[2J\\x1bc\\x9b31m\\u202eevil\\x00end"  # what the reader sees
ORDINARY = "Zürich café naïve 🙂 👩\u200d💻\nsecond line"
RUN_ID = "11111111-1111-1111-1111-111111111111"
JOB_ID = "22222222-2222-2222-2222-222222222222"
WIDE = {"COLUMNS": "400"}  # no column left out, no cell wrapped


def inert(text: str) -> list[str]:
    """The characters of ``text`` that would act on a terminal or reorder what follows (none, if safe)."""
    return [c for c in text if unicodedata.category(c) in ("Cc", "Cf", "Cs") and c not in "\n\t\u200d"]


def assert_inert(result: Result) -> None:
    for stream in (result.stdout, result.stderr):
        assert inert(stream) == [], repr(stream)


Answer = httpx.Response | Callable[[httpx.Request], httpx.Response]


@pytest.fixture
def service(monkeypatch: pytest.MonkeyPatch) -> dict[str, Answer]:
    """The answers of a fake service, by path: the real ``Client`` talks to them through httpx's mock
    transport (so its error handling runs too); any other path answers 404 with a hostile message."""
    answers: dict[str, Answer] = {}

    def handle(request: httpx.Request) -> httpx.Response:
        answer = answers.get(request.url.path)
        if answer is None:
            return httpx.Response(404, json={"code": "not_found", "message": f"no {HOSTILE}"})
        return answer(request) if callable(answer) else answer

    def init(self: Client, url: str, api_key: str | None, _timeout: float = 120.0) -> None:
        self.http = httpx.Client(base_url=url, transport=httpx.MockTransport(handle))

    monkeypatch.setattr(Client, "__init__", init)
    monkeypatch.delenv("ZOOTRIAGE_PROJECT", raising=False)
    # The client's consoles fix their width from COLUMNS when the module is first imported (by whichever
    # test came first); here they follow the runner's COLUMNS (WIDE), so no cell is wrapped
    for console in (client.out, client.err):
        monkeypatch.setattr(console, "_width", None)
    return answers


def invoke(*args: str) -> Result:
    return CliRunner().invoke(app, [*args, "--url", "http://zoo.test"], env=WIDE)


def job(**fields: Any) -> dict[str, Any]:
    return {
        "id": JOB_ID, "name": HOSTILE, "status": "succeeded", "run_id": RUN_ID, "error": None,
        "created_at": "2026-01-01T00:00:00", "progress": {"stage": "done", "done": 1, "total": 1},
        **fields,
    }


def run(**fields: Any) -> dict[str, Any]:
    return {
        "id": RUN_ID, "label": HOSTILE, "architecture": HOSTILE, "tags": {"team": HOSTILE},
        "warnings": [HOSTILE], "created_at": "2026-01-01T00:00:00", "markers": {}, "archived_at": None,
        **fields,
    }


# --- the helper -------------------------------------------------------------------------------------


def test_controls_formats_and_surrogates_are_shown_as_escapes() -> None:
    assert terminal_safe(HOSTILE) == SHOWN
    assert inert(terminal_safe(HOSTILE)) == []
    assert terminal_safe("\x7f\x85\ufeff\u200b\u2066x\u2069") == "\\x7f\\x85\\ufeff\\u200b\\u2066x\\u2069"
    assert terminal_safe("a\ud800b") == "a\\ud800b"  # json.loads('"\\ud800"') makes one; stdout cannot
    assert terminal_safe("\U000e0041") == "\\U000e0041"  # a tag character: invisible text


def test_ordinary_text_newlines_and_tabs_are_kept() -> None:
    for text in (ORDINARY, "a\tb", "resnet50.a1_in1k", "[x] café", ""):
        assert terminal_safe(text) == text


def test_escape_is_terminal_safe_and_markup_safe() -> None:
    assert escape(f"[bold]{HOSTILE}[/bold]") == f"\\[bold]{SHOWN}\\[/bold]"


def test_every_cli_module_escapes_with_the_terminal_safe_escape() -> None:
    """rich's own ``escape`` leaves controls in: no command may use it instead of ``terminal_text``'s."""
    cli = Path(cli_package.__file__).parent
    direct = [p.name for p in cli.glob("*.py") if p.name != "terminal_text.py"
              and re.search(r"from rich\.markup import|rich\.markup\.escape", p.read_text())]
    assert direct == []


# --- the commands -----------------------------------------------------------------------------------


def test_status_shows_the_job_and_its_run_inert(service: dict[str, Answer]) -> None:
    service[f"/v1/jobs/{JOB_ID}"] = httpx.Response(200, json=job())
    service[f"/v1/runs/{RUN_ID}"] = httpx.Response(200, json=run())
    result = invoke("status", JOB_ID, "--no-watch")
    assert result.exit_code == 0, result.output
    assert_inert(result)
    assert result.stdout.count(SHOWN) == 4  # job name, run label, architecture, tag
    assert f"warning {SHOWN}: {SHOWN}" in result.stderr


def test_status_prints_ordinary_text_as_it_is(service: dict[str, Answer]) -> None:
    service[f"/v1/jobs/{JOB_ID}"] = httpx.Response(200, json=job(name=ORDINARY))
    service[f"/v1/runs/{RUN_ID}"] = httpx.Response(
        200, json=run(label=ORDINARY, architecture="vit_b_16", tags={"a": "tab\there"}, warnings=[])
    )
    result = invoke("status", JOB_ID, "--no-watch")
    assert result.exit_code == 0, result.output
    assert result.stdout.count(ORDINARY) == 2 and "vit_b_16" in result.stdout
    assert "\\x" not in result.stdout and "\\u" not in result.stdout  # nothing escaped, the tab included


def test_a_failed_jobs_error_and_stage_are_inert(service: dict[str, Answer]) -> None:
    error = {"code": "bad_dataset", "message": f"cannot open images/{HOSTILE}.jpg"}
    progress = {"stage": HOSTILE, "done": 0, "total": 1}
    service[f"/v1/jobs/{JOB_ID}"] = httpx.Response(
        200, json=job(status="failed", run_id=None, error=error, progress=progress)
    )
    result = invoke("status", JOB_ID, "--watch")
    assert result.exit_code == 2
    assert_inert(result)
    assert f"bad_dataset: cannot open images/{SHOWN}.jpg" in result.stderr


@pytest.mark.parametrize(
    "refusal",
    [
        httpx.Response(409, json={"code": "conflict", "message": HOSTILE}),
        httpx.Response(502, text=f"<html>{HOSTILE}</html>"),  # not the service's JSON
    ],
    ids=["json", "text"],
)
def test_the_services_refusals_are_printed_inert(service: dict[str, Answer], refusal: httpx.Response) -> None:
    service[f"/v1/jobs/{JOB_ID}"] = refusal
    result = invoke("status", JOB_ID, "--no-watch")
    assert result.exit_code == 2
    assert_inert(result)
    assert SHOWN in result.stderr


def test_history_lists_runs_inert(service: dict[str, Answer]) -> None:
    ordinary = run(
        id=RUN_ID.replace("1", "3"), label="Zürich 🙂", architecture="resnet50", tags={}, warnings=[]
    )
    service["/v1/runs"] = httpx.Response(200, json={"items": [run(), ordinary], "next_cursor": HOSTILE})
    result = invoke("history")
    assert result.exit_code == 0, result.output
    assert_inert(result)
    assert result.stdout.count(SHOWN) == 3 and f"team={SHOWN}" in result.stdout  # label, architecture, tag
    assert "Zürich 🙂" in result.stdout and "resnet50" in result.stdout
    assert f"--cursor {SHOWN}" in result.stderr


def test_show_prints_a_run_inert(service: dict[str, Answer]) -> None:
    record = run(
        weights_sha256="ab" * 32, dataset={"source": "folder", "path": f"data/{HOSTILE}"},
        dataset_fingerprint="cd" * 32, n_images=10, sampling={"classes": 2, "per_class": 5, "seed": 0},
        protocol={"repeats": 3}, device=HOSTILE, timings={"extract": 1.0}, description=ORDINARY,
        markers=[
            {"name": "dimension", "applicable": True, "value": 1.5, "std": 0.1, "reason": HOSTILE},
            {"name": HOSTILE, "applicable": False, "value": None, "std": None, "reason": None},
        ],
    )
    service[f"/v1/runs/{RUN_ID}"] = httpx.Response(200, json=record)
    result = invoke("show", RUN_ID)
    assert result.exit_code == 0, result.output
    assert_inert(result)
    assert f"folder:data/{SHOWN}" in result.stdout and ORDINARY in result.stdout
    assert result.stdout.count(SHOWN) == 7  # label, architecture, dataset, device, tag, note, marker name


def test_jobs_lists_names_stages_and_errors_inert(service: dict[str, Answer]) -> None:
    failed = job(status="failed", run_id=None, error={"code": "bad_checkpoint", "message": HOSTILE},
                 progress={"stage": HOSTILE, "done": 0, "total": 1})
    service["/v1/jobs"] = httpx.Response(200, json={"items": [failed], "next_cursor": None})
    result = invoke("jobs")
    assert result.exit_code == 0, result.output
    assert_inert(result)
    assert f"bad_checkpoint: {SHOWN}" in result.stdout and result.stdout.count(SHOWN) == 3


def test_uploads_lists_file_names_inert(service: dict[str, Answer]) -> None:
    item = {"id": "ef" * 32, "created_at": "2026-01-01T00:00:00", "filename": f"{HOSTILE}.pt2",
            "name": HOSTILE, "format": "pt2", "size_bytes": 2**20, "tags": {"k": HOSTILE}}
    service["/v1/checkpoints"] = httpx.Response(200, json={"items": [item], "next_cursor": None})
    result = invoke("uploads")
    assert result.exit_code == 0, result.output
    assert_inert(result)
    assert f"{SHOWN}.pt2" in result.stdout and f"k={SHOWN}" in result.stdout


def test_text_printed_without_escape_is_inert_too(service: dict[str, Answer]) -> None:
    """The consoles are the backstop: ``cancel`` prints the job's id and state as the service sent them."""
    service[f"/v1/jobs/{JOB_ID}"] = httpx.Response(200, json=job(status=HOSTILE))
    result = invoke("cancel", JOB_ID)
    assert result.exit_code == 0, result.output
    assert_inert(result)
    assert f"job {JOB_ID}: {SHOWN}" in result.stdout


def test_json_output_is_the_answer_as_sent(service: dict[str, Answer]) -> None:
    service[f"/v1/jobs/{JOB_ID}"] = httpx.Response(200, json=job())
    result = invoke("status", JOB_ID, "--no-watch", "--json")
    assert result.exit_code == 0, result.output
    assert_inert(result)  # json.dumps writes controls as \\uXXXX itself
    assert json.loads(result.stdout) == job()
