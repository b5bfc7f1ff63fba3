"""``zootriage download RUN --features|--report``: a run's extracted features or its report, to a file.

The answer is streamed to a temporary file next to the destination (``.NAME.<random>.partial``), checked
against the length the service announced, flushed to disk and renamed over the destination: ``FILE``
is the whole download or left as it was, never half written. ``RUN`` is the run's id or a unique
prefix of it (8 hex digits or more, resolved by the service). Without ``-o`` the file is named as the
service names it (``run-<short id>-features.safetensors``, ``run-<short id>-report.html``) in the
current folder. Like the other client commands it imports httpx, typer and rich only; every failure
(the service's ``{code, message}``, an unreachable service, a folder that does not exist) is one line on
stderr and exit status 2.
"""

from __future__ import annotations

import os
import re
import tempfile
from pathlib import Path
from typing import Annotated

import httpx
import typer

from zootriage.app.cli.client import (
    DEFAULT_URL,
    ApiKey,
    ServiceError,
    Url,
    _errors_exit,
    _fail,
    err,
    http_client,
    id_path,
    unreachable,
)

FORMATS = {"features": ("safetensors", "npz"), "report": ("html", "json")}
_FILENAME = re.compile(r'filename="([A-Za-z0-9._-]+)"')
CHUNK = 1 << 20


def _refusal(response: httpx.Response, path: str) -> ServiceError:
    """Any answer but 200, before anything is written: the service's ``{code, message}`` for an error,
    where a redirect points (no download follows one: the file is the service's own answer or none)."""
    if response.status_code < 400:
        where = response.headers.get("location")
        detail = f"to {where}" if where else "not the file"
        return ServiceError(f"GET {path} answered {response.status_code} ({detail}); nothing was written")
    response.read()
    try:
        body = response.json()
        detail = f"{body['code']}: {body['message']}"
    except (ValueError, KeyError, TypeError):
        detail = response.text[:300]
    return ServiceError(f"GET {path} answered {response.status_code} ({detail})")


def _destination(out: Path | None, response: httpx.Response) -> Path:
    if out is not None:
        return out
    named = _FILENAME.search(response.headers.get("content-disposition", ""))
    if named is None:
        raise ServiceError("the service named no file for this download: give -o FILE")
    return Path(named.group(1))


def fetch_to_file(
    http: httpx.Client, path: str, params: dict[str, str], out: Path | None
) -> tuple[Path, int]:
    """Stream ``GET path`` into ``out`` atomically (module docstring); where it went and its size."""
    try:
        # identity: the announced length is then the length of the bytes written
        with http.stream("GET", path, params=params, headers={"Accept-Encoding": "identity"}) as response:
            if response.status_code != 200:
                raise _refusal(response, path)
            dest = _destination(out, response)
            folder = dest.parent if str(dest.parent) else Path(".")
            if not folder.is_dir():
                raise ServiceError(f"-o {dest}: the folder {folder} does not exist")
            announced = response.headers.get("content-length")
            fd, name = tempfile.mkstemp(dir=folder, prefix=f".{dest.name}.", suffix=".partial")
            partial = Path(name)
            try:
                written = 0
                with os.fdopen(fd, "wb") as handle:
                    for piece in response.iter_bytes(CHUNK):
                        handle.write(piece)
                        written += len(piece)
                    handle.flush()
                    os.fsync(handle.fileno())
                if announced is not None and written != int(announced):
                    raise ServiceError(
                        f"the download ended after {written} of {announced} bytes; {dest} was left as it was"
                    )
                os.replace(partial, dest)
            finally:
                partial.unlink(missing_ok=True)
    except (httpx.HTTPError, httpx.InvalidURL) as exc:
        raise unreachable(http, exc) from None
    return dest, written


def download(
    run: Annotated[str, typer.Argument(help="the run's id, or its first 8 or more hex digits")],
    features: Annotated[
        bool, typer.Option("--features", help="its extracted features, logits and labels")
    ] = False,
    report: Annotated[bool, typer.Option("--report", help="its self-contained report")] = False,
    output_format: Annotated[
        str | None,
        typer.Option(
            "--format", help="features: safetensors (default) or npz; report: html (default) or json"
        ),
    ] = None,
    out: Annotated[
        Path | None,
        typer.Option("-o", "--out", help="the file to write (default: the service's name, here)"),
    ] = None,
    url: Url = DEFAULT_URL,
    api_key: ApiKey = None,
) -> None:
    """Download a run's features (safetensors or npz) or its report (HTML or JSON) to a file."""
    if features == report:
        _fail("give exactly one of --features and --report")
    what = "features" if features else "report"
    chosen = output_format or FORMATS[what][0]
    if chosen not in FORMATS[what]:
        _fail(f"--format {chosen!r}: {what} come as {' or '.join(FORMATS[what])}")
    with _errors_exit(), http_client(url, api_key) as http:
        path = f"/v1/runs/{id_path(run)}/{what}"
        dest, size = fetch_to_file(http, path, {"format": chosen}, out)
        err.print(f"wrote {dest} ({size} bytes, {what} as {chosen})")


def register(app: typer.Typer) -> None:
    app.command("download")(download)
