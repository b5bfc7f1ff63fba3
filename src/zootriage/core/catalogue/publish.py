"""Build step: publish the catalogues (``core.catalogue``) from the installed libraries and the
marker registry. ``python -m zootriage.core.catalogue.publish`` rewrites the three files;
``--check`` exits 1 naming the stale ones instead (``tests/unit/test_catalogue.py`` runs it).

This module imports torch, torchvision, timm and every marker: it runs at build, never in the API.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

from zootriage.core.catalogue.files import NAMES, dumps, path_of


def markers() -> dict[str, Any]:
    from zootriage.core.glue import MARKERS
    from zootriage.core.markers import list_markers

    return {"glue_markers": list(MARKERS), "markers": [spec.to_dict() for spec in list_markers()]}


def torchvision_models() -> dict[str, Any]:
    import torchvision

    from zootriage.core.zoo.torchvision_zoo import metadata

    classifiers = set(torchvision.models.list_models(module=torchvision.models))
    architectures = {}
    for arch in torchvision.models.list_models():
        enum = torchvision.models.get_model_weights(arch)
        default = enum.__members__.get("DEFAULT")
        architectures[arch] = {
            "classification": arch in classifiers,
            "default": default.name if default is not None else None,
            "weights": {
                member.name: {"file": os.path.basename(member.url), **metadata(member)} for member in enum
            },
        }
    return {"version": torchvision.__version__, "architectures": architectures}


def timm_models() -> dict[str, Any]:
    import timm
    from timm.models import get_deprecated_models, get_pretrained_cfg

    from zootriage.core.zoo.timm_zoo import check_name

    models = {}
    # ``timm.is_model`` accepts the listed names and the deprecated ones (created under their new name).
    for arch in [*timm.list_models(), *sorted(get_deprecated_models())]:
        canonical = check_name(arch)
        models[arch] = canonical.partition(".")[2] or None
        cfg = get_pretrained_cfg(arch)
        if models[arch] is None and cfg is not None and (cfg.hf_hub_id or cfg.url):
            raise RuntimeError(f"timm {arch}: pretrained weights without a default tag")
    pretrained = {}
    for name in timm.list_pretrained():
        cfg = get_pretrained_cfg(name)
        if cfg is None or check_name(name) != name:
            raise RuntimeError(f"timm lists {name} as pretrained but resolves it otherwise")
        url = cfg.url if isinstance(cfg.url, str) else None  # a (url, file) pair: none in timm today
        pretrained[name] = {
            "hf_hub_id": cfg.hf_hub_id or None,
            "hf_hub_filename": cfg.hf_hub_filename or None,
            "url_file": os.path.basename(url) if url else None,
        }
    return {"version": timm.__version__, "models": models, "pretrained": pretrained}


COMMAND = "python -m zootriage.core.catalogue.publish"
BUILDERS = {"markers": markers, "torchvision": torchvision_models, "timm": timm_models}


def stale() -> list[str]:
    """The catalogues whose file differs from what the installed libraries publish now."""
    out = []
    for name in NAMES:
        path = path_of(name)
        if not path.is_file() or path.read_text(encoding="utf-8") != dumps(BUILDERS[name]()):
            out.append(name)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="only say which files are stale (exit 1)")
    args = parser.parse_args(argv)
    if args.check:
        names = stale()
        for name in names:
            print(f"{path_of(name)} is stale: run {COMMAND}", file=sys.stderr)
        return 1 if names else 0
    for name in NAMES:
        path_of(name).write_text(dumps(BUILDERS[name]()), encoding="utf-8")
        print(f"wrote {path_of(name)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
