"""The run key: what makes two scoring requests the same question; the request key: what the API
can tell of it before any content is read.

The run key hashes content, not names: the weights file's sha256 and the dataset fingerprint (which
covers the sampled images, their labels, the dataset's label space and the sampling), plus the exact
sampling and protocol, plus every option of the model reference that changes the numbers (a
checkpoint's preprocessing, label space, architecture and layer; a library model's canonical name).
Where the weights file lies (a checkpoint's ``path``) and what the run is called (name, tags) are left
out: renaming a file or labelling a run changes nothing; another preprocessing, retraining or another
seed does, and then two jobs never share a run.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

# The parts of a model reference that say where the weights are, not what they compute: their content
# is in the key as the weights' sha256.
_LOCATION = frozenset({"path"})


def canonical_json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), default=str)


def model_options(model: dict[str, Any]) -> dict[str, Any]:
    """The model reference (normalised JSON, as a job's request holds it) without its location, every
    unset option spelled out as ``None`` by the schema: what, besides the weights' bytes, decides the
    numbers (preprocessing, label space, architecture, penultimate layer, library name and tag)."""
    return {part: value for part, value in model.items() if part not in _LOCATION}


def run_key(
    weights_sha256: str,
    dataset_fingerprint: str,
    sampling: dict[str, Any],
    protocol: dict[str, Any],
    model: dict[str, Any],
) -> str:
    """hash(weights sha256, dataset fingerprint, sampling, protocol, ``model_options(model)``)."""
    payload = {
        "weights": weights_sha256,
        "dataset": dataset_fingerprint,
        "sampling": sampling,
        "protocol": protocol,
        "model": model_options(model),
    }
    return hashlib.sha256(canonical_json(payload).encode()).hexdigest()


# Dataset sources whose reference pins their content: a package version, an archive's bytes (an upload's
# name is its sha256). A folder or a torchvision root can change under the same name.
IMMUTABLE_DATASET_SOURCES = frozenset({"builtin", "archive"})


def request_key(request: dict[str, Any]) -> str:
    """The hash of the normalised request (canonical model reference, dataset reference, sampling and
    protocol with every default filled in): what the API can know without opening any content."""
    payload = {part: request[part] for part in ("model", "dataset", "sampling", "protocol")}
    return hashlib.sha256(canonical_json(payload).encode()).hexdigest()


def reusable_by_request(request: dict[str, Any]) -> bool:
    """Whether a run stored for this request key answers a new request with that key. Only for
    immutable datasets: a folder's request is always queued, and the worker links it to the run its
    content identity names (features come from the cache, so that costs no forward pass)."""
    return str(request["dataset"].get("source")) in IMMUTABLE_DATASET_SOURCES


def extraction_key(request: dict[str, Any]) -> str | None:
    """The hash of what an extraction depends on (canonical model reference, dataset reference,
    sampling; not the protocol), for requests on immutable data only: two jobs with one key can share
    one extraction whatever their protocols. ``None`` for mutable data (a folder may change)."""
    if not reusable_by_request(request):
        return None
    payload = {part: request[part] for part in ("model", "dataset", "sampling")}
    return hashlib.sha256(canonical_json(payload).encode()).hexdigest()
