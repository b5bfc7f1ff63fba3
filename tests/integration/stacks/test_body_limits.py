"""Request bodies are bounded before they are parsed, against a real uvicorn whose memory we read.

TestClient would hand the app the whole body at once, so these talk HTTP over a socket to a uvicorn
process and read its resident memory from /proc before and after each hostile request.
"""

from __future__ import annotations

import json
import select
import socket
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlparse

import httpx
import numpy as np
import pytest

from tests.integration.stack import Stack
from zootriage.app.settings import Settings

pytestmark = pytest.mark.slow  # streams hundreds of megabytes

MB = 1024 * 1024
GROWTH_BOUND = 100 * MB  # loose: the unbounded versions grew by 0.8-1.4 GB


@pytest.fixture(scope="module")
def api(api_only_stack: Stack) -> Stack:
    """The session's API-only uvicorn: an upload limit of 64 MB, so that a flood of small form fields
    fits under it and is refused for its number of parts, not its size."""
    assert api_only_stack.env["ZOOTRIAGE_UPLOAD_LIMIT_BYTES"] == str(64 * MB)
    return api_only_stack


def rss(stack: Stack) -> int:
    for line in Path(f"/proc/{stack.api.pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise AssertionError("no VmRSS")


def send_streamed(stack: Stack, path: str, headers: dict[str, str], chunks: Iterator[bytes]) -> bytes:
    """Send a body chunk by chunk over a raw socket, stopping as soon as the server answers; the answer."""
    url = urlparse(stack.base_url)
    with socket.create_connection((url.hostname, url.port), timeout=30) as sock:
        head = [f"POST {path} HTTP/1.1", f"Host: {url.hostname}", *(f"{k}: {v}" for k, v in headers.items())]
        sock.sendall(("\r\n".join(head) + "\r\n\r\n").encode())
        try:
            for chunk in chunks:
                if select.select([sock], [], [], 0)[0]:
                    break  # the server has answered before the body ended
                sock.sendall(chunk)
        except (BrokenPipeError, ConnectionResetError):
            pass
        answer = b""
        while b"\r\n\r\n" not in answer or not answer.rstrip().endswith(b"}"):
            data = sock.recv(65536)
            if not data:
                break
            answer += data
        return answer


def chunked(payload: Iterator[bytes]) -> Iterator[bytes]:
    for piece in payload:
        yield f"{len(piece):x}\r\n".encode() + piece + b"\r\n"
    yield b"0\r\n\r\n"


def test_declared_oversize_json_is_413_before_reading(api: Stack) -> None:
    before = rss(api)
    body = b'{"model": "' + b"x" * (400 * MB) + b'"}'
    answer = send_streamed(
        api,
        "/v1/jobs",
        {"Content-Type": "application/json", "Content-Length": str(len(body))},
        iter(body[i : i + MB] for i in range(0, len(body), MB)),
    )
    assert answer.startswith(b"HTTP/1.1 413"), answer[:200]
    assert b'"code":"payload_too_large"' in answer
    assert rss(api) - before < GROWTH_BOUND


def test_chunked_oversize_json_is_cut(api: Stack) -> None:
    before = rss(api)
    pieces = iter([b'{"model": "', *(b"x" * MB for _ in range(300)), b'"}'])
    answer = send_streamed(
        api, "/v1/jobs", {"Content-Type": "application/json", "Transfer-Encoding": "chunked"}, chunked(pieces)
    )
    assert answer.startswith(b"HTTP/1.1 413"), answer[:200]
    assert b'"code":"payload_too_large"' in answer
    assert rss(api) - before < GROWTH_BOUND


def test_a_flood_of_form_fields_is_refused_by_its_part_count(api: Stack) -> None:
    boundary = "zootriageboundary"
    field = f'--{boundary}\r\nContent-Disposition: form-data; name="f"\r\n\r\nv\r\n'.encode()
    body = field * 200_000 + f"--{boundary}--\r\n".encode()
    before = rss(api)
    answer = send_streamed(
        api,
        "/v1/checkpoints",
        {"Content-Type": f"multipart/form-data; boundary={boundary}", "Content-Length": str(len(body))},
        iter(body[i : i + 256 * 1024] for i in range(0, len(body), 256 * 1024)),
    )
    assert answer.startswith(b"HTTP/1.1 413"), answer[:200]
    assert b'"code":"too_many_parts"' in answer
    assert rss(api) - before < GROWTH_BOUND


def test_small_bodies_still_pass(api: Stack) -> None:
    answer = httpx.post(f"{api.base_url}/v1/jobs", json={"model": {"source": "magic"}}, timeout=30)
    assert (answer.status_code, answer.json()["code"]) == (422, "invalid_request")
    bad_length = send_streamed(api, "/v1/jobs", {"Content-Length": "12abc"}, iter([b"{}"]))
    assert bad_length.startswith(b"HTTP/1.1 400")


def test_label_values_do_not_size_memory_in_the_api(api: Stack, settings: Settings) -> None:
    """A 1 kB archive whose labels are [0, 2e7]: the list of recommendations no longer opens it."""
    root = settings.effective_data_roots[0]
    root.mkdir(parents=True, exist_ok=True)
    images = np.zeros((2, 8, 8), dtype=np.uint8)
    np.savez(root / "sparse-labels.npz", images=images, labels=np.array([0, 20_000_000]))
    before = rss(api)
    answer = httpx.get(
        f"{api.base_url}/v1/recommendations", params={"dataset": "archive:sparse-labels.npz"}, timeout=60
    )
    assert answer.status_code == 200, answer.text
    assert all(item["verdict"] is None for item in json.loads(answer.text)["items"])
    assert rss(api) - before < GROWTH_BOUND
