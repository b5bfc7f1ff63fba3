"""The client commands against a real HTTP server that answers what each test needs (a thread on a free
port): a redirect or a compressed body to ``download``, user text in URL paths, URLs httpx cannot send,
answers of an unexpected shape, output that cannot be written. Each ends with one line and status 2 (or
does the right thing), never a traceback and never status 1, which means only a failed gate."""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from zootriage.app.cli import app

SRC = str(Path(__file__).resolve().parents[2] / "src")
RUN = "0123abcd"
GATE = ["gate", "--candidate", f"run:{RUN}", "--baseline", "run:89abcdef",
        "--rule", "dimension: max_relative_drop 0.1", "--dataset", "builtin:mnist"]


@dataclass
class Answer:
    status: int = 200
    body: bytes = b"{}"
    headers: dict[str, str] = field(default_factory=lambda: {"Content-Type": "application/json"})


@dataclass
class Server:
    """What the server answers (``answer``, for every request) and what it was asked (``requests``: the
    method, the raw path as sent and the headers)."""

    url: str
    answer: Answer = field(default_factory=Answer)
    requests: list[tuple[str, str, dict[str, str]]] = field(default_factory=list)


@pytest.fixture
def server() -> Iterator[Server]:
    state = Server(url="")

    class Handler(BaseHTTPRequestHandler):
        def _answer(self) -> None:
            state.requests.append((self.command, self.path, dict(self.headers)))
            length = int(self.headers.get("Content-Length") or 0)
            self.rfile.read(length)
            body, headers = state.answer.body, dict(state.answer.headers)
            if "gzip" in self.headers.get("Accept-Encoding", "") and headers.pop("X-Gzip", None):
                body, headers["Content-Encoding"] = gzip.compress(body), "gzip"
            self.send_response(state.answer.status)
            for name, value in headers.items():
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        do_GET = do_POST = do_PUT = do_DELETE = do_PATCH = _answer

        def log_message(self, *args: object) -> None:
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    state.url = f"http://127.0.0.1:{httpd.server_address[1]}"
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield state
    httpd.shutdown()
    httpd.server_close()


def cli(server_url: str | None, *args: str) -> tuple[int, str]:
    """``zootriage ARGS`` in this process; an exception other than an exit fails the test's status check
    (Typer's runner then reports status 1)."""
    env = {"ZOOTRIAGE_URL": server_url, "ZOOTRIAGE_API_KEY": None, "ZOOTRIAGE_PROJECT": None}
    result = CliRunner().invoke(app, list(args), env=env)
    assert "Traceback" not in result.output
    return result.exit_code, " ".join(result.output.split())  # rich wraps long lines


# --- download ------------------------------------------------------------------------------------------


def test_a_redirect_is_refused_and_the_file_left_as_it_was(server: Server, tmp_path: Path) -> None:
    target = tmp_path / "features.safetensors"
    target.write_bytes(b"the features downloaded before")
    server.answer = Answer(302, b"", {"Location": "http://elsewhere.example/f"})
    code, output = cli(server.url, "download", RUN, "--features", "-o", str(target))
    assert code == 2 and "302" in output and "http://elsewhere.example/f" in output, output
    assert target.read_bytes() == b"the features downloaded before"
    assert [p.name for p in tmp_path.iterdir()] == [target.name]


def test_a_download_asks_for_the_bytes_as_stored(server: Server, tmp_path: Path) -> None:
    """A server that compresses when asked announces the compressed length; asking for identity keeps
    the announced length that of the bytes written."""
    report = json.dumps({"markers": list(range(2000))}).encode()
    server.answer = Answer(200, report, {"Content-Type": "application/json", "X-Gzip": "1"})
    target = tmp_path / "report.json"
    code, output = cli(server.url, "download", RUN, "--report", "--format", "json", "-o", str(target))
    assert code == 0, output
    assert target.read_bytes() == report
    assert server.requests[0][2]["Accept-Encoding"] == "identity"


# --- user text in URL paths ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "path"),
    [
        (["alias", "set", "default", "x/../prod", RUN], "/v1/projects/default/aliases/x%2F..%2Fprod"),
        (["alias", "show", "a/b", "prod"], "/v1/projects/a%2Fb/aliases/prod"),
        (["alias", "list", "p?q"], "/v1/projects/p%3Fq/aliases"),
        (["alias", "history", "p", "x#y"], "/v1/projects/p/aliases/x%23y/history"),
        (["sweep", "show", "../jobs"], "/v1/sweeps/..%2Fjobs"),
        (["sweep", "cancel", "s/../x"], "/v1/sweeps/s%2F..%2Fx"),
        (["recommend", "../runs", "--dataset", "builtin:mnist"], "/v1/recommendations/..%2Fruns?dataset="),
    ],
)
def test_user_text_stays_one_path_segment(server: Server, args: list[str], path: str) -> None:
    cli(server.url, *args)
    assert server.requests and server.requests[0][1].startswith(path), server.requests


def test_a_dot_segment_is_refused(server: Server) -> None:
    code, output = cli(server.url, "alias", "show", "default", "..")
    assert code == 2 and "'..' is not an alias" in output, output
    assert server.requests == []


# --- URLs httpx cannot send ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "args",
    [["projects", "list"], ["history"], ["download", RUN, "--report"], ["sweep", "list"]],
)
def test_a_url_that_does_not_parse_exits_2(args: list[str]) -> None:
    code, output = cli("http://127.0.0.1:abc", *args)
    assert code == 2 and "is not a URL" in output, output


def test_a_path_too_long_to_send_exits_2(server: Server) -> None:
    code, output = cli(server.url, "show", "a" * 70_000)
    assert code == 2 and "cannot send the request" in output, output
    code, output = cli(server.url, "download", "a" * 70_000, "--report")
    assert code == 2 and "cannot send the request" in output, output


# --- answers of an unexpected shape --------------------------------------------------------------------


@pytest.mark.parametrize("body", [b"{}", b"[]", b"null", b'{"status": "failed"}'])
@pytest.mark.parametrize(
    "args",
    [GATE, ["show", RUN], ["projects", "list"], ["alias", "show", "default", "prod"], ["sweep", "show", RUN],
     ["trend", "--marker", "d_eff"], ["jobs"]],
)
def test_an_answer_of_another_shape_exits_2_not_1(server: Server, args: list[str], body: bytes) -> None:
    server.answer = Answer(200, body)
    code, output = cli(server.url, *args)
    assert code == 2 and "error internal:" in output, output


# --- output that cannot be written ---------------------------------------------------------------------


def _run_cli(server: Server, args: list[str], **popen: Any) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": SRC, "ZOOTRIAGE_URL": server.url}
    command = [sys.executable, "-c", "from zootriage.app.cli import main; main()", *args]
    return subprocess.run(command, env=env, stderr=subprocess.PIPE, text=True, timeout=120, **popen)


@pytest.fixture
def projects(server: Server) -> Server:
    items = [{"name": f"p{i}", "description": None, "runs": 1, "jobs": 1, "aliases": 0} for i in range(3000)]
    server.answer = Answer(200, json.dumps({"items": items}).encode())
    return server


@pytest.mark.parametrize("args", [["projects", "list"], ["projects", "list", "--json"]])
def test_a_full_disk_under_stdout_exits_2(projects: Server, args: list[str]) -> None:
    with open("/dev/full", "w") as full:
        done = _run_cli(projects, args, stdout=full)
    assert done.returncode == 2 and "No space left on device" in done.stderr, done.stderr
    assert "Traceback" not in done.stderr and "Exception ignored" not in done.stderr


def test_a_reader_that_went_away_exits_2_quietly(projects: Server) -> None:
    read, write = os.pipe()
    os.close(read)
    try:
        done = _run_cli(projects, ["projects", "list", "--json"], stdout=write)
    finally:
        os.close(write)
    assert done.returncode == 2 and done.stderr == "", done.stderr


def test_a_closed_stdout_exits_2(projects: Server) -> None:
    done = _run_cli(projects, ["projects", "list", "--json"], preexec_fn=lambda: os.close(1))
    assert done.returncode == 2 and "standard output is closed" in done.stderr, done.stderr


# --- service and admin commands with bad settings ------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "env", "says"),
    [
        (["serve"], {"ZOOTRIAGE_PORT": "abc"}, "error settings: ZOOTRIAGE_PORT:"),
        (["migrate"], {"ZOOTRIAGE_DATABASE_URL": "garbage"}, "error database:"),
        (["api-keys", "list"], {"ZOOTRIAGE_DATABASE_URL": "garbage"}, "error database:"),
        (["migrate"], {"ZOOTRIAGE_DATABASE_URL": "postgresql+psycopg://127.0.0.1:9/d"}, "error database:"),
    ],
)
def test_bad_settings_are_one_line(args: list[str], env: dict[str, str], says: str) -> None:
    command = [sys.executable, "-c", "from zootriage.app.cli import main; main()", *args]
    done = subprocess.run(command, env={**os.environ, "PYTHONPATH": SRC, **env}, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 2 and says in done.stderr, done.stderr
    assert "Traceback" not in done.stderr


def test_the_timeout_bounds_each_request_too() -> None:
    """``status JOB --timeout 2`` against a service that never answered waited two minutes, the HTTP
    client's own limit: a command's --timeout now bounds each of its requests as well."""
    from zootriage.app.cli.client import REQUEST_TIMEOUT_S, Client

    assert Client("http://127.0.0.1:9", None, 2.0).http.timeout.read == 2.0
    assert Client("http://127.0.0.1:9", None, 10_000.0).http.timeout.read == REQUEST_TIMEOUT_S
    assert Client("http://127.0.0.1:9", None).http.timeout.read == REQUEST_TIMEOUT_S


@pytest.mark.parametrize("value", ["nan", "inf", "0", "-5"])
def test_a_timeout_that_is_no_number_of_seconds_is_refused(value: str) -> None:
    args = ["status", "0123abcd", "--timeout", value, "--url", "http://127.0.0.1:9"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 2 and "number of seconds" in result.output, result.output


def test_history_as_csv_prints_only_csv(server: Server) -> None:
    """A page that is not CSV (a proxy's login page, another service) was printed as the table, exit 0."""
    server.answer = Answer(200, b"<html>sign in</html>", {"Content-Type": "text/html; charset=utf-8"})
    code, output = cli(server.url, "history", "--csv")
    assert code == 2 and "text/html" in output and "sign in" not in output, output
    server.answer = Answer(200, b"run_id,name\r\nabc,x\r\n", {"Content-Type": "text/csv; charset=utf-8"})
    code, output = cli(server.url, "history", "--csv")
    assert code == 0 and "run_id,name" in output, output
