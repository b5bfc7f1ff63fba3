"""``score``: a model reference and a dataset reference in, every marker out (the worker's one call).

Stages, each timed: open and sample the dataset (fingerprinting the sample), load the model and
extract features and logits in an isolated child (or read them from the feature cache), and compute
the markers. The feature cache is keyed by (weights, dataset fingerprint, extraction settings), so
scoring the same model and data under another protocol skips the child and its forward passes.
"""

from __future__ import annotations

import errno
import hashlib
import json
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import torch

from zootriage.core.data.archives import ArchiveLimits
from zootriage.core.data.open import open_dataset
from zootriage.core.data.refs import AnyDatasetRef, Sampling
from zootriage.core.data.sampling import sample
from zootriage.core.device import resolve_device
from zootriage.core.errors import CancelCheck
from zootriage.core.extraction import extract_isolated
from zootriage.core.feature_cache import FeatureCache
from zootriage.core.features import Progress, default_workers
from zootriage.core.isolation import ChildLimits
from zootriage.core.markers import MarkerValue, Protocol, compute_markers
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
) -> ScoreResult:
    """Score ``model`` on a ``sampling`` of ``dataset``. Bad input raises ``core.errors.ZooError``.

    ``data_roots`` and ``limits`` come from the caller's settings: folder, torchvision and archive
    datasets are read only under those roots. ``num_workers`` data-loading processes (default: by
    device and cores; none inside a daemonic process such as a Celery prefork child). ``cancel`` is
    polled while the child runs and throughout the marker stage (``core.errors.Cancelled`` stops
    both). ``cache`` keeps extractions (a folder path is a local cache, ``FeatureCache.folder``); a
    full disk under it raises ``core.errors.InsufficientStorage``.

    The model is loaded and run only in an isolated child (``core.isolation``), for every kind of
    reference: one path, whether the weights are a user's upload or a library's download. The feature
    cache is checked here first, so a cached extraction starts no child.
    """
    dev = resolve_device(device)
    timings: dict[str, float] = {}
    report = progress or _ignore
    with _timed(timings, "sample", report):  # first: a bad dataset fails before any weights are read
        images = open_dataset(dataset, sampling.split, roots=data_roots, limits=limits)
        chosen = sample(images, sampling)
    key = _cache_key(model, chosen.fingerprint, dev)
    start = time.perf_counter()
    store = FeatureCache.folder(cache) if isinstance(cache, str | Path) else cache
    cached = store.read(key) if store is not None else None
    if cached is None:
        workers = default_workers(dev) if num_workers is None else num_workers
        request = {
            "dataset": dataset.model_dump(mode="json"),
            "split": sampling.split,
            "roots": [str(Path(root).resolve()) for root in data_roots],
            "limits": asdict(limits or ArchiveLimits()),
            "indices": chosen.indices.tolist(),
            "batch_size": batch_size,
            "device": str(dev),
            "num_workers": workers,
        }
        extraction, described = extract_isolated(model, request, dev, report, child_limits, cancel)
        timings.update(described["timings"])  # load_model and extract, as the child measured them
        timings["child"] = time.perf_counter() - start  # those plus its start, imports and dataset
        if store is not None:
            store.write(key, extraction, described)
    else:
        extraction, described = cached
        timings["extract"] = time.perf_counter() - start
        report("extract", len(extraction.labels), len(extraction.labels))
    info = ModelInfo(**described["info"])
    match = info.label_space is not None and info.label_space == images.label_space
    with _timed(timings, "markers", report):
        markers = compute_markers(
            extraction.features,
            extraction.labels,
            extraction.logits,
            protocol=protocol,
            logits_match_labels=match,
            device=dev,
            cancel=cancel,
        )
    return ScoreResult(
        markers=markers,
        weights_sha256=described["weights_sha256"],
        dataset_fingerprint=chosen.fingerprint,
        model=info,
        n_images=len(extraction.labels),
        n_classes=len(chosen.classes),
        feature_dim=int(extraction.features.shape[1]),
        logits_match_labels=match,
        timings=timings,
        device=str(dev),
        features_cached=cached is not None,
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
    model: AnyModelRef, fingerprint: str, device: torch.device
) -> str:
    """Everything that changes the extracted numbers, known before loading anything: the weights (a
    checkpoint's content hash; a library model's name and tag), the options of the reference
    (preprocessing, layer), the sample, the precision and the extraction code."""
    if isinstance(model, CheckpointRef):
        weights = {**model.model_dump(mode="json", exclude={"path"}), "sha256": sha256_file(Path(model.path))}
    else:
        weights = model.model_dump(mode="json")
    settings = {
        "weights": weights,
        "dataset": fingerprint,
        "precision": "bf16-autocast" if device.type == "cuda" else "fp32",
        "version": EXTRACTION_VERSION,
    }
    return hashlib.sha256(json.dumps(settings, sort_keys=True).encode()).hexdigest()
