"""What a run's artifacts (its features, its report) need from the jobs behind it: the extraction
record that names its feature-cache entry, and the job that computed it."""

from __future__ import annotations

import uuid

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from zootriage.app.db.models import Job


def feature_cache_key(session: Session, run_id: uuid.UUID) -> str | None:
    """The feature-cache key (``core.scoring.Extracted.cache_key``) of the first job linked to the run
    whose extraction record names one, or None (no job left, or none got as far as extracting).

    The first: its extraction is the one the run's markers were computed from. A later job linked to
    the same run (a folder dataset read again) names the same entry unless it ran on another kind of
    device: the cache key holds the extraction's precision (bf16 on CUDA, fp32 on CPU), the run key
    does not. The record is read in Python: one set back to null (a send-back) may be JSON null."""
    query = select(Job.features).where(Job.run_id == run_id).order_by(Job.created_at.asc(), Job.id.asc())
    for record in session.scalars(query):
        key = record.get("cache_key") if isinstance(record, dict) else None
        if isinstance(key, str) and key:
            return key
    return None


def computing_job(session: Session, run_id: uuid.UUID) -> tuple[Job | None, int]:
    """The first job linked to the run (the one that computed it; later ones found it stored) and how
    many jobs are linked to it in all."""
    first = session.scalar(
        select(Job).where(Job.run_id == run_id).order_by(Job.created_at.asc(), Job.id.asc()).limit(1)
    )
    linked = session.scalar(select(func.count()).select_from(Job).where(Job.run_id == run_id)) or 0
    return first, int(linked)

