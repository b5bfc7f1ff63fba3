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

from core.errors import BadReference

_PATH = Field(min_length=1, max_length=1024)


class BuiltinRef(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")
    source: Literal["builtin"] = "builtin"
    name: str = Field(pattern=r"^[a-z0-9\-]+$")


class FolderRef(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")
    source: Literal["folder"] = "folder"
    path: str = _PATH
    label_space: str | None = None


class TorchvisionDatasetRef(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")
    source: Literal["torchvision"] = "torchvision"
    name: str = Field(pattern=r"^[A-Za-z0-9_]+$")
    path: str = _PATH
    label_space: str | None = None


class ArchiveRef(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")
    source: Literal["archive"] = "archive"
    path: str = Field(min_length=1, max_length=1024, pattern=r"\.(npz|zip)$")
    label_space: str | None = None


DatasetRef = Annotated[
    BuiltinRef | FolderRef | TorchvisionDatasetRef | ArchiveRef, Field(discriminator="source")
]
AnyDatasetRef = BuiltinRef | FolderRef | TorchvisionDatasetRef | ArchiveRef
_ADAPTER: TypeAdapter[AnyDatasetRef] = TypeAdapter(DatasetRef)


class Sampling(BaseModel):
    """P classes (``classes``; ``None`` = all, else a seeded choice) × M images per class
    (``per_class``; ``None`` = every image), from ``split`` (``None`` = the source's default)."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    classes: int | None = Field(default=None, ge=2)
    per_class: int | None = Field(default=50, ge=1)
    seed: int = Field(default=0, ge=0)
    split: str | None = Field(default=None, pattern=r"^[A-Za-z0-9_\-]+$")


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
