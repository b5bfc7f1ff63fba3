"""The studies' statistics, as pure functions over arrays: study 2's (docs/study/PLAN.md, "Statistics"),
study 3's (docs/study/PLAN-3.md, "Primary tests", "The random-init floor", "The frozen rule") and the
first study's per-model correlations (:mod:`core.backtest.first_method`).

Study 2.

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

Study 3.

- A pick of a rule on a pair (a, b) with rule values v and mean outcomes y: the recipe with the higher
  v; an exact tie is *undecided* (not correct, reported apart from wrong). It is correct when the
  picked recipe's mean outcome is higher.
- d_a = (correct picks of the rule − correct picks of the baseline) / eligible pairs, per architecture
  a, pooled over both tasks; the test is the exact one-sided sign flip of mean_a d_a over
  architectures (:func:`sign_flip`), minimum attainable p = 2^−n. With fewer than ``min_archs``
  architectures the test is *not assessable* and enters Holm with p = 1.
- Admission of a recipe: mean gain over its architecture's floor ≥ ``gain`` and a one-sided Welch t
  test (recipe seeds vs floor models) p < ``p_max``; when both variances are 0 the gain alone decides.
- Architecture-cluster bootstrap: architectures resampled with replacement (``default_rng(0)``), the
  resampled architectures' pair counts pooled; 95 % percentile interval.
- The frozen rule's calibration: p̂ = max(P, 1 − P) oriented to the predicted winner; Brier =
  mean (p̂ − won)²; ECE over 5 equal-width bins of [0.5, 1] = Σ_b (n_b/N) |mean p̂_b − win rate_b|.

The first study (per model, pooled).

- Pearson r = Σ(x−x̄)(y−ȳ) / sqrt(Σ(x−x̄)² Σ(y−ȳ)²) (``scipy.stats.pearsonr``); Spearman ρ is the one
  :func:`spearman` above.
- Bootstrap 95 % intervals: resample the (x, y) pairs with replacement B times, recompute the
  coefficient, take the 2.5 % and 97.5 % percentiles (resamples where x or y is constant are dropped).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
from numpy.typing import ArrayLike
from scipy import stats as scipy_stats
from scipy.stats import beta, rankdata, spearmanr, ttest_ind
from scipy.stats import f as f_dist

Groups = Sequence[np.ndarray]
Seed = int | Sequence[int]  # anything np.random.default_rng takes: an int or a list (seed, batch)
MIN_RECIPES = 2
NOISE_Z = 1.96
PERM_CHUNK = 200_000


def spearman(x: ArrayLike, y: ArrayLike) -> float | None:
    """Spearman ρ (``scipy.stats.spearmanr``: Pearson r of average ranks), ``None`` for fewer than 2
    points or a constant input."""
    a, b = np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)
    if a.size < MIN_RECIPES or np.ptp(a) == 0 or np.ptp(b) == 0:
        return None
    return float(spearmanr(a, b).statistic)


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


# Study 3 (docs/study/PLAN-3.md)

Pick = Literal["correct", "wrong", "undecided"]
BIN_EDGES = (0.5, 0.6, 0.7, 0.8, 0.9, 1.0)


def pick(value_a: float | None, value_b: float | None, y_a: float, y_b: float) -> Pick:
    """The outcome of "pick the higher value" on one pair (``None`` = the rule cannot decide)."""
    if value_a is None or value_b is None or value_a == value_b:
        return "undecided"
    return "correct" if (value_a > value_b) == (y_a > y_b) else "wrong"


@dataclass(frozen=True)
class Tally:
    correct: int = 0
    wrong: int = 0
    undecided: int = 0

    @property
    def pairs(self) -> int:
        return self.correct + self.wrong + self.undecided

    def add(self, outcome: Pick) -> Tally:
        return Tally(
            self.correct + (outcome == "correct"),
            self.wrong + (outcome == "wrong"),
            self.undecided + (outcome == "undecided"),
        )

    def accuracy(self) -> float | None:
        return self.correct / self.pairs if self.pairs else None


def tally_summary(by_arch: Mapping[str, Tally], n_boot: int) -> dict[str, Any]:
    """A rule's pooled correct / wrong / undecided picks over the architectures' tallies, its accuracy
    (None without pairs) and the architecture-cluster bootstrap 95 % interval (:func:`cluster_bootstrap`,
    seed 0, as the plan fixes it)."""
    total = Tally(*(sum(getattr(x, f) for x in by_arch.values()) for f in ("correct", "wrong", "undecided")))
    interval = cluster_bootstrap({a: (x.correct, x.pairs) for a, x in by_arch.items()}, n_boot)
    return {
        "correct": total.correct,
        "wrong": total.wrong,
        "undecided": total.undecided,
        "pairs": total.pairs,
        "accuracy": total.accuracy(),
        "ci95": None if interval is None else list(interval),  # as JSON has it
    }


def differences(rule: Mapping[str, Tally], baseline: Mapping[str, Tally]) -> dict[str, float]:
    """d_a per architecture with at least one eligible pair (the two tallies share the pairs)."""
    out = {}
    for arch in sorted(rule):
        if rule[arch].pairs != baseline[arch].pairs:
            raise ValueError(f"{arch}: rule and baseline were scored on different pairs")
        if rule[arch].pairs:
            out[arch] = (rule[arch].correct - baseline[arch].correct) / rule[arch].pairs
    return out


def primary_test(d: Mapping[str, float], min_archs: int) -> dict[str, Any]:
    """The exact one-sided sign flip over architectures; ``p_for_holm`` is 1 when not assessable."""
    n = len(d)
    base: dict[str, Any] = {"n_archs": n, "d": dict(d), "min_p": 2.0**-n if n else None}
    if n < min_archs or n == 0:
        mean = float(np.mean(list(d.values()))) if d else None
        return {**base, "mean": mean, "p": None, "assessable": False, "p_for_holm": 1.0}
    flip = sign_flip(list(d.values()))
    return {**base, "mean": flip.mean, "p": flip.p_greater, "assessable": True, "p_for_holm": flip.p_greater}


def holm_decisions(tests: Mapping[str, Mapping[str, Any]], alpha: float) -> dict[str, dict[str, Any]]:
    """Holm's adjusted p̃ over exactly ``tests`` and each test's verdict (p̃ ≤ α)."""
    adjusted = holm({name: float(t["p_for_holm"]) for name, t in tests.items()})
    return {name: {"p_holm": adjusted[name], "significant": adjusted[name] <= alpha} for name in tests}


def admitted(recipe: Sequence[float], floor: Sequence[float], gain: float, p_max: float) -> dict[str, Any]:
    """The admission test of one recipe against its architecture × task floor."""
    r, f = np.asarray(recipe, dtype=np.float64), np.asarray(floor, dtype=np.float64)
    delta = float(r.mean() - f.mean())
    if np.ptp(r) == 0 and np.ptp(f) == 0:
        return {"gain": delta, "p": None, "admitted": delta >= gain}
    p = float(ttest_ind(r, f, equal_var=False, alternative="greater").pvalue)
    if not np.isfinite(p):  # fewer than 2 values on a side: Welch's test is undefined, nothing admitted
        return {"gain": delta, "p": None, "admitted": False}
    return {"gain": delta, "p": p, "admitted": bool(delta >= gain and p < p_max)}


def cluster_bootstrap(
    counts: Mapping[str, tuple[int, int]], n_boot: int, seed: int = 0
) -> tuple[float, float] | None:
    """95 % interval of pooled correct / pairs, resampling architectures with replacement."""
    archs = sorted(a for a, (_, n) in counts.items() if n > 0)
    if not archs:
        return None
    c = np.array([counts[a][0] for a in archs], dtype=np.float64)
    n = np.array([counts[a][1] for a in archs], dtype=np.float64)
    idx = np.random.default_rng(seed).integers(len(archs), size=(n_boot, len(archs)))
    return percentile_ci(c[idx].sum(axis=1) / n[idx].sum(axis=1))


def calibration(p_hat: np.ndarray, won: np.ndarray) -> dict[str, Any]:
    """Brier, ECE and the reliability bins of predictions oriented to the predicted winner."""
    p, w = np.asarray(p_hat, dtype=np.float64), np.asarray(won, dtype=np.float64)
    if p.size == 0:
        raise ValueError("no pairs to calibrate on")
    if p.min() < 0.5 or p.max() > 1:
        raise ValueError("oriented probabilities must lie in [0.5, 1]")
    which = np.minimum(np.searchsorted(BIN_EDGES, p, side="right") - 1, len(BIN_EDGES) - 2)
    bins, ece = [], 0.0
    for b in range(len(BIN_EDGES) - 1):
        sel = which == b
        if not sel.any():
            bins.append(
                {"lo": BIN_EDGES[b], "hi": BIN_EDGES[b + 1], "n": 0, "mean_p": None, "win_rate": None}
            )
            continue
        mean_p, rate = float(p[sel].mean()), float(w[sel].mean())
        ece += sel.sum() / p.size * abs(mean_p - rate)
        bins.append(
            {
                "lo": BIN_EDGES[b],
                "hi": BIN_EDGES[b + 1],
                "n": int(sel.sum()),
                "mean_p": mean_p,
                "win_rate": rate,
            }
        )
    return {"brier": float(np.mean((p - w) ** 2)), "ece": float(ece), "bins": bins}


def main_effects(
    y: np.ndarray, blocks: Sequence[str], design: np.ndarray, names: Sequence[str]
) -> dict[str, Any]:
    """Secondary: the recipe factors' main effects on recipe means, blocked by architecture.

    The additive model y = block + Σ_f β_f x_f (x_f ∈ {0, 1}) is fitted by least squares; each
    factor's effect is β_f (mean change when it is on) and its F test compares the full model with
    the model without that factor: F = ΔSS / (SS_res / df_res), df (1, df_res)."""
    y = np.asarray(y, dtype=np.float64)
    levels = sorted(set(blocks))
    dummies = np.array([[b == level for level in levels] for b in blocks], dtype=np.float64)
    full = np.hstack([dummies, np.asarray(design, dtype=np.float64)])
    df_res = len(y) - np.linalg.matrix_rank(full)
    if df_res < 1:
        raise ValueError("too few recipe means for the main-effects model")

    def rss(x: np.ndarray) -> tuple[float, np.ndarray]:
        coef = np.linalg.lstsq(x, y, rcond=None)[0]
        return float(np.sum((y - x @ coef) ** 2)), coef

    ss_full, coef = rss(full)
    out: dict[str, Any] = {"df_residual": int(df_res)}
    for k, name in enumerate(names):
        ss_reduced, _ = rss(np.delete(full, len(levels) + k, axis=1))
        f_stat = (ss_reduced - ss_full) / (ss_full / df_res) if ss_full > 0 else float("inf")
        out[name] = {
            "effect": float(coef[len(levels) + k]),
            "F": float(f_stat),
            "p": float(f_dist.sf(f_stat, 1, df_res)),
        }
    return out


# The first study (per model, pooled; :mod:`core.backtest.first_method`)

MIN_MODELS = 3
_CONSTANT_WARNINGS = (scipy_stats.ConstantInputWarning, scipy_stats.NearConstantInputWarning)


@dataclass(frozen=True)
class Correlation:
    """Pearson r and Spearman ρ of one marker against the outcome, with bootstrap 95% intervals.

    Coefficients are ``None`` when undefined (fewer than ``MIN_MODELS`` models, or a constant input).
    """

    n: int
    pearson: float | None
    pearson_ci: tuple[float, float] | None
    spearman: float | None
    spearman_ci: tuple[float, float] | None


def _as_vectors(x: ArrayLike, y: ArrayLike) -> tuple[np.ndarray, np.ndarray]:
    a, b = np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)
    if a.ndim != 1 or a.shape != b.shape:
        raise ValueError(f"x and y must be 1-d and of equal length, got shapes {a.shape} and {b.shape}")
    if not (np.isfinite(a).all() and np.isfinite(b).all()):
        raise ValueError("x and y must be finite")
    return a, b


def _pearson_rows(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Row-wise Pearson r of (B, n) arrays (``scipy.stats.pearsonr`` along the last axis); NaN where
    a row of either is constant. Rows are first divided by their largest magnitude (r is
    scale-invariant), so that no sum of squares overflows."""
    tiny = np.finfo(np.float64).tiny
    a = a / np.maximum(np.abs(a).max(axis=-1, keepdims=True), tiny)
    b = b / np.maximum(np.abs(b).max(axis=-1, keepdims=True), tiny)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", _CONSTANT_WARNINGS)
        return np.asarray(scipy_stats.pearsonr(a, b, axis=-1).statistic, dtype=np.float64)


def _defined(value: float) -> float | None:
    return None if math.isnan(value) else value


def pearson(x: ArrayLike, y: ArrayLike) -> float | None:
    """Pearson r (``scipy.stats.pearsonr``); ``None`` for fewer than two points or a constant input."""
    a, b = _as_vectors(x, y)
    if a.size < 2:
        return None
    return _defined(float(_pearson_rows(a, b)))


def _finite_ci(values: np.ndarray, level: float) -> tuple[float, float] | None:
    return percentile_ci(values[~np.isnan(values)], level)


def correlate(
    x: ArrayLike, y: ArrayLike, *, n_boot: int = 2000, seed: int = 0, level: float = 0.95
) -> Correlation:
    """Pearson and Spearman coefficients of ``x`` against ``y`` with percentile-bootstrap intervals.

    The resampling is ours rather than ``scipy.stats.bootstrap``'s: with a handful of models a resample
    of constant x or y is common, and scipy's percentile interval is NaN as soon as one resample's
    coefficient is; here such resamples are dropped. Each resample's coefficient is scipy's.
    """
    a, b = _as_vectors(x, y)
    if n_boot < 1 or not 0 < level < 1:
        raise ValueError(f"need n_boot >= 1 and 0 < level < 1, got {n_boot} and {level}")
    n = a.size
    if n < MIN_MODELS:
        return Correlation(n, None, None, None, None)
    r, rho = pearson(a, b), spearman(a, b)
    idx = np.random.default_rng(seed).integers(n, size=(n_boot, n))
    ra, rb = a[idx], b[idx]
    r_ci = _finite_ci(_pearson_rows(ra, rb), level) if r is not None else None
    rho_ci = None
    if rho is not None:
        rho_ci = _finite_ci(_pearson_rows(rankdata(ra, axis=1), rankdata(rb, axis=1)), level)
    return Correlation(n, r, r_ci, rho, rho_ci)
