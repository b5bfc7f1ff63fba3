"""The first study's method (docs/study/README.md, "Protocol of 2026-11-30"), per model and pooled:
what ``POST /v1/backtests`` answers with ``method="first-study"``.

Over :class:`Record` s (a model's architecture, its measured OOD outcome and its marker values):

- per marker, Pearson r and Spearman ρ with their bootstrap 95 % intervals, pooled and within each
  architecture (:func:`core.backtest.stats.correlate`);
- pairwise test (the paper's v1/v2 verdict generalised to a zoo): over every pair of models of one
  architecture whose outcomes differ, a rule picks one model or abstains. A pick is a *win* when the
  picked model has the higher outcome. "Higher marker" picks the model with the higher value; the
  geometry rule picks the model whose D_eff AND Ψ_eff are both higher, and abstains when they disagree.
  Rates are fractions of all decidable pairs, so wins + losses + undecided = 1.

The pre-registered method (recipes of seeds, ρ̄ over architectures, noise-eligible recipe pairs) is
:mod:`core.backtest.on_runs`; this one is kept for the answers given before it.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from zootriage.core.backtest.stats import MIN_MODELS, Correlation, correlate

# What one back-test may cost, checked before any work (the other methods bound theirs the same way,
# ``core.backtest.on_runs``): same-architecture model pairs × markers (each pair is compared once per
# marker, in Python), and bootstrap draws × models (each marker's correlation resamples that many).
MAX_PAIR_CELLS = 2_000_000
MAX_BOOT_CELLS = 2_000_000


@dataclass(frozen=True)
class Record:
    """One model: a label, its architecture (pairs are only formed within one), its measured
    outcome (e.g. OOD probe accuracy) and its marker values (``None`` where not applicable)."""

    model: str
    architecture: str
    outcome: float
    markers: Mapping[str, float | None]


@dataclass(frozen=True)
class PairwiseRate:
    """How often a rule picked the model with the better outcome over ``pairs`` decidable pairs."""

    pairs: int
    wins: float
    losses: float
    undecided: float


@dataclass(frozen=True)
class MarkerBacktest:
    """One marker: pooled and per-architecture correlations, and its "pick higher" pairwise rate."""

    pooled: Correlation
    by_architecture: dict[str, Correlation]
    pairwise: PairwiseRate


@dataclass(frozen=True)
class Backtest:
    """Every marker's back-test, plus the geometry rule's pairwise rate when both of its markers exist."""

    n_models: int
    architectures: dict[str, int]
    markers: dict[str, MarkerBacktest]
    geometry_rule: PairwiseRate | None = None
    rule_markers: tuple[str, str] = ("dimension", "utilization")
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _rate(outcomes: list[int], pairs: int) -> PairwiseRate:
    if pairs == 0:
        return PairwiseRate(0, 0.0, 0.0, 0.0)
    wins, losses = outcomes.count(1), outcomes.count(-1)
    return PairwiseRate(pairs, wins / pairs, losses / pairs, (pairs - wins - losses) / pairs)


def _by_architecture(records: Sequence[Record]) -> dict[str, list[Record]]:
    groups: dict[str, list[Record]] = {}
    for record in records:
        groups.setdefault(record.architecture, []).append(record)
    return groups


def _pairs(records: Sequence[Record]) -> list[tuple[Record, Record]]:
    """Pairs of one architecture with different outcomes, ordered so the first transfers better
    (formed within each architecture: their count, not the square of all models, is the cost)."""
    out = []
    for group in _by_architecture(records).values():
        for first, second in itertools.combinations(group, 2):
            if first.outcome != second.outcome:
                out.append((first, second) if first.outcome > second.outcome else (second, first))
    return out


def _check_size(records: Sequence[Record], n_markers: int, n_boot: int) -> None:
    """``ValueError`` (a 422) before any work when the back-test would pass the bounds above."""
    pairs = sum(len(g) * (len(g) - 1) // 2 for g in _by_architecture(records).values())
    if pairs * n_markers > MAX_PAIR_CELLS:
        raise ValueError(
            f"{pairs} same-architecture model pairs × {n_markers} markers exceeds {MAX_PAIR_CELLS:,}: "
            "back-test fewer models or markers at a time, or use the confirmatory method"
        )
    if n_boot * len(records) > MAX_BOOT_CELLS:
        raise ValueError(
            f"n_boot {n_boot} × {len(records)} models exceeds {MAX_BOOT_CELLS:,}: lower n_boot"
        )


def _sign(better: float | None, worse: float | None) -> int:
    if better is None or worse is None or better == worse:
        return 0
    return 1 if better > worse else -1


def pairwise_higher(records: Sequence[Record], marker: str) -> PairwiseRate:
    """Rate of "pick the model with the higher ``marker``" (ties and missing values abstain)."""
    pairs = _pairs(records)
    verdicts = [_sign(good.markers.get(marker), bad.markers.get(marker)) for good, bad in pairs]
    return _rate(verdicts, len(pairs))


def pairwise_both_higher(records: Sequence[Record], first: str, second: str) -> PairwiseRate:
    """Rate of the geometry rule: pick the model where ``first`` and ``second`` are both higher."""
    pairs = _pairs(records)
    verdicts = []
    for good, bad in pairs:
        a = _sign(good.markers.get(first), bad.markers.get(first))
        b = _sign(good.markers.get(second), bad.markers.get(second))
        verdicts.append(a if a == b else 0)
    return _rate(verdicts, len(pairs))


def _values(records: Sequence[Record], marker: str) -> tuple[list[float], list[float]]:
    kept = [(r.markers.get(marker), r.outcome) for r in records]
    pairs = [(float(v), o) for v, o in kept if v is not None]
    return [v for v, _ in pairs], [o for _, o in pairs]


def validate_records(records: Sequence[Record]) -> None:
    """Raise ``ValueError`` on duplicate model labels or non-finite outcomes or marker values."""
    seen: set[str] = set()
    for record in records:
        if record.model in seen:
            raise ValueError(f"model {record.model!r} appears twice")
        seen.add(record.model)
        if not math.isfinite(record.outcome):
            raise ValueError(f"model {record.model!r}: the outcome must be finite, got {record.outcome}")
        for name, value in record.markers.items():
            if value is not None and not math.isfinite(value):
                raise ValueError(f"model {record.model!r}: marker {name!r} is not finite ({value})")


def backtest(
    records: Sequence[Record],
    markers: Sequence[str] | None = None,
    *,
    rule_markers: tuple[str, str] = ("dimension", "utilization"),
    n_boot: int = 2000,
    seed: int = 0,
) -> Backtest:
    """Back-test every marker (default: every name any record carries) against the outcome.

    Raises ``ValueError`` for fewer than ``MIN_MODELS`` records or invalid ones, and for a back-test
    over the bounds ``MAX_PAIR_CELLS`` and ``MAX_BOOT_CELLS``.
    """
    records = list(records)
    if len(records) < MIN_MODELS:
        raise ValueError(f"a back-test needs at least {MIN_MODELS} models, got {len(records)}")
    validate_records(records)
    names = list(markers) if markers is not None else sorted({n for r in records for n in r.markers})
    _check_size(records, len(names), n_boot)
    archs: dict[str, int] = {}
    for record in records:
        archs[record.architecture] = archs.get(record.architecture, 0) + 1
    results = {}
    for name in names:
        pooled = correlate(*_values(records, name), n_boot=n_boot, seed=seed)
        per_arch = {
            arch: correlate(
                *_values([r for r in records if r.architecture == arch], name), n_boot=n_boot, seed=seed
            )
            for arch in sorted(archs)
        }
        results[name] = MarkerBacktest(pooled, per_arch, pairwise_higher(records, name))
    notes = []
    rule = None
    if all(any(r.markers.get(m) is not None for r in records) for m in rule_markers):
        rule = pairwise_both_higher(records, *rule_markers)
    else:
        notes.append(f"geometry rule not evaluated: no values for {' and '.join(rule_markers)}")
    if not _pairs(records):
        notes.append("no pair of models shares an architecture with different outcomes: no pairwise test")
    return Backtest(len(records), archs, results, rule, rule_markers, notes)
