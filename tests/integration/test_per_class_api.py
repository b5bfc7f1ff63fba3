"""A request for 1 image per class is a 422 with ``{code, message}`` at the request, not a failed job."""

from __future__ import annotations

from typing import Any

from fastapi.testclient import TestClient
from sqlalchemy import func, select

from zootriage.app.db.models import Job
from zootriage.app.db.session import session_scope

MODEL = {"source": "checkpoint", "path": "f" * 64 + ".pt2"}


def test_one_image_per_class_is_refused_at_the_request(client: TestClient, clean_db: str) -> None:
    body = {"model": MODEL, "dataset": {"source": "builtin", "name": "mnist"}, "sampling": {"per_class": 1}}
    answer = client.post("/v1/jobs", json=body)
    assert answer.status_code == 422, answer.text
    assert answer.json()["code"] == "invalid_request" and "per_class" in answer.json()["message"]
    refused = client.get("/v1/recommendations", params={"dataset": "builtin:mnist", "per_class": 1})
    assert (refused.status_code, refused.json()["code"]) == (422, "invalid_request")
    with session_scope(clean_db) as session:
        assert session.scalar(select(func.count()).select_from(Job)) == 0


def test_a_dataset_with_a_one_image_class_is_refused_at_the_request(
    client: TestClient, program_ref: dict[str, Any]
) -> None:
    """foolbox's ImageNet samples hold one image per class: the default sample takes what each class
    has, which would have left the markers one point per class."""
    body = {"model": program_ref, "dataset": {"source": "builtin", "name": "foolbox-imagenet"}}
    answer = client.post("/v1/jobs", json=body)
    assert (answer.status_code, answer.json()["code"]) == (422, "bad_sampling"), answer.text
