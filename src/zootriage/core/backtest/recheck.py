"""A re-check of a finished study from its stored records (issue 24): the registered analysis
recomputed, with what the first report left out.

- **Decisive Monte Carlo p-values.** The plan's p-values are Monte Carlo estimates: H1/H2 from
  within-architecture permutations, p = (1 + hits) / (1 + n); H3/H4 from bootstraps, p = hits / n
  (hits: resamples with Δ* ≤ 0). Each has a binomial error, SE = sqrt(p (1 − p) / n). The first
  batch of every test is the plan's own (its seed, 10,000 draws), so it reproduces the registered p;
  further batches use the seeds (seed, 1), (seed, 2), ... Draws are doubled for every test whose
  99.9 % Clopper–Pearson interval contains its Holm threshold α / (m − rank), or whose Holm verdict
  differs between the interval ends (Holm is monotone in each p, so equal verdicts at the lower and
  the upper ends of every interval mean no p inside them can flip one), until none is left or a test
  reaches ``max_draws`` (then it is reported as unsettled).
- **H4 before the BatchNorm fix** (the 15 cases the first report saw) beside the 25 cases.
- **H4 at the architecture level**: an exact sign-flip test over the architectures of the per-
  architecture mean difference between two rules' correct picks (:func:`stats.sign_flip`); with 5
  architectures no one-sided p is below 1/32 and no two-sided p below 2/32.
- **Trivial baselines** beside every H4 figure: "always v2" and "more v2 parts" (the weights whose
  recipe has more of the v2 recipe's ingredients).
- **Undecided picks apart from wrong ones**: per rule, the rate of deciding and the win rate among
  decided pairs (recipe-bootstrap intervals), beside the plan's accuracy (undecided counted wrong).
- **The decision rule re-applied** to the primary results with the decisive p-values.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from functools import partial
from typing import Any

import numpy as np

from zootriage.core.backtest import stats
from zootriage.core.backtest.analysis import (
    HYPOTHESES,
    TASKS,
    exclusions,
    hypothesis_tests,
    marker_names,
    v1_v2_cases,
    with_holm,
)
from zootriage.core.backtest.config import StudyConfig, V1V2Config
from zootriage.core.backtest.decision import decide
from zootriage.core.backtest.evidence import RULES
from zootriage.core.backtest.hypotheses import GEOMETRY_RULE, case_differences, v1_v2
from zootriage.core.backtest.measure import PRIMARY
from zootriage.core.backtest.tables import ID_ACCURACY, Model, accuracy_filter, groups, kept, recipe_rows

LEVEL = 0.999
# Draws per call: bounds memory (a bootstrap of recipe pairs holds (n, pairs, columns) arrays).
BATCH = {"permutation": 200_000, "pair_bootstrap": 20_000, "case_bootstrap": 100_000}
H4_RULES = ("geometry", "id_accuracy", "always_v2", "more_v2_parts")
EXACT_PAIRS = (("geometry", "id_accuracy"), ("geometry", "always_v2"), ("always_v2", "id_accuracy"))

Draw = Callable[[int, stats.Seed], tuple[int, int]]  # (n, seed) -> (hits, valid draws)


@dataclass(frozen=True)
class MonteCarloP:
    """A Monte Carlo p-value: ``hits`` of ``draws`` (see the module docstring for each kind)."""

    kind: str
    hits: int
    draws: int

    @property
    def p(self) -> float:
        if self.kind == "permutation":
            return (1 + self.hits) / (1 + self.draws)
        return self.hits / self.draws

    @property
    def se(self) -> float:
        return stats.mc_standard_error(self.p, self.draws + (self.kind == "permutation"))

    def interval(self, level: float) -> tuple[float, float]:
        if self.kind == "permutation":
            return stats.binomial_interval(self.hits + 1, self.draws + 1, level)
        return stats.binomial_interval(self.hits, self.draws, level)


def _permutation_draw(gs: list[np.ndarray], n: int, seed: stats.Seed) -> tuple[int, int]:
    return stats.permutation_exceedances(gs, 0, 1, n, np.random.default_rng(seed)), n


def _pair_draw(
    gs: list[np.ndarray], statistic: Callable[[list[np.ndarray]], np.ndarray], n: int, seed: stats.Seed
) -> tuple[int, int]:
    boot = stats.stratified_bootstrap(gs, statistic, n, seed)
    return int(np.sum(boot <= 0)), int(boot.size)


def _case_draw(flags: list[np.ndarray], n: int, seed: stats.Seed) -> tuple[int, int]:
    boot = stats.case_bootstrap(flags, n, seed)
    return int(np.sum(boot <= 0)), int(boot.size)


def draw_sources(
    zoo: Sequence[Model], arm: Sequence[Model], config: StudyConfig, n_scored: int
) -> dict[str, tuple[str, Draw]]:
    """For each primary test, its kind and a function drawing ``n`` more resamples with a seed;
    the data each test sees are exactly those of :func:`analysis.hypothesis_tests`."""
    out: dict[str, tuple[str, Draw]] = {}
    for centering in config.markers.centerings:
        for task in TASKS:
            models = kept([m for m in zoo if m["task"] == task], centering)
            rows = recipe_rows(models, centering, marker_names(), [PRIMARY])
            for hyp, marker in HYPOTHESES.items():
                out[f"{hyp}/{task}/{centering}"] = (
                    "permutation",
                    partial(_permutation_draw, groups(rows, [marker, PRIMARY])),
                )
            names = list(dict.fromkeys([PRIMARY, *GEOMETRY_RULE, ID_ACCURACY]))
            cols = stats.PairColumns(outcome=0, sd=len(names), k=len(names) + 1)
            statistic = stats.delta_rows(
                cols, [names.index(r) for r in GEOMETRY_RULE], [names.index(ID_ACCURACY)]
            )
            out[f"H3/{task}/{centering}"] = (
                "pair_bootstrap",
                partial(_pair_draw, groups(rows, names, sd_of=PRIMARY), statistic),
            )
        if config.v1v2 is not None:
            cases = v1_v2_cases(kept(arm, centering))
            records = v1_v2(cases, centering, PRIMARY, n_scored, n_boot=1, seed=config.seed)["records"]
            flags = case_differences(records, "geometry_correct", "id_correct")
            out[f"H4/{centering}"] = ("case_bootstrap", partial(_case_draw, flags))
    return out


def unsettled(mc: dict[str, MonteCarloP], alpha: float, level: float) -> list[str]:
    """Tests whose Holm verdict the Monte Carlo error could still flip (see the module docstring)."""
    ps = {t: m.p for t, m in mc.items()}
    bounds = {t: m.interval(level) for t, m in mc.items()}
    thresholds = stats.holm_thresholds(ps, alpha)
    straddle = {t for t in mc if bounds[t][0] <= thresholds[t] < bounds[t][1]}
    sig_lo = {t for t, v in stats.holm({t: b[0] for t, b in bounds.items()}).items() if v <= alpha}
    sig_hi = {t for t, v in stats.holm({t: b[1] for t, b in bounds.items()}).items() if v <= alpha}
    return sorted(straddle | (sig_lo ^ sig_hi))


def decisive_p_values(
    sources: dict[str, tuple[str, Draw]],
    first: dict[str, int],
    seed: int,
    alpha: float,
    *,
    level: float = LEVEL,
    max_draws: int,
    progress: Callable[[str], None] = lambda _: None,
) -> tuple[dict[str, MonteCarloP], list[str]]:
    """Each test's p from ``first[test]`` draws with the plan's ``seed``, then doubled (batches
    seeded (seed, 1), (seed, 2), ...) while :func:`unsettled`; returns the p-values and the tests
    still unsettled at ``max_draws``."""
    mc = {}
    for test, (kind, draw) in sources.items():
        hits, valid = draw(first[test], seed)
        mc[test] = MonteCarloP(kind, hits, valid)
    batch = 1
    while True:
        todo = unsettled(mc, alpha, level)
        growing = [t for t in todo if mc[t].draws < max_draws]
        if not growing:
            return mc, todo
        for test in growing:
            kind, draw = sources[test]
            target = min(2 * mc[test].draws, max_draws) - mc[test].draws
            while target > 0:
                n = min(target, BATCH[kind])
                hits, valid = draw(n, [seed, batch])
                batch += 1
                mc[test] = replace(mc[test], hits=mc[test].hits + hits, draws=mc[test].draws + valid)
                target -= n
            progress(f"{test}: p {mc[test].p:.5f} ± {mc[test].se:.5f} after {mc[test].draws:,} draws")


def v2_parts(v1v2: V1V2Config) -> dict[str, int]:
    """How many of the v2 recipe's ingredients each arm's recipe has: a longer schedule, warm-up,
    label smoothing, augmentation (crop or rotation) and an EMA of the weights; v1 has none."""
    v2 = v1v2.v2
    parts = [
        v2.epochs > v1v2.v1.epochs,
        v2.warmup_epochs > 0,
        v2.label_smoothing > 0,
        v2.crop_padding > 0 or v2.rotation_degrees > 0,
        v2.ema_decay > 0,
    ]
    return {"v1": 0, "v2": int(sum(parts))}


def _with_baselines(records: Sequence[dict[str, Any]], parts: dict[str, int]) -> list[dict[str, Any]]:
    """Each case with every H4 rule's pick and correctness (``<rule>_pick``, ``<rule>_ok``)."""
    more = "v2" if parts["v2"] > parts["v1"] else "v1" if parts["v1"] > parts["v2"] else "undecided"
    out = []
    for r in records:
        picks = {
            "geometry": r["geometry_pick"],
            "id_accuracy": r["id_pick"],
            "always_v2": "v2",
            "more_v2_parts": more,
        }
        case = {
            "arch": r["arch"],
            "seed": r["seed"],
            "better": r["better"],
            "within_noise": r["within_noise"],
        }
        for rule, pick in picks.items():
            case[f"{rule}_pick"] = pick
            case[f"{rule}_ok"] = pick != "undecided" and pick == r["better"]
        out.append(case)
    return out


def _tally(cases: Sequence[dict[str, Any]], rule: str) -> dict[str, Any]:
    n = len(cases)
    correct = sum(c[f"{rule}_ok"] for c in cases)
    decided = sum(c[f"{rule}_pick"] != "undecided" for c in cases)
    return {
        "cases": n,
        "correct": correct,
        "wrong": decided - correct,
        "undecided": n - decided,
        "accuracy": correct / n if n else None,
        "decided_rate": decided / n if n else None,
        "win_rate_decided": correct / decided if decided else None,
    }


def h4_recheck(arm: Sequence[Model], config: StudyConfig, n_scored: int, centering: str) -> dict[str, Any]:
    """H4 under one centring with the trivial baselines, undecided picks apart, case-bootstrap
    intervals of each rule's accuracy and the architecture-level exact tests."""
    assert config.v1v2 is not None
    st = config.stats
    plan = v1_v2(
        v1_v2_cases(kept(arm, centering)), centering, PRIMARY, n_scored, n_boot=st.n_boot, seed=config.seed
    )
    cases = _with_baselines(plan["records"], v2_parts(config.v1v2))
    rules: dict[str, Any] = {}
    for rule in H4_RULES:
        entry = _tally(cases, rule)
        flags = [np.asarray([float(c[f"{rule}_ok"]) for c in cases if c["arch"] == a]) for a in _archs(cases)]
        entry["ci"] = (
            stats.percentile_ci(stats.case_bootstrap(flags, st.n_boot, config.seed)) if cases else None
        )
        entry["within_noise"] = _tally([c for c in cases if c["within_noise"]], rule)
        entry["beyond_noise"] = _tally([c for c in cases if not c["within_noise"]], rule)
        entry["by_arch"] = {a: float(np.mean(f)) for a, f in zip(_archs(cases), flags, strict=True)}
        rules[rule] = entry
    exact = {}
    for rule, baseline in EXACT_PAIRS:
        diffs = [float(d.mean()) for d in case_differences(cases, f"{rule}_ok", f"{baseline}_ok")]
        test = stats.sign_flip(diffs)
        exact[f"{rule} − {baseline}"] = {
            "by_arch": diffs,
            "mean": test.mean,
            "p_greater": test.p_greater,
            "p_two_sided": test.p_two_sided,
            "patterns": test.patterns,
            "smallest_p_greater": 1 / test.patterns,
            "smallest_p_two_sided": 2 / test.patterns,
        }
    return {
        "cases": len(cases),
        "architectures": len(_archs(cases)),
        "v2_better": sum(c["better"] == "v2" for c in cases),
        "plan": {k: plan[k] for k in ("all", "within_noise", "beyond_noise", "delta", "ci", "p")},
        "rules": rules,
        "exact": exact,
        "records": cases,
    }


def _archs(cases: Sequence[dict[str, Any]]) -> list[str]:
    return sorted({c["arch"] for c in cases})


def _decided_statistic(
    cols: stats.PairColumns, rule: Sequence[int], what: str
) -> Callable[[list[np.ndarray]], np.ndarray]:
    """Per resample: the win rate among decided pairs (``what="win"``) or the rate of deciding."""

    def statistic(resampled: list[np.ndarray]) -> np.ndarray:
        size = resampled[0].shape[0] if resampled else 0
        correct, decided, eligible = np.zeros(size), np.zeros(size), np.zeros(size)
        for g in resampled:
            c, d, e = stats.pair_tally(g, cols, rule)
            correct, decided, eligible = correct + c, decided + d, eligible + e
        num, den = (correct, decided) if what == "win" else (decided, eligible)
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(den > 0, num / np.maximum(den, 1), np.nan)

    return statistic


def decided_pairs(zoo: Sequence[Model], config: StudyConfig) -> dict[str, Any]:
    """Per task × centring × rule (the evidence's rules) on the primary outcome: eligible pairs,
    correct, wrong and undecided picks, the plan's accuracy (undecided counted wrong), the rate of
    deciding and the win rate among decided pairs, both with recipe-bootstrap 95 % intervals. The
    pairs are the evidence's (recipes with the rule's markers and ID accuracy)."""
    st = config.stats
    names = sorted({n for rule in RULES.values() for n in rule})
    out: dict[str, Any] = {}
    for task in TASKS:
        for centering in config.markers.centerings:
            models = kept([m for m in zoo if m["task"] == task], centering)
            rows = recipe_rows(models, centering, names, [PRIMARY])
            per_rule = {}
            for rule, markers in RULES.items():
                cols_names = list(dict.fromkeys([PRIMARY, *markers, ID_ACCURACY]))
                gs = groups(rows, cols_names, sd_of=PRIMARY)
                cols = stats.PairColumns(outcome=0, sd=len(cols_names), k=len(cols_names) + 1)
                idx = [cols_names.index(m) for m in markers]
                correct = decided = eligible = 0
                for g in gs:
                    c, d, e = stats.pair_tally(g, cols, idx)
                    correct, decided, eligible = correct + int(c), decided + int(d), eligible + int(e)
                per_rule[rule] = {
                    "eligible": eligible,
                    "correct": correct,
                    "wrong": decided - correct,
                    "undecided": eligible - decided,
                    "accuracy": correct / eligible if eligible else None,
                    "decided_rate": decided / eligible if eligible else None,
                    "decided_rate_ci": stats.percentile_ci(
                        stats.stratified_bootstrap(
                            gs, _decided_statistic(cols, idx, "rate"), st.n_boot, config.seed
                        )
                    ),
                    "win_rate_decided": correct / decided if decided else None,
                    "win_rate_decided_ci": stats.percentile_ci(
                        stats.stratified_bootstrap(
                            gs, _decided_statistic(cols, idx, "win"), st.n_boot, config.seed
                        )
                    ),
                }
            out[f"{task}/{centering}"] = per_rule
    return out


def sensitivity_counts(zoo: Sequence[Model], arm: Sequence[Model], config: StudyConfig) -> dict[str, int]:
    """Models the plan's accuracy filters keep, per task and for the v1/v2 arm (rule 4)."""
    st = config.stats
    out = {}
    for task in TASKS:
        kept_task = [
            m
            for arch in config.task(task).archs
            for m in accuracy_filter(
                kept([z for z in zoo if z["task"] == task and z["arch"] == arch], None),
                st.filter_train_acc_min,
                st.filter_central_fraction,
            )
        ]
        out[f"task {task} zoo"] = len(kept_task)
        out[f"task {task} zoo, non-diverged"] = len(kept([z for z in zoo if z["task"] == task], None))
    filtered_arm = accuracy_filter(kept(arm, None), st.filter_train_acc_min, st.filter_central_fraction)
    out["v1/v2 arm"] = len(filtered_arm)
    out["v1/v2 arm, non-diverged"] = len(kept(arm, None))
    out["v1/v2 cases"] = len(v1_v2_cases(filtered_arm))
    return out


def recheck(
    models: Sequence[Model],
    before_fix: Sequence[Model],
    config: StudyConfig,
    n_scored: int,
    registered_decision: dict[str, Any],
    *,
    max_draws: int,
    progress: Callable[[str], None] = lambda _: None,
) -> dict[str, Any]:
    """Everything the corrected report shows; ``before_fix`` are the records the BatchNorm fix
    replaced (matched by name), ``n_scored`` the task-A probe's scored images."""
    zoo = [m for m in models if m["arm"] == "zoo"]
    arm = [m for m in models if m["arm"] in ("v1", "v2")]
    old = {m["name"]: m for m in before_fix}
    unknown = sorted(set(old) - {m["name"] for m in arm})
    if unknown:
        raise ValueError(f"records before the fix that the run does not hold: {unknown}")
    arm_before = [old.get(m["name"], m) for m in arm]
    excl = exclusions(zoo, config)
    st = config.stats
    primary = with_holm(
        hypothesis_tests(kept(zoo, None), kept(arm, None), config, n_scored, with_p=True), excl, st.alpha
    )
    sources = draw_sources(kept(zoo, None), kept(arm, None), config, n_scored)
    first = {t: st.n_perm if kind == "permutation" else st.n_boot for t, (kind, _) in sources.items()}
    mc, still = decisive_p_values(
        sources, first, config.seed, st.alpha, max_draws=max_draws, progress=progress
    )
    registered = {t: dict(r) for t, r in primary.items()}
    for t, r in primary.items():
        if r["assessable"]:
            r["p"] = mc[t].p
    corrected = with_holm(primary, excl, st.alpha)
    thresholds = stats.holm_thresholds(
        {t: r["p"] if r["assessable"] else 1.0 for t, r in corrected.items()}, st.alpha
    )
    p_values = {
        t: {
            "kind": mc[t].kind,
            "p_registered": registered[t]["p"],
            "p_holm_registered": registered[t]["p_holm"],
            "significant_registered": registered[t]["significant"],
            "draws": mc[t].draws,
            "hits": mc[t].hits,
            "p": mc[t].p,
            "se": mc[t].se,
            "interval": mc[t].interval(LEVEL),
            "threshold": thresholds[t],
            "p_holm": corrected[t]["p_holm"],
            "significant": corrected[t]["significant"],
            "settled": t not in still,
        }
        for t in corrected
    }
    decision = decide(corrected, config.markers.centerings)
    same = all(decision[k] == registered_decision[k] for k in ("rule", "centering", "v1_v2_rule"))
    return {
        "level": LEVEL,
        "max_draws": max_draws,
        "p_values": p_values,
        "unsettled": still,
        "primary": {t: {k: v for k, v in r.items() if k != "records"} for t, r in corrected.items()},
        "h4": {
            "after_fix": {c: h4_recheck(arm, config, n_scored, c) for c in config.markers.centerings},
            "before_fix": {c: h4_recheck(arm_before, config, n_scored, c) for c in config.markers.centerings},
        },
        "pairs": decided_pairs(kept(zoo, None), config),
        "sensitivity_counts": sensitivity_counts(zoo, arm, config),
        "live_models": {t: len(kept([m for m in models if m["task"] == t], None)) for t in TASKS},
        "decision": {"registered": registered_decision, "recomputed": decision, "changed": not same},
    }
