"""Dataset references and the sampling request, as pydantic models (JSON in the API) or strings.

Short strings::

    builtin:mnist                      a set shipped inside an installed package (see ``builtin``)
    folder:imagenet/val                an ImageFolder tree (one sub-folder per class) under a data root
    torchvision:CIFAR10:cifar          a torchvision dataset class reading a folder under a data root
    archive:uploads/abc.npz            an uploaded .npz (images, labels) or .zip of an ImageFolder tree

``label_space`` names the classes the labels stand for (``"imagenet-1k"`` for an ImageNet folder whose
sorted class folders are the 1000 synsets): logit markers that need labels to index the model's outputs
are computed only when it equals the model's label space.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError

from zootriage.core.errors import BadReference
from zootriage.core.protocol import Seed

_PATH = Field(min_length=1, max_length=1024)


class BuiltinRef(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")
    source: Literal["builtin"] = "builtin"
    name: str = Field(pattern=r"^[a-z0-9\-]+$")


class FolderRef(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")
    source: Literal["folder"] = "folder"
    path: str = _PATH
    label_space: str | None = Field(default=None, max_length=64)


class TorchvisionDatasetRef(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")
    source: Literal["torchvision"] = "torchvision"
    name: str = Field(pattern=r"^[A-Za-z0-9_]+$")
    path: str = _PATH
    label_space: str | None = Field(default=None, max_length=64)


class ArchiveRef(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")
    source: Literal["archive"] = "archive"
    path: str = Field(min_length=1, max_length=1024, pattern=r"\.(npz|zip)$")
    label_space: str | None = Field(default=None, max_length=64)


DatasetRef = Annotated[
    BuiltinRef | FolderRef | TorchvisionDatasetRef | ArchiveRef, Field(discriminator="source")
]
AnyDatasetRef = BuiltinRef | FolderRef | TorchvisionDatasetRef | ArchiveRef
_ADAPTER: TypeAdapter[AnyDatasetRef] = TypeAdapter(DatasetRef)


CLASSES_MAX = 10_000
PER_CLASS_MAX = 10_000
# Every marker describes class manifolds: each class needs 2 points at least (``core.inputs.class_labels``
# refuses fewer), so a request for fewer is refused here rather than failing in the worker.
PER_CLASS_MIN = 2
Classes = Annotated[int | None, Field(ge=2, le=CLASSES_MAX, description="classes to sample (None: all)")]
PerClass = Annotated[
    int | None,
    Field(ge=PER_CLASS_MIN, le=PER_CLASS_MAX, description="images per class (None: every image)"),
]
Split = Annotated[str | None, Field(max_length=64, pattern=r"^[A-Za-z0-9_\-]+$")]


class Sampling(BaseModel):
    """P classes (``classes``; ``None`` = all, else a seeded choice) × M images per class
    (``per_class``; ``None`` = every image), from ``split`` (``None`` = the source's default).
    ``up_to``: ``per_class`` is a cap, a class with fewer images gives all it has (the default
    sample of ``for_repeats``); otherwise such a class is a ``BadSampling`` error.

    Every number is bounded here, once: the API's routes all take this model."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    classes: Classes = None
    per_class: PerClass = 50
    seed: Seed = 0
    split: Split = None
    up_to: bool = False

    def for_repeats(self, points_per_class: int | None, repeats: int) -> Sampling:
        """This sampling, with ``per_class`` filled in when the request left it out: enough images
        for GLUE's ``repeats`` to use disjoint sets of ``points_per_class`` points
        (``core.glue_subsets``), i.e. points_per_class × repeats (at most PER_CLASS_MAX), capped by
        each class's size (``up_to``; a capped class makes the noise partial, and the markers say
        so). ``points_per_class`` None (GLUE on every point) keeps every image."""
        if "per_class" in self.model_fields_set:
            return self
        per_class = None if points_per_class is None else min(points_per_class * repeats, PER_CLASS_MAX)
        return self.model_copy(update={"per_class": per_class, "up_to": True})


def validate_dataset_ref(data: object) -> AnyDatasetRef:
    try:
        return _ADAPTER.validate_python(data)
    except ValidationError as exc:
        raise BadReference.from_validation("dataset", exc) from exc


def parse_dataset_ref(text: str) -> AnyDatasetRef:
    """Parse a short string (module docstring) or a JSON object into a dataset reference."""
    text = text.strip()
    if text.startswith("{"):
        try:
            return _ADAPTER.validate_json(text)
        except ValidationError as exc:
            raise BadReference.from_validation("dataset", exc) from exc
    prefix, sep, rest = text.partition(":")
    if not sep or not rest:
        raise BadReference(
            f"dataset reference {text!r}: expected builtin:, folder:, torchvision: or archive: and a name"
        )
    fields: dict[str, object]
    if prefix == "builtin":
        fields = {"source": "builtin", "name": rest}
    elif prefix in ("folder", "archive"):
        fields = {"source": prefix, "path": rest}
    elif prefix == "torchvision":
        name, _, path = rest.partition(":")
        fields = {"source": "torchvision", "name": name, "path": path}
    else:
        raise BadReference(f"dataset reference {text!r}: unknown prefix {prefix!r}")
    return validate_dataset_ref(fields)


def dataset_text(ref: AnyDatasetRef | dict[str, object]) -> str:
    """The short string :func:`parse_dataset_ref` reads back into ``ref`` (``builtin:mnist``,
    ``folder:imagenet/val``, ``torchvision:CIFAR10:cifar``, ``archive:sets/digits.npz``); a label
    space has no short form and is left out. A stored mapping that is no reference today (an older
    record) is named by its source and name or path as stored."""
    try:
        parsed = ref if not isinstance(ref, dict) else validate_dataset_ref(ref)
    except BadReference:
        data = dict(ref) if isinstance(ref, dict) else {}
        return f"{data.get('source', 'dataset')}:{data.get('path') or data.get('name') or '?'}"
    if isinstance(parsed, BuiltinRef):
        return f"builtin:{parsed.name}"
    if isinstance(parsed, TorchvisionDatasetRef):
        return f"torchvision:{parsed.name}:{parsed.path}"
    return f"{parsed.source}:{parsed.path}"
