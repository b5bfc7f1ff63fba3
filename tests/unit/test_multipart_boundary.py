"""The part counter and the upload parser cut a multipart body at the same boundary.

An app of one upload route, behind the real ``BodyLimitMiddleware`` and parsing with the real
``receive_file``: a body of many small parts must be refused for its number of parts whatever the
Content-Type does to make the counter look for another delimiter than the parser.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from fastapi import FastAPI, Request
from fastapi.testclient import TestClient

from zootriage.app import multipart
from zootriage.app.api.errors import install_error_handlers
from zootriage.app.body_limits import MAX_PARTS, BodyLimitMiddleware
from zootriage.app.services.uploads import receive_file
from zootriage.app.settings import Settings


@pytest.fixture
def client(tmp_path: Path) -> TestClient:
    app = FastAPI()
    install_error_handlers(app)
    app.add_middleware(BodyLimitMiddleware, settings=Settings(upload_limit_bytes=1024 * 1024))

    @app.post("/v1/checkpoints")
    async def upload(request: Request) -> dict[str, int]:
        received = await receive_file(request.headers.get("content-type"), request.stream(), tmp_path, 1024)
        return {"fields": len(received.fields)}

    return TestClient(app, raise_server_exceptions=False)


def _body(boundary: str, parts: int) -> bytes:
    fields = "".join(
        f'--{boundary}\r\nContent-Disposition: form-data; name="f{i}"\r\n\r\nv\r\n' for i in range(parts)
    )
    upload = f'--{boundary}\r\nContent-Disposition: form-data; name="file"; filename="m.pt2"\r\n\r\nx\r\n'
    return (fields + upload + f"--{boundary}--\r\n").encode()


def _post(client: TestClient, content_type: str, body: bytes) -> tuple[int, str]:
    answer = client.post("/v1/checkpoints", content=body, headers={"Content-Type": content_type})
    return answer.status_code, answer.json().get("code", "")


def test_a_plain_boundary_is_counted_and_parsed() -> None:
    assert multipart.boundary(b"multipart/form-data; boundary=abc") == b"abc"
    assert multipart.boundary(b'multipart/form-data; boundary="a;b\\"c"') == b'a;b"c'
    assert multipart.boundary(b"application/json") is None


def test_a_few_parts_pass(client: TestClient) -> None:
    headers = {"Content-Type": "multipart/form-data; boundary=bb"}
    assert client.post("/v1/checkpoints", content=_body("bb", 3), headers=headers).json() == {"fields": 3}


def test_many_parts_are_refused(client: TestClient) -> None:
    assert _post(client, "multipart/form-data; boundary=bb", _body("bb", 200)) == (413, "too_many_parts")


@pytest.mark.parametrize(
    "content_type",
    [
        "multipart/form-data; boundary=counted; boundary=parsed",
        "multipart/form-data; boundary=parsed; boundary=counted",
        "multipart/form-data; Boundary=counted; boundary=parsed",
        "multipart/form-data; boundary*=counted; boundary=parsed",
        "multipart/form-data; boundary=parsed; BOUNDARY=parsed",
    ],
)
def test_two_boundary_parameters_are_refused(client: TestClient, content_type: str) -> None:
    assert _post(client, content_type, _body("parsed", 200)) == (400, "bad_request")


def test_a_boundary_in_capitals_is_counted(client: TestClient) -> None:
    capitals = "multipart/form-data; Boundary=parsed"
    assert _post(client, capitals, _body("parsed", 200)) == (413, "too_many_parts")
    assert _post(client, "multipart/form-data; boundary*=x", _body("x", 2)) == (400, "bad_request")


def test_a_quoted_boundary_is_counted_as_the_parser_reads_it(client: TestClient) -> None:
    """A regex stopping at the first quote would count ``--a\\`` while the parser splits at ``--a"b``."""
    quoted = 'multipart/form-data; boundary="a\\"b"'
    assert _post(client, quoted, _body('a"b', 200)) == (413, "too_many_parts")
    assert _post(client, quoted, _body('a"b', MAX_PARTS - 2))[0] == 200


def test_two_content_type_headers_are_refused(client: TestClient) -> None:
    answer = client.post(
        "/v1/checkpoints",
        content=_body("parsed", 200),
        headers=[("Content-Type", "multipart/form-data; boundary=counted"),
                 ("Content-Type", "multipart/form-data; boundary=parsed")],
    )
    assert (answer.status_code, answer.json()["code"]) == (400, "bad_request")
