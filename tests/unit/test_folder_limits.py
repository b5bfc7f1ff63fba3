"""An ImageFolder tree is held to the archive limits (images, classes, entries) while it is listed:
a tree over one is refused as ``ArchiveTooLarge`` before any file is sorted or resolved."""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from zootriage.core.data import folders
from zootriage.core.data.archives import ArchiveLimits
from zootriage.core.data.open import open_dataset
from zootriage.core.data.refs import parse_dataset_ref
from zootriage.core.errors import ArchiveTooLarge

FOLDER = parse_dataset_ref("folder:tree")


def _png(value: int) -> bytes:
    out = io.BytesIO()
    Image.new("L", (4, 4), value).save(out, "PNG")
    return out.getvalue()


def _tree(root: Path, per_class: dict[str, int], extra: int = 0) -> Path:
    for name, n in per_class.items():
        (root / "tree" / name / "sub").mkdir(parents=True)
        for i in range(n):
            where = root / "tree" / name / ("sub" if i % 2 else "") / f"{i:03d}.png"
            where.write_bytes(_png(i))
        for i in range(extra):
            (root / "tree" / name / f"note{i}.txt").write_text("x")
    return root


@pytest.fixture
def resolved(monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    """Every path the folder reader resolves (checks against its root)."""
    calls: list[Path] = []
    real = folders.ensure_inside

    def spy(path: Path, root: Path, shown: str) -> Path:
        calls.append(path)
        return real(path, root, shown)

    monkeypatch.setattr(folders, "ensure_inside", spy)
    return calls


def test_a_folder_over_the_image_limit_is_refused_while_listed(tmp_path: Path, resolved: list[Path]) -> None:
    root = _tree(tmp_path, {"a": 30, "b": 30})
    with pytest.raises(ArchiveTooLarge, match=r"^archive_too_large: 'tree': over the 5-image limit"):
        open_dataset(FOLDER, roots=[root], limits=ArchiveLimits(max_folder_images=5))
    assert resolved == [root / "tree" / "a", root / "tree" / "b"]  # the classes, no file


def test_a_folder_over_the_class_limit_is_refused(tmp_path: Path, resolved: list[Path]) -> None:
    root = _tree(tmp_path, {f"c{k}": 1 for k in range(5)})
    with pytest.raises(ArchiveTooLarge, match=r"'tree': over the 3-class limit"):
        open_dataset(FOLDER, roots=[root], limits=ArchiveLimits(max_classes=3))
    assert resolved == []


def test_a_folder_of_many_non_images_is_refused(tmp_path: Path) -> None:
    root = _tree(tmp_path, {"a": 2}, extra=40)  # 2 images, 40 other files: over 2·5 + 16 entries
    with pytest.raises(ArchiveTooLarge, match=r"'tree': over 26 files and folders"):
        open_dataset(FOLDER, roots=[root], limits=ArchiveLimits(max_folder_images=5))


def test_a_folder_at_the_limits_lists_as_before(tmp_path: Path) -> None:
    root = _tree(tmp_path, {"b": 3, "a": 3}, extra=2)
    images = open_dataset(FOLDER, roots=[root], limits=ArchiveLimits(max_folder_images=6, max_classes=2))
    expected = [p.resolve() for c in ("a", "b") for p in sorted((root / "tree" / c).rglob("*"))
                if p.suffix == ".png"]
    assert images.loader.paths == tuple(expected)  # type: ignore[attr-defined]
    assert images.classes == ("a", "b") and images.labels.tolist() == [0, 0, 0, 1, 1, 1]
    assert images.identity == {"folder": "tree", "files": 6}
    assert np.array_equal(np.asarray(images.loader(1)), np.full((3, 4, 4), 2, np.uint8))  # a/002.png, as RGB


def test_the_folder_bound_leaves_room_for_imagenet_training_sets() -> None:
    """A folder is listed, not inflated: its default bound is well above an archive's 200,000 images,
    so a folder as large as ImageNet-1k's training set (1,281,167 images) is still read."""
    limits = ArchiveLimits()
    assert limits.max_folder_images >= 1_281_167 > limits.max_images
