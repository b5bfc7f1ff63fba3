"""The pre-registered statistics (docs/study/PLAN.md, "Statistics"), as pure functions over arrays.

Recipe-level data of one analysis are a list of *groups* (one per architecture), each an (n_g, k)
array whose rows are recipes; columns are named by the caller. Resampling is over recipes, never
models: a recipe's seeds are not independent evidence.

- ρ̄ = mean over groups of Spearman ρ(marker, outcome) (``scipy.stats.spearmanr``); a group with
  fewer than 2 recipes or a constant column has no ρ and is left out of the mean.
- Permutation p (H1/H2): outcomes are shuffled within each group B times;
  p = (1 + #{ρ̄* ≥ ρ̄}) / (1 + B).
- Stratified bootstrap: rows are resampled with replacement within each group; the statistic is
  recomputed on each resample and the 95 % interval is the 2.5 and 97.5 percentiles; resamples on
  which the statistic is undefined (NaN) are dropped.
- Pairwise rules (H3): over same-group pairs of recipes whose outcome gap exceeds seed noise,
  |Δy| > 1.96 · sqrt(s_a²/k_a + s_b²/k_b), a rule picks the recipe whose rule columns are all higher
  (otherwise it is undecided); acc = correct picks / eligible pairs, an undecided pick not correct.
- Case bootstrap (H4): architectures are resampled with replacement, then seeds within each chosen
  architecture.
- Holm's step-down correction: with p sorted ascending, p̃_(i) = max_{j ≤ i} min(1, (m − j + 1) p_(j)).

``scipy.stats.permutation_test`` and ``scipy.stats.bootstrap`` do not stratify, so the resampling is
done here with numpy; Spearman ρ of a resample is the Pearson r of its average ranks, as in scipy.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
from scipy.stats import rankdata, spearmanr

Groups = Sequence[np.ndarray]
MIN_RECIPES = 2
NOISE_Z = 1.96


def spearman(x: np.ndarray, y: np.ndarray) -> float | None:
    """Spearman ρ, ``None`` for fewer than 2 points or a constant input."""
    if x.size < MIN_RECIPES or np.ptp(x) == 0 or np.ptp(y) == 0:
        return None
    return float(spearmanr(x, y).statistic)


def _rank_rho_rows(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Row-wise Spearman ρ of (B, n) arrays (Pearson r of average ranks); NaN for a constant row."""
    rx, ry = rankdata(x, axis=-1), rankdata(y, axis=-1)
    rx = rx - rx.mean(axis=-1, keepdims=True)
    ry = ry - ry.mean(axis=-1, keepdims=True)
    den = np.sqrt((rx * rx).sum(axis=-1) * (ry * ry).sum(axis=-1))
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(den > 0, (rx * ry).sum(axis=-1) / np.where(den > 0, den, 1.0), np.nan)


def rho_by_group(groups: Groups, x_col: int, y_col: int) -> list[float | None]:
    return [spearman(g[:, x_col], g[:, y_col]) for g in groups]


def mean_rho(groups: Groups, x_col: int, y_col: int) -> float | None:
    """ρ̄ over the groups where ρ is defined; ``None`` when it is defined in none."""
    values = [r for r in rho_by_group(groups, x_col, y_col) if r is not None]
    return float(np.mean(values)) if values else None


def permutation_p(groups: Groups, x_col: int, y_col: int, n_perm: int, seed: int) -> float | None:
    """One-sided within-group permutation p of ρ̄ (see the module docstring)."""
    observed = mean_rho(groups, x_col, y_col)
    if observed is None:
        return None
    used = [g for g, r in zip(groups, rho_by_group(groups, x_col, y_col), strict=True) if r is not None]
    rng = np.random.default_rng(seed)
    total = np.zeros(n_perm)
    for g in used:
        y = rng.permuted(np.tile(g[:, y_col], (n_perm, 1)), axis=1)
        total += _rank_rho_rows(np.tile(g[:, x_col], (n_perm, 1)), y)
    exceed = int(np.sum(total / len(used) >= observed - 1e-12))
    return (1 + exceed) / (1 + n_perm)


def stratified_bootstrap(
    groups: Groups, statistic: Callable[[list[np.ndarray]], np.ndarray], n_boot: int, seed: int
) -> np.ndarray:
    """The statistic on ``n_boot`` resamples; ``statistic`` takes a list of (B, n_g, k) arrays (each
    group's rows resampled within the group) and returns (B,) values, NaN where undefined."""
    rng = np.random.default_rng(seed)
    resampled = [g[rng.integers(len(g), size=(n_boot, len(g)))] for g in groups]
    values = np.asarray(statistic(resampled), dtype=np.float64)
    return values[~np.isnan(values)]


def percentile_ci(values: np.ndarray, level: float = 0.95) -> tuple[float, float] | None:
    if values.size == 0:
        return None
    tail = 100 * (1 - level) / 2
    lo, hi = np.percentile(values, [tail, 100 - tail])
    return float(lo), float(hi)


def mean_rho_rows(x_col: int, y_col: int) -> Callable[[list[np.ndarray]], np.ndarray]:
    """ρ̄ of each resample (NaN when some group's ρ is undefined in it)."""

    def statistic(resampled: list[np.ndarray]) -> np.ndarray:
        rows = [_rank_rho_rows(g[..., x_col], g[..., y_col]) for g in resampled]
        return np.mean(rows, axis=0)

    return statistic


@dataclass(frozen=True)
class PairColumns:
    """Where a recipe row keeps its outcome mean, outcome seed SD and number of kept seeds."""

    outcome: int
    sd: int
    k: int


def pair_counts(rows: np.ndarray, cols: PairColumns, rule: Sequence[int]) -> tuple[np.ndarray, np.ndarray]:
    """(correct picks, eligible pairs) of ``rule`` over the pairs of one group; ``rows`` is
    (..., n, k) and the counts have the leading shape."""
    n = rows.shape[-2]
    i, j = np.triu_indices(n, k=1)
    a, b = rows[..., i, :], rows[..., j, :]
    gap = a[..., cols.outcome] - b[..., cols.outcome]
    noise = NOISE_Z * np.sqrt(a[..., cols.sd] ** 2 / a[..., cols.k] + b[..., cols.sd] ** 2 / b[..., cols.k])
    eligible = np.abs(gap) > noise
    a_higher = np.all([a[..., c] > b[..., c] for c in rule], axis=0)
    b_higher = np.all([b[..., c] > a[..., c] for c in rule], axis=0)
    correct = eligible & ((a_higher & (gap > 0)) | (b_higher & (gap < 0)))
    return correct.sum(axis=-1), eligible.sum(axis=-1)


def pair_accuracy(groups: Groups, cols: PairColumns, rule: Sequence[int]) -> tuple[float | None, int]:
    """Pooled pairwise accuracy over the groups and the number of eligible pairs."""
    correct = eligible = 0
    for g in groups:
        c, e = pair_counts(g, cols, rule)
        correct, eligible = correct + int(c), eligible + int(e)
    return (correct / eligible if eligible else None), eligible


def delta_rows(
    cols: PairColumns, rule: Sequence[int], baseline: Sequence[int]
) -> Callable[[list[np.ndarray]], np.ndarray]:
    """Δ = acc(rule) − acc(baseline) of each resample, eligible pairs recomputed in each."""

    def statistic(resampled: list[np.ndarray]) -> np.ndarray:
        shape = resampled[0].shape[0] if resampled else 0
        rule_correct, base_correct, eligible = np.zeros(shape), np.zeros(shape), np.zeros(shape)
        for g in resampled:
            c, e = pair_counts(g, cols, rule)
            rule_correct, eligible = rule_correct + c, eligible + e
            base_correct = base_correct + pair_counts(g, cols, baseline)[0]
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(eligible > 0, (rule_correct - base_correct) / np.maximum(eligible, 1), np.nan)

    return statistic


def case_bootstrap(flags: Sequence[np.ndarray], n_boot: int, seed: int) -> np.ndarray:
    """Mean of per-case values over resamples: architectures with replacement, then each chosen
    architecture's cases (rows of ``flags[a]``) with replacement."""
    rng = np.random.default_rng(seed)
    n_arch = len(flags)
    sizes = np.array([len(f) for f in flags])
    width = int(sizes.max())
    padded = np.zeros((n_arch, width))
    for a, f in enumerate(flags):
        padded[a, : len(f)] = f
    archs = rng.integers(n_arch, size=(n_boot, n_arch))
    picks = np.floor(rng.random((n_boot, n_arch, width)) * sizes[archs][..., None]).astype(int)
    used = np.arange(width)[None, None, :] < sizes[archs][..., None]
    values = padded[archs[..., None], picks] * used
    return values.sum(axis=(1, 2)) / used.sum(axis=(1, 2))


def holm(pvalues: dict[str, float]) -> dict[str, float]:
    """Holm-adjusted p-values (compare each with α)."""
    order = sorted(pvalues, key=lambda name: pvalues[name])
    m = len(order)
    adjusted, running = {}, 0.0
    for i, name in enumerate(order):
        running = max(running, min(1.0, (m - i) * pvalues[name]))
        adjusted[name] = running
    return {name: adjusted[name] for name in pvalues}
