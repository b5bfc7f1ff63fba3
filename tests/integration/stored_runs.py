"""Runs written straight into PostgreSQL as the worker stores them (no worker, no model): what the
triage API and pages tests read."""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Mapping
from typing import Any

from sqlalchemy import select

from zootriage.app.db.models import Job, Marker, Run, RunTag
from zootriage.app.db.run_key import request_key
from zootriage.app.db.session import session_scope
from zootriage.app.schemas.jobs import JobRequest
from zootriage.app.services.admission import normalised_request
from zootriage.core.data.open import open_dataset
from zootriage.core.data.refs import BuiltinRef, Sampling
from zootriage.core.data.sampling import sample
from zootriage.core.markers import Protocol

SAMPLING = Sampling(classes=2, per_class=5)
PROTOCOL = Protocol(n_t=20, points_per_class=5)
DIGITS = {"source": "builtin", "name": "digits"}
QUERY = "dataset=builtin:digits&classes=2&per_class=5&n_t=20&points_per_class=5"


def digits_fingerprint() -> str:
    return sample(open_dataset(BuiltinRef(name="digits"), None), SAMPLING).fingerprint


def stored_run(
    database_url: str,
    label: str,
    markers: Mapping[str, float | None],
    *,
    model: dict[str, Any] | None = None,
    protocol: Protocol = PROTOCOL,
    fingerprint: str | None = None,
    stds: Mapping[str, float | None] | None = None,
    undecidable: dict[str, str] | None = None,
    run_id: uuid.UUID | None = None,
    name: str | None = None,
    tags: Mapping[str, str] | None = None,
) -> uuid.UUID:
    """A run as the worker stores it; one of a real model carries the request key the API finds it by.
    Every marker carries a small std over the protocol's repeats unless ``stds`` says otherwise (None:
    no noise estimate), and
    ``undecidable`` marks markers of a degenerate regime with their reason; ``run_id`` chooses its id,
    ``name`` and ``tags`` its labels."""
    request = model and JobRequest.model_validate(
        {"model": model, "dataset": DIGITS, "sampling": SAMPLING.model_dump(), "protocol": protocol.to_dict()}
    )
    stds = {**{name: 0.001 for name in markers}, **(stds or {})}
    undecidable = undecidable or {}
    run = Run(
        id=run_id or uuid.uuid4(),
        run_key=hashlib.sha256(label.encode()).hexdigest(),
        request_key=request_key(normalised_request(request)) if request else None,
        model_ref=model or {"source": "checkpoint", "path": label},
        name=name,
        tags=[RunTag(key=key, value=value) for key, value in (tags or {}).items()],
        architecture=(model or {}).get("arch"),
        weights_sha256=hashlib.sha256(f"w-{label}".encode()).hexdigest(),
        dataset_ref=DIGITS,
        dataset_fingerprint=fingerprint or digits_fingerprint(),
        sampling=SAMPLING.model_dump(mode="json"),
        protocol=protocol.to_dict(),
        model_meta={},
        code_version="test",
        device="cpu",
        n_images=10,
        timings={},
        markers=[
            Marker(
                name=name,
                value=value,
                std=stds.get(name) if value is not None else None,
                applicable=value is not None,
                reason=undecidable.get(name) if value is not None else "n/a",
                decidable=name not in undecidable,
                version="1",
            )
            for name, value in markers.items()
        ],
    )
    with session_scope(database_url) as session:
        session.add(run)
        session.flush()
        return run.id


def count_jobs(database_url: str) -> int:
    with session_scope(database_url) as session:
        return len(session.scalars(select(Job)).all())
