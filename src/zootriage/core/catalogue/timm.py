"""timm's model registry as plain data (``timm.json``): what the API needs to check a timm name
(``core.zoo.checks``) and find its cached weights, without importing timm.

``models`` maps every name ``timm.is_model`` accepts to its default pretrained tag (null: none);
``pretrained`` maps every ``arch.tag`` of ``timm.list_pretrained()`` to where timm caches its file:
the Hugging Face hub id (and file name, when the config names one) and the torch hub file name.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from zootriage.core.catalogue.files import load
from zootriage.core.errors import UnknownModel


@dataclass(frozen=True)
class PretrainedInfo:
    """Where the weights of one ``arch.tag`` are cached (any of them may be None)."""

    hf_hub_id: str | None
    hf_hub_filename: str | None
    url_file: str | None


def _catalogue() -> dict[str, Any]:
    catalogue: dict[str, Any] = load("timm")
    return catalogue


def is_model(arch: str) -> bool:
    """Whether timm has an architecture ``arch`` (``timm.is_model`` on a name without a tag)."""
    return arch in _catalogue()["models"]


def tags_of(arch: str) -> list[str]:
    """The pretrained names ``arch.tag`` timm lists for ``arch``."""
    prefix = arch + "."
    return sorted(name for name in _catalogue()["pretrained"] if name.startswith(prefix))


def check_name(name: str) -> str:
    """``name`` with its pretrained tag made explicit (``resnet50`` -> ``resnet50.a1_in1k``, timm's
    default), or ``UnknownModel``: the answer of ``core.zoo.timm_zoo.check_name``."""
    arch = name.partition(".")[0]
    if not is_model(arch):
        raise UnknownModel(f"timm has no model {arch!r}")
    if "." in name:
        if name not in _catalogue()["pretrained"]:
            tags = ", ".join(tags_of(arch)) or "none"
            raise UnknownModel(f"timm has no pretrained tag {name!r} (known: {tags})")
        return name
    default = _catalogue()["models"][arch]
    return f"{arch}.{default}" if default else name


def pretrained(name: str) -> PretrainedInfo | None:
    """Where the weights of the canonical ``name`` (``check_name``'s answer) are cached; None when
    timm has no pretrained config for it."""
    entry = _catalogue()["pretrained"].get(name)
    return None if entry is None else PretrainedInfo(**entry)
