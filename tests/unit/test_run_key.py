"""The run key covers everything that changes a run's numbers, and nothing that only labels it.

Each case goes from a job body (the API's ``JobRequest``) through the request normalisation the API
stores (``app.services.admission.normalised_request``) to the row the worker writes
(``worker.runner._run_row``): the field is shown to reach the key, not only the key function to hash
its arguments. Two jobs whose run keys differ never share a run (the key is unique, and a duplicate
key is what links a job to a stored run).
"""

from __future__ import annotations

import copy
import hashlib
import uuid
from collections.abc import Callable
from typing import Any

import pytest

from tests.conftest import MNIST_NORMALISED, MNIST_RAW
from zootriage.app.db.run_key import request_key
from zootriage.app.schemas.jobs import JobRequest
from zootriage.app.services.admission import normalised_request
from zootriage.core.data.refs import Sampling
from zootriage.core.protocol import Protocol
from zootriage.core.scoring import ScoreResult
from zootriage.core.zoo.loader import ModelInfo
from zootriage.worker.runner import Claimed, _run_row

WEIGHTS = hashlib.sha256(b"weights").hexdigest()
FINGERPRINT = hashlib.sha256(b"sample").hexdigest()
BASE: dict[str, Any] = {
    "model": {"source": "checkpoint", "path": f"{WEIGHTS}.pt2"},
    "dataset": {"source": "builtin", "name": "mnist"},
    "sampling": {"per_class": 20, "split": "test"},
    "protocol": {"n_t": 100},
}


def stored_key(body: dict[str, Any], weights: str = WEIGHTS, fingerprint: str = FINGERPRINT) -> str:
    """The run key of the row the worker stores for this job body, scored as ``weights`` on the sample
    ``fingerprint``."""
    request = normalised_request(JobRequest.model_validate(body))
    claimed = Claimed(
        uuid.uuid4(), request_key(request), request, 0.0, body.get("name"), dict(body.get("tags", {}))
    )
    info = ModelInfo("checkpoint", "MNISTNet", "upload", None, 10, 10, None, "fc")
    result = ScoreResult(
        markers={}, weights_sha256=weights, dataset_fingerprint=fingerprint, model=info, n_images=200,
        n_classes=10, feature_dim=8, logits_match_labels=False, timings={}, device="cpu",
        features_cached=False,
    )
    return _run_row(claimed, result, "MNISTNet", "worker@test").run_key


def changed(part: str, **values: Any) -> Callable[[dict[str, Any]], None]:
    def change(body: dict[str, Any]) -> None:
        body[part] = {**body[part], **values}

    return change


# One case per field that changes the numbers, named by the field.
SAMPLING_CASES = {
    "classes": changed("sampling", classes=5),
    "per_class": changed("sampling", per_class=21),
    "seed": changed("sampling", seed=1),
    "split": changed("sampling", split="train"),
    "up_to": changed("sampling", up_to=True),
}
PROTOCOL_CASES = {
    "points_per_class": changed("protocol", points_per_class=10),
    "n_t": changed("protocol", n_t=101),
    "seed": changed("protocol", seed=1),
    "centering": changed("protocol", centering="global"),
    "dichotomy": changed("protocol", dichotomy="random"),
    "repeats": changed("protocol", repeats=2),
}
MODEL_CASES = {
    "preprocess": changed("model", preprocess=MNIST_NORMALISED),
    "label_space": changed("model", label_space="digits"),
    "penultimate_node": changed("model", penultimate_node="fc1"),
}


@pytest.mark.parametrize(
    "change",
    [
        *(pytest.param(c, id=f"sampling.{n}") for n, c in SAMPLING_CASES.items()),
        *(pytest.param(c, id=f"protocol.{n}") for n, c in PROTOCOL_CASES.items()),
        *(pytest.param(c, id=f"model.{n}") for n, c in MODEL_CASES.items()),
    ],
)
def test_a_field_that_changes_the_numbers_changes_the_run_key(
    change: Callable[[dict[str, Any]], None],
) -> None:
    body = copy.deepcopy(BASE)
    change(body)
    assert stored_key(body) != stored_key(BASE)


def test_every_sampling_and_protocol_field_has_its_case() -> None:
    """A new field of either model needs a case above (or a reason it changes no number)."""
    assert set(SAMPLING_CASES) == set(Sampling.model_fields)
    assert set(PROTOCOL_CASES) == set(Protocol.model_fields)


def test_the_weights_and_the_sample_are_in_the_key() -> None:
    other = hashlib.sha256(b"other").hexdigest()
    assert stored_key(BASE, weights=other) != stored_key(BASE)
    assert stored_key(BASE, fingerprint=other) != stored_key(BASE)


def test_two_preprocessings_and_none_are_three_runs() -> None:
    """The case of the issue: jobs on one upload with another preprocessing, or none, never share."""
    keys = {
        stored_key({**BASE, "model": {**BASE["model"], **extra}})
        for extra in ({}, {"preprocess": MNIST_NORMALISED}, {"preprocess": MNIST_RAW})
    }
    assert len(keys) == 3


def test_a_state_dict_read_as_another_architecture_is_another_run() -> None:
    state = {"source": "checkpoint", "path": f"{WEIGHTS}.pt", "library": "timm"}
    one = stored_key({**BASE, "model": {**state, "architecture": "resnet18.a1_in1k"}})
    other = stored_key({**BASE, "model": {**state, "architecture": "resnet18.tv_in1k"}})
    assert one != other


def test_labels_defaults_and_the_weights_location_leave_the_key_alone() -> None:
    """A name, tags, a default spelled out or a preprocessing spelled in part ask the same question;
    so does the same upload named by another path (its bytes are in the key as their sha256)."""
    base = stored_key(BASE)
    assert stored_key({**BASE, "name": "candidate", "tags": {"team": "vision"}}) == base
    defaults = Protocol(n_t=100).to_dict()
    assert stored_key({**BASE, "protocol": defaults}) == base
    assert stored_key({**BASE, "model": {**BASE["model"], "path": f"uploads/{WEIGHTS}.pt2"}}) == base
    partial = {"channels": 1, "crop": [28, 28], "resize": None, "mean": [0.1307], "std": [0.3081]}
    full = {**partial, "interpolation": "bilinear", "antialias": True}
    assert stored_key({**BASE, "model": {**BASE["model"], "preprocess": partial}}) == stored_key(
        {**BASE, "model": {**BASE["model"], "preprocess": full}}
    )
