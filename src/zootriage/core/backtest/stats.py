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
from scipy.stats import beta, rankdata, spearmanr

Groups = Sequence[np.ndarray]
Seed = int | Sequence[int]  # anything np.random.default_rng takes: an int or a list (seed, batch)
MIN_RECIPES = 2
NOISE_Z = 1.96
PERM_CHUNK = 200_000


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


def permutation_exceedances(
    groups: Groups, x_col: int, y_col: int, n_perm: int, rng: np.random.Generator
) -> int:
    """#{ρ̄* ≥ ρ̄} over ``n_perm`` within-group shuffles of the outcome, drawn from ``rng``.

    Spearman ρ of a shuffle is the Pearson r of the marker's ranks with the *shuffled* outcome ranks
    (ranking commutes with shuffling), so the ranks are computed once; ``rng.permuted`` draws the
    same shuffles whatever the values, so this counts exactly what re-ranking every shuffle would.
    Rows are drawn in chunks of ``PERM_CHUNK`` (bounded memory); groups whose ρ is undefined are left
    out, as in ρ̄. Requires ρ̄ to be defined.
    """
    observed = mean_rho(groups, x_col, y_col)
    if observed is None:
        raise ValueError("ρ̄ is undefined: no group has a defined ρ")
    used = [g for g, r in zip(groups, rho_by_group(groups, x_col, y_col), strict=True) if r is not None]
    centred = []
    for g in used:
        rx, ry = rankdata(g[:, x_col]), rankdata(g[:, y_col])
        rx, ry = rx - rx.mean(), ry - ry.mean()
        centred.append((rx / np.sqrt((rx * rx).sum() * (ry * ry).sum()), ry))
    exceed, done = 0, 0
    while done < n_perm:
        size = min(PERM_CHUNK, n_perm - done)
        total = np.zeros(size)
        for rx, ry in centred:
            total += rng.permuted(np.tile(ry, (size, 1)), axis=1) @ rx
        exceed += int(np.sum(total / len(centred) >= observed - 1e-12))
        done += size
    return exceed


def permutation_p(groups: Groups, x_col: int, y_col: int, n_perm: int, seed: int) -> float | None:
    """One-sided within-group permutation p of ρ̄ (see the module docstring)."""
    if mean_rho(groups, x_col, y_col) is None:
        return None
    exceed = permutation_exceedances(groups, x_col, y_col, n_perm, np.random.default_rng(seed))
    return (1 + exceed) / (1 + n_perm)


def stratified_bootstrap(
    groups: Groups, statistic: Callable[[list[np.ndarray]], np.ndarray], n_boot: int, seed: Seed
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


def pair_tally(
    rows: np.ndarray, cols: PairColumns, rule: Sequence[int]
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(correct picks, decided picks, eligible pairs) of ``rule`` over the pairs of one group;
    ``rows`` is (..., n, k) and the counts have the leading shape. A pick is *decided* when the rule's
    columns are all higher in one recipe of the pair; wrong picks = decided − correct."""
    n = rows.shape[-2]
    i, j = np.triu_indices(n, k=1)
    a, b = rows[..., i, :], rows[..., j, :]
    gap = a[..., cols.outcome] - b[..., cols.outcome]
    noise = NOISE_Z * np.sqrt(a[..., cols.sd] ** 2 / a[..., cols.k] + b[..., cols.sd] ** 2 / b[..., cols.k])
    eligible = np.abs(gap) > noise
    a_higher = np.all([a[..., c] > b[..., c] for c in rule], axis=0)
    b_higher = np.all([b[..., c] > a[..., c] for c in rule], axis=0)
    correct = eligible & ((a_higher & (gap > 0)) | (b_higher & (gap < 0)))
    decided = eligible & (a_higher | b_higher)
    return correct.sum(axis=-1), decided.sum(axis=-1), eligible.sum(axis=-1)


def pair_counts(rows: np.ndarray, cols: PairColumns, rule: Sequence[int]) -> tuple[np.ndarray, np.ndarray]:
    """(correct picks, eligible pairs) of ``rule`` over the pairs of one group (:func:`pair_tally`)."""
    correct, _, eligible = pair_tally(rows, cols, rule)
    return correct, eligible


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


def case_bootstrap(flags: Sequence[np.ndarray], n_boot: int, seed: Seed) -> np.ndarray:
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


def holm_thresholds(pvalues: dict[str, float], alpha: float) -> dict[str, float]:
    """Each test's step-down threshold α / (m − i) where i is its 0-based rank by p (ties keep the
    order of ``pvalues``): Holm rejects the first tests whose p is at or below their threshold."""
    order = sorted(pvalues, key=lambda name: pvalues[name])
    m = len(order)
    return {name: alpha / (m - i) for i, name in enumerate(order)}


def mc_standard_error(p: float, n: int) -> float:
    """Monte Carlo standard error of a p-value estimated from ``n`` random draws: the binomial
    sqrt(p (1 − p) / n)."""
    if n < 1:
        raise ValueError(f"n must be >= 1, got {n}")
    return float(np.sqrt(p * (1 - p) / n))


def binomial_interval(hits: int, n: int, level: float) -> tuple[float, float]:
    """Clopper–Pearson interval of a binomial proportion (``hits`` of ``n``) at ``level``: the
    proportions whose one-sided tail probability of the count is at least (1 − level) / 2."""
    if not 0 <= hits <= n or n < 1:
        raise ValueError(f"need 0 <= hits <= n and n >= 1, got {hits} of {n}")
    tail = (1 - level) / 2
    lo = 0.0 if hits == 0 else float(beta.ppf(tail, hits, n - hits + 1))
    hi = 1.0 if hits == n else float(beta.ppf(1 - tail, hits + 1, n - hits))
    return lo, hi


@dataclass(frozen=True)
class SignFlip:
    """An exact sign-flip test of a mean over clusters: the mean of ``values``, its one-sided
    (greater) and two-sided p over all 2^n sign patterns, and the number of patterns."""

    mean: float
    p_greater: float
    p_two_sided: float
    patterns: int


MAX_SIGN_FLIP = 20


def sign_flip(values: Sequence[float]) -> SignFlip:
    """Exact sign-flip (randomisation) test of mean(values) = 0 over clusters.

    Under H0 each cluster's value is symmetric about 0, so all 2^n sign patterns are equally likely;
    p_greater = #{T* ≥ T} / 2^n and p_two_sided = #{|T*| ≥ |T|} / 2^n with T the mean (the observed
    pattern counts). With n clusters no p can be below 1/2^n (one-sided) or 2/2^n (two-sided), and
    a cluster whose value is 0 doubles every count.
    """
    x = np.asarray(values, dtype=np.float64)
    n = x.size
    if not 1 <= n <= MAX_SIGN_FLIP:
        raise ValueError(f"need 1 to {MAX_SIGN_FLIP} clusters, got {n}")
    bits = (np.arange(2**n)[:, None] >> np.arange(n)) & 1
    means = ((1 - 2 * bits) * x).mean(axis=1)
    observed = float(x.mean())
    tol = 1e-12
    return SignFlip(
        mean=observed,
        p_greater=float(np.mean(means >= observed - tol)),
        p_two_sided=float(np.mean(np.abs(means) >= abs(observed) - tol)),
        patterns=2**n,
    )
