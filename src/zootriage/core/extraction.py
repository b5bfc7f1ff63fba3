"""The parent's side of a sandboxed extraction: what the child is asked, and reading its answers.

One child serves one job in two steps (:mod:`core.extraction_child`): it samples the dataset and
says what the feature cache's key needs (:func:`sample_in`); on a cache miss it then loads the model
and extracts (:func:`extract_in`). A checkpoint is staged into the child's folder under its own file
name (the upload id for stored uploads), so the child sees no server path and its messages name the
user's file. The arrays come back as a safetensors file and are checked for shape and dtype before
use; nothing is unpickled.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Annotated, Any, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from zootriage.core.confine import JOB_WAITING_ENV
from zootriage.core.data.archives import ArchiveLimits
from zootriage.core.data.builtin import prepare_mapped
from zootriage.core.data.mapped import CHILD_ENV
from zootriage.core.data.refs import AnyDatasetRef, Sampling
from zootriage.core.errors import CancelCheck, CheckpointUnsafe
from zootriage.core.extraction_child import OUTPUT
from zootriage.core.features import Extraction, Progress
from zootriage.core.isolation import Child, ChildLimits
from zootriage.core.plain_text import PlainText
from zootriage.core.zoo.preprocess import Preprocess
from zootriage.core.zoo.refs import AnyModelRef, CheckpointRef

MODULE = "zootriage.core.extraction_child"
# Features and logits of one image, at most: the widest models of the zoos have 21,843 logits
# (ImageNet-21k heads) and a few thousand features; a child that writes more is refused unread.
MAX_ROW_VALUES = 1 << 17


class _ReportedInfo(BaseModel):
    """``core.zoo.loader.ModelInfo`` as a child reports it: every field typed and bounded, text plain."""

    model_config = ConfigDict(extra="forbid", strict=True, allow_inf_nan=False)
    source: PlainText = Field(max_length=32)
    architecture: PlainText = Field(min_length=1, max_length=128)  # the runs' column holds 128
    weights: PlainText = Field(max_length=255)
    acc1: float | None = Field(ge=0, le=100)
    num_params: int = Field(ge=0, lt=1 << 53)
    num_classes: int = Field(ge=0, le=1 << 20)
    label_space: PlainText | None = Field(max_length=64)
    penultimate: PlainText = Field(max_length=256)
    warnings: list[PlainText] = Field(default=[], max_length=16)


class Described(BaseModel):
    """What the child says of the model it loaded (:func:`extract_in`), checked before anything of it
    is used, cached or stored: after loading an upload the child runs whatever that upload made of it,
    so a NaN timing, a NUL or a dict where text goes, or a 10,000-character architecture is refused
    here, as the checkpoint's fault, instead of failing the database write that ends the job."""

    model_config = ConfigDict(extra="forbid", strict=True, allow_inf_nan=False)
    timings: dict[Literal["load_model", "extract"], Annotated[float, Field(ge=0)]]
    threads: int = Field(ge=1, le=1 << 16)
    info: _ReportedInfo
    weights_sha256: str = Field(pattern=r"^[0-9a-f]{64}$")
    preprocess: Preprocess


@dataclass(frozen=True)
class Sampled:
    """What the child reports of its sample: enough to key the feature cache and describe the run."""

    fingerprint: str
    classes: int
    images: int
    label_space: str | None


def new_child(
    limits: ChildLimits | None = None, gpu: bool = False, roots: tuple[str, ...] = (), *,
    job_waiting: bool = False,
) -> Child:
    """A child for one extraction: started ahead of its job (a warm pool's, :mod:`core.warm_pool`),
    it warms up everything a job may need; with ``job_waiting`` (started for a job that waits for it:
    ``zootriage score``, a worker without a pool) only what every job needs, since the rest would
    delay that job (``core.extraction_child.warm_up``)."""
    options = {JOB_WAITING_ENV: "1"} if job_waiting else {}
    decoded = prepare_mapped()  # MNIST decoded once here, mapped read-only by every child
    if decoded is not None:
        options[CHILD_ENV] = str(decoded)
        roots = (*roots, str(decoded))
    return Child(MODULE, limits=limits, gpu=gpu, readable=roots, options=options or None)


def sample_in(
    child: Child,
    dataset: AnyDatasetRef,
    sampling: Sampling,
    roots: tuple[str, ...],
    limits: ArchiveLimits | None,
    progress: Progress,
    cancel: CancelCheck | None = None,
) -> Sampled:
    """The child opens ``dataset`` under ``roots`` and draws the seeded sample."""
    child.send({
        "dataset": dataset.model_dump(mode="json"),
        "roots": list(roots),
        "limits": asdict(limits or ArchiveLimits()),
        "sampling": sampling.model_dump(mode="json"),
    })
    return Sampled(**child.receive("sampled", progress, cancel))


def extract_in(
    child: Child,
    model: AnyModelRef,
    options: dict[str, Any],
    expected: int,
    progress: Progress,
    cancel: CancelCheck | None = None,
) -> tuple[Extraction, dict[str, Any]]:
    """Features, logits and labels of the child's sample, and its description of the model
    (``info``, ``weights_sha256``, ``preprocess``, ``timings``, ``threads``). ``options``: batch size,
    device, data-loading workers, torch threads."""
    if isinstance(model, CheckpointRef):
        source = Path(model.path)
        child.stage({source.name: source})
        model = model.model_copy(update={"path": source.name})
    child.send({**options, "model": model.model_dump(mode="json")})
    answer = child.receive("result", progress, cancel)
    try:
        described = Described.model_validate(answer).model_dump(mode="json")
    except ValidationError as exc:
        where = ".".join(map(str, exc.errors()[0]["loc"]))
        raise CheckpointUnsafe(f"the model's process described the model it loaded wrongly ({where}): "
                               "refused") from None
    child.kill()  # it has answered: nothing more of it runs while its file is read
    return _read_arrays(child.read_output(OUTPUT, output_limit(expected)), expected), described


def output_limit(expected: int) -> int:
    """The most bytes an extraction of ``expected`` images may come back as: ``MAX_ROW_VALUES``
    float32 features and logits and one int64 label per image, and a MiB for the file's header."""
    return expected * (4 * MAX_ROW_VALUES + 8) + (1 << 20)


def _read_arrays(data: bytes, expected: int) -> Extraction:
    from safetensors import SafetensorError
    from safetensors.numpy import load

    try:
        arrays = load(data)
        features, logits, labels = arrays["features"], arrays["logits"], arrays["labels"]
    except (SafetensorError, KeyError) as exc:
        raise RuntimeError(f"the isolated child's arrays are not a valid extraction file: {exc}") from None
    if (
        features.ndim != 2 or logits.ndim != 2 or labels.ndim != 1
        or not len(features) == len(logits) == len(labels) == expected
        or features.dtype != np.float32 or logits.dtype != np.float32 or labels.dtype != np.int64
    ):
        raise RuntimeError("the isolated child returned arrays of the wrong shape or type")
    return Extraction(features, logits, labels)
