"""``score``: a model reference and a dataset reference in, every marker out (the worker's one call).

Stages, each timed: open and sample the dataset (fingerprinting the sample), load the model and
extract features and logits in an isolated child (or read them from the feature cache), and compute
the markers. ``score`` runs them in one process; a deployment splits them across workers:
``extract_features`` (a GPU worker: sample, child, cache write) hands an :class:`Extracted` record to
``score_cached`` (a CPU worker: cache read, markers), which needs only the shared feature cache.
The feature cache is keyed by (weights, dataset fingerprint, extraction settings), so
scoring the same model and data under another protocol skips the model's load and forward passes,
and on a builtin set whose sample is recorded (``core.sample_records``) the child itself.
"""

from __future__ import annotations

import errno
import hashlib
import json
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass, replace
from functools import partial
from pathlib import Path
from typing import Any

import torch

from zootriage.core.data.archives import ArchiveLimits
from zootriage.core.data.refs import AnyDatasetRef, Sampling
from zootriage.core.device import resolve_device
from zootriage.core.errors import CancelCheck, CheckpointUnsafe
from zootriage.core.extraction import Sampled, extract_in, new_child, sample_in
from zootriage.core.feature_cache import FeatureCache
from zootriage.core.features import Extraction, Progress, default_workers
from zootriage.core.isolation import Child, ChildLimits
from zootriage.core.markers import MarkerValue, Protocol, compute_markers
from zootriage.core.sample_records import known_sample, remember_sample
from zootriage.core.zoo.loader import ModelInfo
from zootriage.core.zoo.refs import AnyModelRef, CheckpointRef
from zootriage.core.zoo.weights import sha256_file

_DISK_FULL = (errno.ENOSPC, errno.EDQUOT)
EXTRACTION_VERSION = 1  # bump when a change to extraction changes the features it produces


@dataclass(frozen=True)
class ScoreResult:
    markers: dict[str, MarkerValue]
    weights_sha256: str
    dataset_fingerprint: str
    model: ModelInfo
    n_images: int
    n_classes: int
    feature_dim: int
    logits_match_labels: bool
    timings: dict[str, float]
    device: str
    features_cached: bool

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["markers"] = {name: asdict(value) for name, value in self.markers.items()}
        return data


@dataclass(frozen=True)
class Extracted:
    """What the extraction stage hands to the marker stage, small enough for a job row (JSON): the
    feature-cache key of the extraction and what the markers need to know about the sample."""

    cache_key: str
    weights_sha256: str
    dataset_fingerprint: str
    n_classes: int
    dataset_label_space: str | None
    timings: dict[str, float]
    device: str
    features_cached: bool  # the extraction stage found the features in the cache (started no child)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Extracted:
        return cls(**{f: data[f] for f in cls.__dataclass_fields__})


class FeaturesMissing(Exception):
    """The cache has no entry for an extraction (evicted, or another store): extract again."""


def score(
    model: AnyModelRef,
    dataset: AnyDatasetRef,
    sampling: Sampling,
    protocol: Protocol,
    *,
    device: str | torch.device | None = None,
    progress: Progress | None = None,
    cache: FeatureCache | str | Path | None = None,
    data_roots: Sequence[str | Path] = (),
    limits: ArchiveLimits | None = None,
    batch_size: int = 64,
    num_workers: int | None = None,
    child_limits: ChildLimits | None = None,
    cancel: CancelCheck | None = None,
    child: Callable[[], Child] | None = None,
) -> ScoreResult:
    """Score ``model`` on a ``sampling`` of ``dataset``: :func:`extract_features` then the markers,
    in one process. Bad input raises ``core.errors.ZooError``.

    ``data_roots`` and ``limits`` come from the caller's settings: folder, torchvision and archive
    datasets are read only under those roots. ``num_workers`` data-loading processes (default: by
    device and cores; none inside a daemonic process such as a Celery prefork child). ``cancel`` is
    polled while the child runs and throughout the marker stage (``core.errors.Cancelled`` stops
    both). ``cache`` keeps extractions (a folder path is a local cache, ``FeatureCache.folder``); a
    full disk under it raises ``core.errors.InsufficientStorage``. ``child`` gives a started
    sandboxed child (a warm pool's); by default one is started for the job.
    """
    store = FeatureCache.folder(cache) if isinstance(cache, str | Path) else cache
    with _extract(
        model, dataset, sampling, device=device, progress=progress, store=store, data_roots=data_roots,
        limits=limits, batch_size=batch_size, num_workers=num_workers, child_limits=child_limits,
        cancel=cancel, child=child,
    ) as (extracted, entry):
        return _markers(extracted, entry, protocol, extracted.device, progress or _ignore, cancel)


def extract_features(
    model: AnyModelRef,
    dataset: AnyDatasetRef,
    sampling: Sampling,
    *,
    cache: FeatureCache,
    device: str | torch.device | None = None,
    progress: Progress | None = None,
    data_roots: Sequence[str | Path] = (),
    limits: ArchiveLimits | None = None,
    batch_size: int = 64,
    num_workers: int | None = None,
    child_limits: ChildLimits | None = None,
    cancel: CancelCheck | None = None,
    child: Callable[[], Child] | None = None,
) -> Extracted:
    """The first stage alone (a GPU worker's part): sample, extract in the isolated child unless the
    cache already holds this extraction, and leave the features in ``cache`` for :func:`score_cached`
    (on any worker that sees the same store). ``child`` gives a started child (a warm pool's)."""
    with _extract(
        model, dataset, sampling, device=device, progress=progress, store=cache, data_roots=data_roots,
        limits=limits, batch_size=batch_size, num_workers=num_workers, child_limits=child_limits,
        cancel=cancel, child=child,
    ) as (extracted, _):
        return extracted


def score_cached(
    extracted: Extracted,
    protocol: Protocol,
    *,
    cache: FeatureCache,
    device: str | torch.device | None = None,
    progress: Progress | None = None,
    cancel: CancelCheck | None = None,
) -> ScoreResult:
    """The second stage alone (a CPU worker's part): the markers of an extraction read from ``cache``;
    :class:`FeaturesMissing` when the cache no longer holds it. No model, no dataset is opened."""
    report = progress or _ignore
    start = time.perf_counter()
    entry = cache.read(extracted.cache_key)
    if entry is None:
        raise FeaturesMissing(extracted.cache_key)
    report("extract", len(entry[0].labels), len(entry[0].labels))
    timings = {**extracted.timings, "read_features": time.perf_counter() - start}
    staged = replace(extracted, timings=timings)
    return _markers(staged, entry, protocol, str(resolve_device(device)), report, cancel)


@contextmanager
def _extract(
    model: AnyModelRef,
    dataset: AnyDatasetRef,
    sampling: Sampling,
    *,
    device: str | torch.device | None,
    progress: Progress | None,
    store: FeatureCache | None,
    data_roots: Sequence[str | Path],
    limits: ArchiveLimits | None,
    batch_size: int,
    num_workers: int | None,
    child_limits: ChildLimits | None,
    cancel: CancelCheck | None,
    child: Callable[[], Child] | None = None,
) -> Iterator[tuple[Extracted, tuple[Extraction, dict[str, Any]]]]:
    """The dataset is opened and the model loaded and run only in a sandboxed child
    (``core.isolation``), for every kind of reference: one path, whether the weights are a user's
    upload or a library's download. The child samples first and says what the feature cache's key
    needs; a cached extraction then loads no model. A builtin set's sample, once a child has reported
    it, is recorded in the cache (``core.sample_records``): with its extraction cached too, no child
    is started at all. ``child`` gives a started child (a worker's warm pool); by default a cold one
    is started, which warms up only what every job needs.

    The extraction is yielded with the child already killed (its last message read) but not yet
    reaped: its teardown (an interpreter with torch's memory to free, its folder, its cgroup) overlaps
    the caller's block (the markers), and a warm pool's replacement, started when the child is
    closed, does not take the cores from that block."""
    dev = resolve_device(device)
    timings: dict[str, float] = {}
    report = progress or _ignore
    known = known_sample(store, dataset, sampling)
    known_key = None
    # a checkpoint's content hash, taken here once: its cache key, and the check of what its child says
    checkpoint_sha = sha256_file(Path(model.path)) if isinstance(model, CheckpointRef) else None
    if store is not None and known is not None:
        known_key = _cache_key(model, known.fingerprint, dev, checkpoint_sha)
        start = time.perf_counter()
        recorded = store.read(known_key)
        if recorded is not None:  # a builtin set's sample and its extraction both known: no child
            with _timed(timings, "sample", report):
                pass
            timings["extract"] = time.perf_counter() - start
            report("extract", len(recorded[0].labels), len(recorded[0].labels))
            yield _extracted(known_key, known, recorded[1], timings, dev, True), recorded
            return
    roots = tuple(str(Path(root).resolve()) for root in data_roots)
    start = time.perf_counter()
    cold = partial(new_child, child_limits, dev.type == "cuda", roots, job_waiting=True)
    with (child or cold)() as sandboxed:
        # first: a bad dataset fails before any weights are read
        with _timed(timings, "sample", report):
            sampled = sample_in(sandboxed, dataset, sampling, roots, limits, report, cancel)
        key = known_key if known_key is not None and known == sampled else _cache_key(
            model, sampled.fingerprint, dev, checkpoint_sha)
        extract_start = time.perf_counter()
        cached = store.read(key) if store is not None else None
        if cached is None:
            workers = default_workers(dev) if num_workers is None else num_workers
            # the child's torch threads follow this process's (a worker sets its share of the cores)
            options = {"batch_size": batch_size, "device": str(dev), "num_workers": workers,
                       "threads": torch.get_num_threads()}
            extraction, described = extract_in(sandboxed, model, options, sampled.images, report, cancel)
            if checkpoint_sha is not None and described.get("weights_sha256") != checkpoint_sha:
                # what the child says is only what code in it chose to say: a checkpoint that claims
                # another's hash would take that one's runs and baselines
                raise CheckpointUnsafe("the model's process reported weights that are not the uploaded "
                                       "checkpoint's: refused")
            timings.update(described["timings"])  # load_model and extract, as the child measured them
            timings["child"] = time.perf_counter() - start  # those, its start, the dataset and sample
            if store is not None:
                store.write(key, extraction, described)
        else:
            extraction, described = cached
            timings["extract"] = time.perf_counter() - extract_start
            report("extract", len(extraction.labels), len(extraction.labels))
        if sampled != known:  # with its features in the cache: first seen, or a stale record replaced
            remember_sample(store, dataset, sampling, sampled)
        sandboxed.kill()
        yield _extracted(key, sampled, described, timings, dev, cached is not None), (extraction, described)


def _extracted(
    key: str, sampled: Sampled, described: dict[str, Any], timings: dict[str, float],
    dev: torch.device, cached: bool,
) -> Extracted:
    return Extracted(
        cache_key=key,
        weights_sha256=described["weights_sha256"],
        dataset_fingerprint=sampled.fingerprint,
        n_classes=sampled.classes,
        dataset_label_space=sampled.label_space,
        timings=timings,
        device=str(dev),
        features_cached=cached,
    )


def _markers(
    extracted: Extracted,
    entry: tuple[Extraction, dict[str, Any]],
    protocol: Protocol,
    device: str,
    report: Progress,
    cancel: CancelCheck | None,
) -> ScoreResult:
    extraction, described = entry
    info = ModelInfo(**described["info"])
    match = info.label_space is not None and info.label_space == extracted.dataset_label_space
    timings = dict(extracted.timings)
    with _timed(timings, "markers", report):
        markers = compute_markers(
            extraction.features,
            extraction.labels,
            extraction.logits,
            protocol=protocol,
            logits_match_labels=match,
            device=resolve_device(device),
            cancel=cancel,
        )
    return ScoreResult(
        markers=markers,
        weights_sha256=extracted.weights_sha256,
        dataset_fingerprint=extracted.dataset_fingerprint,
        model=info,
        n_images=len(extraction.labels),
        n_classes=extracted.n_classes,
        feature_dim=int(extraction.features.shape[1]),
        logits_match_labels=match,
        timings=timings,
        device=extracted.device,
        features_cached=extracted.features_cached,
    )


def _ignore(_stage: str, _done: int, _total: int) -> None:
    return None


@contextmanager
def _timed(timings: dict[str, float], stage: str, report: Callable[[str, int, int], None]) -> Iterator[None]:
    report(stage, 0, 1)
    start = time.perf_counter()
    yield
    timings[stage] = time.perf_counter() - start
    report(stage, 1, 1)


def _cache_key(
    model: AnyModelRef, fingerprint: str, device: torch.device, checkpoint_sha: str | None
) -> str:
    """Everything that changes the extracted numbers, known before loading anything: the weights (a
    checkpoint's content hash, ``checkpoint_sha``; a library model's name and tag), the options of the
    reference (preprocessing, layer), the sample, the precision and the extraction code."""
    if isinstance(model, CheckpointRef):
        weights = {**model.model_dump(mode="json", exclude={"path"}), "sha256": checkpoint_sha}
    else:
        weights = model.model_dump(mode="json")
    settings = {
        "weights": weights,
        "dataset": fingerprint,
        "precision": "bf16-autocast" if device.type == "cuda" else "fp32",
        "version": EXTRACTION_VERSION,
    }
    return hashlib.sha256(json.dumps(settings, sort_keys=True).encode()).hexdigest()
