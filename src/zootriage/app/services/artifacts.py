"""A run's artifacts: its extracted features as a download, and its self-contained report.

**Features.** The worker leaves a run's extraction in the feature cache (``core.feature_cache``:
``features/<cache key>.npz`` in the shared store, ``app.storage.feature_store``); the run finds its
entry through the extraction record of the first job linked to it (``Job.features["cache_key"]``,
``app.db.artifact_queries``): the extraction its markers were computed from. The entry is opened
before the answer starts, so a missing or damaged one is a 404 ``features_gone`` (which says how to
get it back), never a broken download. Then:

- ``npz``: the stored bytes as they are (``features`` (n, D) float32, ``logits`` (n, C) float32,
  ``labels`` (n,) int64, ``described``: the model's description, JSON as uint8), read in 1 MiB pieces.
- ``safetensors``: the same arrays re-encoded on the fly (``core.feature_formats.as_safetensors``):
  the header is computed from the npz members' headers, then each array's bytes are copied through in
  1 MiB pieces. Memory O(1 MiB), CPU one copy of the bytes, no temporary file; ``described`` and the
  run's identity go in ``__metadata__``. The length is known up front (``Content-Length``).

A local store is read in place (an open file survives a concurrent eviction). An object store (S3)
is first copied to a temporary file in the cache's scratch folder, unlinked at once, so the copy
costs the entry's size on the API host's disk for the duration of the download and nothing after.

**Report.** Every marker with its value, std, standard error and 95% interval (``RunReport``), the
protocol, sampling, model and dataset with their content hashes, code version, device, timings and
the job that computed it.
"""

from __future__ import annotations

import math
import os
import shutil
import tempfile
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from enum import StrEnum
from pathlib import Path
from typing import BinaryIO

from sqlalchemy.orm import Session

from zootriage.app.db.artifact_queries import computing_job, feature_cache_key
from zootriage.app.db.models import Marker, Run
from zootriage.app.db.run_key import reusable_by_request
from zootriage.app.db.run_queries import run_with_markers, upload_filenames
from zootriage.app.labels import run_label, stored_reference
from zootriage.app.schemas.reports import (
    DatasetSection,
    MarkerReport,
    ModelSection,
    Provenance,
    RunReport,
)
from zootriage.app.services.errors import ServiceError
from zootriage.app.services.short_ids import MIN_PREFIX
from zootriage.app.settings import Settings
from zootriage.app.storage import feature_store
from zootriage.core.data.refs import dataset_text
from zootriage.core.noise import CONFIDENCE, Estimate, upper_quantile
from zootriage.core.storage import LocalStore, NotFound, StorageError, feature_entry

SHORT_ID = MIN_PREFIX  # hex digits of a run id in file names: the shortest prefix a route accepts


class FeatureFormat(StrEnum):
    safetensors = "safetensors"
    npz = "npz"


MEDIA_TYPES = {FeatureFormat.safetensors: "application/octet-stream", FeatureFormat.npz: "application/zip"}


def short_id(run_id: uuid.UUID) -> str:
    """The run id's first hex digits, as file names carry it (a prefix the routes accept)."""
    return run_id.hex[:SHORT_ID]


@dataclass(frozen=True)
class Download:
    """A file to stream: its name, media type, length (None: unknown) and bytes, generated lazily."""

    filename: str
    media_type: str
    length: int | None
    pieces: Iterator[bytes]


def _run(session: Session, run_id: uuid.UUID) -> tuple[Run, list[Marker]]:
    found = run_with_markers(session, run_id)
    if found is None:
        raise ServiceError(404, "run_not_found", f"no run {run_id}")
    return found.run, found.markers


def _gone(run: Run, why: str) -> ServiceError:
    """404 ``features_gone``: why, and how to put the features back (any job extracting the same
    model on the same sample on the same kind of device writes the same cache entry)."""
    if reusable_by_request({"dataset": run.dataset_ref}):
        how = (
            "submit the run's model, dataset and sampling again under another protocol seed (the "
            "identical request is answered by this stored run without extracting)"
        )
    else:
        how = "submit the run's request again (POST /v1/jobs or zootriage submit): its data is read again"
    return ServiceError(
        404,
        "features_gone",
        f"the features of run {short_id(run.id)} are no longer in the feature store ({why}). A job that "
        f"extracts the same model on the same sample, on a {run.device.split(':')[0]} worker as before, "
        f"stores them again under the same entry: {how}; then download them again.",
    )


def _open_entry(settings: Settings, key: str) -> BinaryIO:
    """The stored entry as an open binary file (``NotFound`` when there is none): a local store's own
    file, or an object store's copy in scratch, unlinked once open."""
    store = feature_store(settings)
    if isinstance(store, LocalStore):
        try:
            return store.path(key).open("rb")
        except FileNotFoundError:
            raise NotFound(f"no stored object {key}") from None
    scratch = settings.effective_cache_dir / ".scratch"
    scratch.mkdir(parents=True, exist_ok=True)
    folder = Path(tempfile.mkdtemp(dir=scratch, prefix=".download-"))
    try:
        return store.get_file(key, folder / "entry.npz").open("rb")
    finally:
        shutil.rmtree(folder, ignore_errors=True)  # the open file keeps its bytes until closed


def _closing(pieces: Iterator[bytes], handle: BinaryIO) -> Iterator[bytes]:
    try:
        yield from pieces
    finally:
        handle.close()


def features_download(
    session: Session, settings: Settings, run_id: uuid.UUID, output: FeatureFormat
) -> Download:
    """The run's features in ``output`` format (module docstring); 404 ``run_not_found``,
    404 ``features_gone``."""
    from zootriage.core.feature_formats import NotAnEntry, as_safetensors, file_pieces, open_npz  # numpy

    run, _ = _run(session, run_id)
    cache_key = feature_cache_key(session, run_id)
    if cache_key is None:
        raise _gone(run, "no job of this run recorded its extraction")
    try:
        handle = _open_entry(settings, feature_entry(cache_key))
    except NotFound:
        raise _gone(run, "its cache entry was removed") from None
    except StorageError as exc:
        raise ServiceError(503, "storage_unavailable", f"the feature store did not answer: {exc}") from None
    try:
        archive, members = open_npz(handle)
    except NotAnEntry as exc:
        handle.close()
        raise _gone(run, f"its cache entry is damaged: {exc}") from None
    filename = f"run-{short_id(run.id)}-features.{output.value}"
    if output is FeatureFormat.npz:
        length = os.fstat(handle.fileno()).st_size
        return Download(filename, MEDIA_TYPES[output], length, _closing(file_pieces(handle), handle))
    identity = {
        "run_id": str(run.id),
        "run_key": run.run_key,
        "feature_cache_key": cache_key,
        "weights_sha256": run.weights_sha256,
        "dataset_fingerprint": run.dataset_fingerprint,
    }
    encoded = as_safetensors(archive, members, identity)
    return Download(filename, MEDIA_TYPES[output], encoded.length, _closing(encoded.pieces, handle))


def noise_note(confidence: float) -> str:
    """How a report's reader takes each marker's std, se and interval."""
    return (
        "std: the spread s of the marker over its R repeats (docs/noise.md); se = s/√R with R − 1 "
        f"degrees of freedom; interval: value ± t(R − 1) · se, the two-sided {confidence:.0%} Student-t "
        "interval of the stored mean. A marker with no std has noise nobody measured (one repeat, or its "
        "reason says why): it is shown, never decides."
    )


def marker_report(marker: Marker, repeats: int) -> MarkerReport:
    """One marker row with its noise (``MarkerReport``): se and df from ``core.noise.Estimate``,
    the interval from Student's t at ``CONFIDENCE``."""
    se: float | None = None
    df: float | None = None
    interval: tuple[float, float] | None = None
    if marker.value is not None and math.isfinite(marker.value):
        estimate = Estimate.from_repeats(marker.value, marker.std, repeats)
        if estimate.se is not None:
            se, df = estimate.se, estimate.df
            half = upper_quantile((1 - CONFIDENCE) / 2, estimate.df) * estimate.se
            interval = (marker.value - half, marker.value + half)
    return MarkerReport(
        name=marker.name,
        value=marker.value,
        std=marker.std,
        se=se,
        df=df,
        interval=interval,
        applicable=marker.applicable,
        decidable=marker.decidable,
        reason=marker.reason,
        version=marker.version,
    )


def run_report(session: Session, run_id: uuid.UUID) -> RunReport:
    """The run's report (``RunReport``); 404 ``run_not_found``."""
    from zootriage.core.noise import CONFIDENCE

    run, markers = _run(session, run_id)
    job, linked = computing_job(session, run_id)
    protocol = run.protocol.to_dict()
    return RunReport(
        generated_at=datetime.now(UTC),
        id=run.id,
        short_id=short_id(run.id),
        run_key=run.run_key,
        label=run_label(run, upload_filenames(session, [run])),
        name=run.name,
        description=run.description,
        tags=run.tag_map,
        created_at=run.created_at,
        model=ModelSection(
            reference=stored_reference(run.model_ref),
            ref=run.model_ref,
            architecture=run.architecture,
            weights_sha256=run.weights_sha256,
            meta=run.model_meta,
        ),
        dataset=DatasetSection(
            reference=dataset_text(run.dataset_ref), ref=run.dataset_ref, fingerprint=run.dataset_fingerprint
        ),
        sampling=run.sampling,
        protocol=protocol,
        n_images=run.n_images,
        code_version=run.code_version,
        device=run.device,
        timings=run.timings,
        provenance=Provenance(
            job_id=job.id if job else None,
            job_created_at=job.created_at if job else None,
            job_started_at=job.started_at if job else None,
            job_finished_at=job.finished_at if job else None,
            attempts=job.attempts if job else None,
            jobs_linked=linked,
            workers=dict(run.model_meta.get("workers") or {}),
        ),
        noise=noise_note(CONFIDENCE),
        markers=[marker_report(m, int(protocol.get("repeats", 1))) for m in markers],
    )
