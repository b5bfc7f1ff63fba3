"""The README's own commands do what it says: every scoring example samples enough images for GLUE's
repeats to be disjoint (so its markers are decidable, ``core.glue_subsets``), and every install
command names where the distribution comes from (it is on no package index)."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import numpy as np
import pytest

from zootriage.core.data.refs import Sampling
from zootriage.core.glue_subsets import repeat_subsets
from zootriage.core.protocol import DEFAULT_REPEATS, Protocol

README = Path(__file__).resolve().parents[2] / "README.md"
SCORING = re.compile(r"`(zootriage (?:score|submit|rank|gate|sweep start)\b[^`]*)`")
INSTALL = re.compile(r"`(pip install [^`]*)`")


def _option(argv: list[str], name: str) -> int | None:
    return int(argv[argv.index(name) + 1]) if name in argv else None


def noise_kind(argv: list[str]) -> str:
    """The noise label GLUE's repeats get from the command's sampling, on classes as large as it asks
    (``Sampling.for_repeats`` fills in the default ``--per-class``, as the client and the API do)."""
    points = _option(argv, "--points-per-class") or Protocol().points_per_class
    repeats = _option(argv, "--repeats") or DEFAULT_REPEATS
    per_class = _option(argv, "--per-class")
    sampling = Sampling(per_class=per_class) if per_class is not None else Sampling()
    size = sampling.for_repeats(points, repeats).per_class
    assert size is not None and points is not None
    classes = np.repeat(np.arange(3), size)
    _, noise = repeat_subsets(classes, points, repeats, np.random.default_rng(0))
    return noise.kind


def test_noise_kind_tells_a_too_small_sample() -> None:
    """The check itself: the README's old example (``--per-class 50``) is draws-only."""
    assert noise_kind(shlex.split("zootriage score --per-class 50")) == "draws-only"
    assert noise_kind(shlex.split("zootriage score --per-class 120")) == "overlapping"
    assert noise_kind(shlex.split("zootriage score --points-per-class 20 --per-class 100")) == "disjoint"


@pytest.mark.parametrize("command", SCORING.findall(README.read_text()))
def test_every_scoring_example_gives_disjoint_repeats(command: str) -> None:
    assert noise_kind(shlex.split(command)) == "disjoint", command


def test_the_readme_has_scoring_examples() -> None:
    assert any(c.startswith("zootriage score ") for c in SCORING.findall(README.read_text()))


def test_every_install_command_says_where_zootriage_comes_from() -> None:
    """``pip install zootriage`` resolves on no index: a checkout (``.``), a built wheel or git."""
    commands = INSTALL.findall(README.read_text())
    assert commands
    for command in commands:
        (target, *_) = shlex.split(command.removeprefix("pip install "))
        local = target == "." or target.startswith(".[")
        assert local or ".whl" in target or "@ git+" in target, command
