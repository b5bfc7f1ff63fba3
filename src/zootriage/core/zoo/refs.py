"""Model references: what a user names, as pydantic models (JSON in the API) or short strings (CLI).

Short strings::

    tv:resnet50.IMAGENET1K_V2          torchvision architecture + weights enum member
    timm:resnet50.a1_in1k              timm name with an optional pretrained tag
    tv:resnet18@/path/w.safetensors    a state_dict for a torchvision architecture
    timm:resnet50.a1_in1k@/path/w.pth  a state_dict for a timm architecture (preprocessing of the tag)
    ckpt:/path/model.pt2               a torch.export program of any architecture
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError, model_validator

from zootriage.core.errors import BadReference
from zootriage.core.zoo.preprocess import Preprocess

_NAME = r"^[A-Za-z0-9_\-]+$"


class TorchvisionRef(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")
    source: Literal["torchvision"] = "torchvision"
    arch: str = Field(pattern=_NAME)
    weights: str = Field(default="DEFAULT", pattern=_NAME)


class TimmRef(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")
    source: Literal["timm"] = "timm"
    name: str = Field(pattern=r"^[A-Za-z0-9_\-]+(\.[A-Za-z0-9_\-]+)?$")


class CheckpointRef(BaseModel):
    """A weights file. With ``library`` + ``architecture`` it is a state_dict for that architecture
    (``num_classes`` read from its head); without, a ``.pt2`` ``torch.export`` program.

    ``preprocess`` overrides the architecture's default (or, for a program, what was saved with it);
    ``label_space`` names the classes the logits index (``"imagenet-1k"``, ``"digits"``, ...) so that
    ID accuracy is computed only on a dataset with the same label space.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")
    source: Literal["checkpoint"] = "checkpoint"
    path: str = Field(min_length=1, max_length=1024)
    library: Literal["torchvision", "timm"] | None = None
    architecture: str | None = Field(default=None, pattern=r"^[A-Za-z0-9_\-]+(\.[A-Za-z0-9_\-]+)?$")
    penultimate_node: str | None = Field(default=None, max_length=256)
    preprocess: Preprocess | None = None
    label_space: str | None = Field(default=None, max_length=64)

    @model_validator(mode="after")
    def _check(self) -> CheckpointRef:
        if (self.library is None) != (self.architecture is None):
            raise ValueError("library and architecture go together")
        if self.library is None and not self.path.endswith(".pt2"):
            raise ValueError("a state_dict needs its architecture (library + architecture); only a .pt2 "
                             "torch.export program stands alone")
        return self


# The model-reference type, declared once: any reference, and the same as a field of a JSON body
# (``source`` picks the kind).
AnyModelRef = TorchvisionRef | TimmRef | CheckpointRef
ModelRef = Annotated[AnyModelRef, Field(discriminator="source")]
_ADAPTER: TypeAdapter[AnyModelRef] = TypeAdapter(ModelRef)


def validate_model_ref(data: object) -> AnyModelRef:
    """Validate a JSON-like dict (the API body) into a model reference."""
    try:
        return _ADAPTER.validate_python(data)
    except ValidationError as exc:
        raise BadReference.from_validation("model", exc) from exc


def parse_model_ref(text: str) -> AnyModelRef:
    """Parse a short string (module docstring) or a JSON object into a model reference."""
    text = text.strip()
    if text.startswith("{"):
        try:
            return _ADAPTER.validate_json(text)
        except ValidationError as exc:
            raise BadReference.from_validation("model", exc) from exc
    prefix, sep, rest = text.partition(":")
    if not sep or not rest:
        raise BadReference(f"model reference {text!r}: expected tv:, timm: or ckpt: followed by a name")
    name, at, path = rest.partition("@")
    fields: dict[str, object]
    if prefix == "ckpt" and not at:
        fields = {"source": "checkpoint", "path": rest}
    elif prefix in ("tv", "timm") and at:
        library = "torchvision" if prefix == "tv" else "timm"
        fields = {"source": "checkpoint", "path": path, "library": library, "architecture": name}
    elif prefix == "tv":
        arch, _, weights = name.partition(".")
        fields = {"source": "torchvision", "arch": arch, "weights": weights or "DEFAULT"}
    elif prefix == "timm":
        fields = {"source": "timm", "name": name}
    else:
        raise BadReference(f"model reference {text!r}: unknown prefix {prefix!r} (tv, timm or ckpt)")
    return validate_model_ref(fields)
