"""A sweep's one progress: each job's fraction through the stages core.scoring reports, in order."""

from __future__ import annotations

import uuid
from types import SimpleNamespace

import pytest

from zootriage.app.db.sweep_queries import MemberRow
from zootriage.app.services.sweeps import STAGES, job_fraction, progress


def test_a_job_moves_forward_through_the_reports_of_a_real_scoring() -> None:
    reports = [
        ("sample", 0, 1),
        ("sample", 1, 1),
        ("load_model", 0, 1),
        ("load_model", 1, 1),
        ("extract", 0, 500),
        ("extract", 250, 500),
        ("extract", 500, 500),
        ("markers", 0, 1),
        ("markers", 1, 1),
    ]
    extraction, cpu_task = reports[:7], reports[7:]
    seen = [job_fraction("queued", None, 0, 0), job_fraction("running", None, 0, 0)]  # claimed (gpu)
    seen += [job_fraction("running", *r) for r in extraction]
    seen.append(job_fraction("queued", "extracted", 500, 500))  # handed over to the cpu queue
    seen.append(job_fraction("running", "markers", 0, 0))  # claimed by the marker task
    seen += [job_fraction("running", *r) for r in [("extract", 500, 500), *cpu_task]]  # cache read first
    seen.append(job_fraction("succeeded", "done", 1, 1))
    assert seen == sorted(seen) and seen[0] == 0.0 and seen[-1] == 1.0
    assert job_fraction("running", "extract", 250, 500) == pytest.approx((STAGES.index("extract") + 0.5) / 4)


@pytest.mark.parametrize(
    ("status", "stage", "done", "total", "expected"),
    [
        ("held", None, 0, 0, 0.0),
        ("queued", "extract", 3, 4, 0.0),
        ("running", "unknown", 1, 2, 0.0),
        ("running", "extract", 9, 0, 0.5),
        ("running", "extract", 9, 4, 0.75),
        ("failed", "extract", 1, 4, 1.0),
        ("cancelled", None, 0, 0, 1.0),
    ],
)
def test_fraction_edges(status: str, stage: str | None, done: int, total: int, expected: float) -> None:
    assert job_fraction(status, stage, done, total) == pytest.approx(expected)


def _row(
    status: str, published: bool = True, stage: str | None = None, done: int = 0, total: int = 0
) -> MemberRow:
    job = SimpleNamespace(
        status=status,
        sweep_id=uuid.uuid4(),
        published_at=object() if published else None,
        stage=stage,
        done=done,
        total=total,
    )
    return MemberRow(SimpleNamespace(run_id=None), job)  # type: ignore[arg-type]


def test_progress_counts_held_jobs_apart_and_averages_the_fractions() -> None:
    rows = [
        _row("queued", published=False),
        _row("queued"),
        _row("running", stage="markers", done=1, total=2),
        _row("succeeded"),
        MemberRow(SimpleNamespace(run_id=uuid.uuid4()), None),
    ]  # type: ignore[arg-type]
    got = progress(rows)
    assert got.counts == {"held": 1, "queued": 1, "running": 1, "succeeded": 2}
    assert got.total == 5 and got.finished == 2
    assert got.fraction == pytest.approx((0 + 0 + 3.5 / 4 + 1 + 1) / 5)
