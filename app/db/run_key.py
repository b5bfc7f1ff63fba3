"""The run key: what makes two scoring requests the same question.

It hashes content, not names: the weights file's sha256 and the dataset fingerprint, plus the exact
sampling and protocol. Renaming a file or a model changes nothing; retraining or another seed does.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any


def canonical_json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), default=str)


def run_key(
    weights_sha256: str, dataset_fingerprint: str, sampling: dict[str, Any], protocol: dict[str, Any]
) -> str:
    payload = {
        "weights": weights_sha256,
        "dataset": dataset_fingerprint,
        "sampling": sampling,
        "protocol": protocol,
    }
    return hashlib.sha256(canonical_json(payload).encode()).hexdigest()
