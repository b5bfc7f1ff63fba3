"""Runs written straight into the database, for history queries that need many of them."""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime, timedelta

from sqlalchemy.orm import Session

from zootriage.app.db.models import Marker, Run

BASE_TIME = datetime(2026, 1, 1, tzinfo=UTC)


def fake_run(
    i: int, *, architecture: str = "resnet18", markers: dict[str, float | None] | None = None
) -> Run:
    key = hashlib.sha256(f"run-{i}".encode()).hexdigest()
    values = markers if markers is not None else {"dimension": i / 10, "utilization": 1 - i / 100}
    return Run(
        run_key=key,
        model_ref={"source": "torchvision", "arch": architecture, "weights": "DEFAULT"},
        architecture=architecture,
        weights_sha256=hashlib.sha256(f"w-{i % 3}".encode()).hexdigest(),
        dataset_ref={"source": "builtin", "name": "digits"},
        dataset_fingerprint=hashlib.sha256(b"digits").hexdigest(),
        sampling={"classes": None, "per_class": 10, "seed": 0, "split": None},
        protocol={"n_t": 100},
        model_meta={},
        code_version="test",
        device="cpu",
        n_images=100,
        timings={},
        created_at=BASE_TIME + timedelta(hours=i),
        markers=[
            Marker(
                name=name,
                value=value,
                std=None,
                applicable=value is not None,
                reason=None if value is not None else "n/a",
                version="1",
            )
            for name, value in values.items()
        ],
    )


def seed_runs(session: Session, count: int) -> list[Run]:
    runs = [fake_run(i, architecture="resnet18" if i % 2 else "vgg11") for i in range(count)]
    session.add_all(runs)
    return runs
