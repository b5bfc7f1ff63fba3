"""Which points each GLUE repeat uses, and how much of the sampling noise the repeats can see.

A run's markers are meant to be compared with another run's, computed on other images. Between two
such runs the marker moves for two reasons: which images were sampled (image noise, variance σ_I²/m
for a repeat on m points per class, to first order, since the markers are smooth functions of
point averages) and which Gaussian directions and dichotomies were drawn (draw noise σ_D²). The
spread of the repeats measures both only when every repeat has its own images.

Each class μ has M_μ extracted points and each repeat uses m = ``points_per_class`` of them:

* ``"disjoint"`` (M_μ ≥ R·m for every class): a seeded permutation of each class is cut into R
  blocks of m. The blocks are disjoint simple random samples of the images, so the repeats are
  independent and s² over them estimates σ_I²/m + σ_D²: the std needs no correction.
* ``"overlapping"`` (m < M_μ < R·m for some class): each repeat draws m of the M_μ points without
  replacement. Given the M_μ extracted points, a repeat's image part varies only by which m of them
  it takes, with the finite-population variance (σ_I²/m)(1 − f), f = m/M_μ; the part shared by
  every repeat (the extracted sample itself, variance σ_I²/M_μ) never shows. So
      E[s²] = (σ_I²/m)(1 − f) + σ_D²  ≥ (1 − f)(σ_I²/m + σ_D²),
  while the stored mean over R repeats has variance about σ_I²/M_μ + σ_D²/R ≤ (σ_I²/m + σ_D²)·f
  (as R·f > 1 here). Hence se² ≤ s²·f/(1 − f): the conservative standard error is the measured
  s/√R times ``inflation`` = √(R·f/(1 − f)) (> 1 whenever the subsets overlap), with f of the
  tightest class.
* ``"draws-only"`` (M_μ ≤ m for some class, or no ``points_per_class``): every repeat sees all of
  that class's points, f = 1, the image noise is invisible and no finite factor bounds it: the std
  is a lower bound, ``inflation`` is None and such markers must not decide.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np

from zootriage.core.noise import OVERLAPPING

NoiseKind = Literal["disjoint", "overlapping", "draws-only"]
_ORDER: tuple[NoiseKind, ...] = ("disjoint", "overlapping", "draws-only")


@dataclass(frozen=True)
class Noise:
    """What the repeats' spread measures (module docstring). ``fraction`` is f = m/M of the tightest
    class; ``inflation`` the factor on std/√R that bounds the standard error (1 for disjoint repeats,
    None when no factor does); ``reason`` says why the noise is partial (None for disjoint)."""

    kind: NoiseKind
    fraction: float
    inflation: float | None
    reason: str | None


def repeat_subsets(
    classes: np.ndarray, points_per_class: int | None, repeats: int, rng: np.random.Generator
) -> tuple[list[np.ndarray], Noise]:
    """The point indices of every repeat (each class-major, ascending within a class) and the noise
    label of the module docstring. Classes are drawn from ``rng`` in class order, so the subsets
    depend on the seed alone."""
    per_repeat: list[list[np.ndarray]] = [[] for _ in range(repeats)]
    kind: NoiseKind = "disjoint"
    fraction, tightest = 0.0, (0, 0)
    for c in range(int(classes.max()) + 1):
        members = np.flatnonzero(classes == c)
        size = members.size
        m = size if points_per_class is None else min(points_per_class, size)
        if m == size:
            here: NoiseKind = "draws-only"
            picks = [members] * repeats
        elif size >= repeats * m:
            here = "disjoint"
            order = rng.permutation(members)
            picks = [np.sort(order[j * m : (j + 1) * m]) for j in range(repeats)]
        else:
            here = "overlapping"
            picks = [np.sort(rng.choice(members, size=m, replace=False)) for _ in range(repeats)]
        for j, pick in enumerate(picks):
            per_repeat[j].append(pick)
        kind = max(kind, here, key=_ORDER.index)
        if m / size > fraction:
            fraction, tightest = m / size, (m, size)
    return [np.concatenate(parts) for parts in per_repeat], _label(kind, fraction, tightest, repeats)


def seeded_subsets(
    classes: np.ndarray, points_per_class: int | None, repeats: int, seed: int
) -> tuple[list[np.ndarray], Noise]:
    """``repeat_subsets`` drawn from the first child of ``SeedSequence(seed)``: the subsets of
    ``core.glue.analyze`` under that seed, so that markers outside GLUE can measure their noise over
    the very same points (``core.markers.compute``)."""
    (partition,) = np.random.SeedSequence(seed).spawn(1)
    return repeat_subsets(classes, points_per_class, repeats, np.random.default_rng(partition))


def _label(kind: NoiseKind, fraction: float, tightest: tuple[int, int], repeats: int) -> Noise:
    m, size = tightest
    if kind == "disjoint" or repeats == 1:
        return Noise(kind, fraction, 1.0, None)
    if kind == "draws-only":
        return Noise(
            kind,
            fraction,
            None,
            f"draws-only noise: every repeat used all {size} points of a class (≤ {m} per repeat), so "
            f"the spread omits which images were sampled and is a lower bound; extract at least "
            f"{repeats} × points_per_class images per class",
        )
    inflation = float(np.sqrt(repeats * fraction / (1.0 - fraction)))
    return Noise(
        kind,
        fraction,
        inflation,
        f"{OVERLAPPING}: {repeats} repeats of {m} points share a class of {size}; the std is "
        f"inflated ×{inflation:.2f} by the finite-population bound (disjoint repeats need "
        f"{repeats * m} per class)",
    )
