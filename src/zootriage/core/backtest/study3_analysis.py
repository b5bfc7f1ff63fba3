"""Study 3's analysis (docs/study/PLAN-3.md), run once on the complete zoo.

1. Exclusions: diverged models nowhere; models whose GLUE (centring ``none``) is degenerate nowhere in
   the primary analysis, and a task with more than ``degenerate_max_fraction`` of them contributes no
   pairs; recipes with fewer than 2 kept seeds dropped (:func:`core.backtest.tables.kept`,
   :func:`core.backtest.tables.recipe_rows`).
2. Admission of each recipe against its architecture × task floor (:func:`core.backtest.stats.admitted`); an
   architecture × task with fewer than 3 admitted recipes contributes no pairs.
3. Eligible pairs: |Δy| > 1.96 · sqrt(s_a²/k_a + s_b²/k_b) on ``probe20``. Every rule is scored on
   each pair (correct / wrong / undecided), on the pair sets where it applies: all, decoupled (v2-part
   counts differ), the v1 vs ``g-a1-l1-e1`` pairs, and the pairs where "longer schedule" decides.
4. T1 (Ψ_eff vs ID accuracy, all pairs), T2 (numerical rank vs ID accuracy, all pairs), T3 (Ψ_eff vs
   more v2 parts, decoupled pairs): d_a pooled over tasks, the exact sign flip, Holm over the three.
5. Each rule's accuracy per task and pooled with its architecture-cluster bootstrap interval.
6. The frozen rule's out-of-sample Brier, ECE and reliability bins with cluster-bootstrap bounds.
7. The plan's decision rule (:func:`decide`).
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from zootriage.core.backtest.freeze_rule import FEATURES, group_probabilities
from zootriage.core.backtest.measure import PRIMARY3 as PRIMARY
from zootriage.core.backtest.stats import (
    NOISE_Z,
    Pick,
    Tally,
    admitted,
    calibration,
    cluster_bootstrap,
    differences,
    holm_decisions,
    main_effects,
    mean_rho,
    pick,
    primary_test,
    rho_by_group,
    tally_summary,
)
from zootriage.core.backtest.study3_recipes import V1, V2, factors
from zootriage.core.backtest.tables import ID_ACCURACY, Model, is_degenerate, kept, recipe_rows

CENTERING = "none"
MIN_ADMITTED = 3
# rule name → (record name, sign): a rule picks the recipe with the higher sign × value. Directions are
# the registry's ``higher_is_better`` where it has one; R_eff is "lower" as the plan says; NC1 "higher"
# as the registered study scored it; α-ReQ has no direction in the registry, so its rule (exploratory)
# picks the α closer to 1 (the decay its authors associate with good features), see ``ALPHA_REQ``.
MARKER_RULES: dict[str, tuple[str, float]] = {
    "psi_eff": ("utilization", 1.0),
    "d_eff": ("dimension", 1.0),
    "numerical_rank": ("numerical_rank", 1.0),
    "participation_ratio": ("participation_ratio", 1.0),
    "nc1": ("nc1", 1.0),
    "r_eff": ("radius", -1.0),
    "logme": ("logme", 1.0),
    "h_score": ("h_score", 1.0),
    "rankme": ("rankme", 1.0),
    "ncti": ("ncti", 1.0),
    "atc": ("atc", 1.0),
    "alpha_req": ("alpha_req", 1.0),
    "id_accuracy": (ID_ACCURACY, 1.0),
}
ALPHA_REQ = "alpha_req"
PRIMARY_TESTS = {
    "T1": ("psi_eff", "id_accuracy", "all"),
    "T2": ("numerical_rank", "id_accuracy", "all"),
    "T3": ("psi_eff", "more_v2_parts", "decoupled"),
}


def _rows(
    models: Sequence[Model], names: Sequence[str], centering: str, outcome: str
) -> dict[tuple[str, str], dict[str, Any]]:
    """(task, arch) → {recipe: {"means", "y", "sd", "k", "parts", "seeds"}} over kept models."""
    out: dict[tuple[str, str], dict[str, Any]] = {}
    by_task: dict[str, list[Model]] = defaultdict(list)
    for m in kept(models, centering):
        by_task[m["task"]].append(m)
    parts = {(m["task"], m["arch"], m["recipe"]): m["v2_parts"] for m in models}
    for task, members in by_task.items():
        seeds: dict[tuple[str, str], list[float]] = defaultdict(list)
        for m in members:
            seeds[(m["arch"], m["recipe"])].append(float(m["outcomes"][outcome]))
        for row in recipe_rows(members, centering, names, [outcome]):
            out.setdefault((task, row.arch), {})[row.recipe] = {
                "means": row.means,
                "y": row.means[outcome],
                "sd": row.sds[outcome],
                "k": row.k,
                "parts": parts[(task, row.arch, row.recipe)],
                "seeds": seeds[(row.arch, row.recipe)],
            }
    return out


def _rule_values(recipe: str, row: Mapping[str, Any]) -> dict[str, float | None]:
    values: dict[str, float | None] = {}
    for rule, (name, sign) in MARKER_RULES.items():
        v = row["means"].get(name)
        if v is not None and rule == ALPHA_REQ:
            v = -abs(float(v) - 1.0)
        values[rule] = None if v is None else sign * float(v)
    values["more_v2_parts"] = float(row["parts"])
    f = factors(recipe)
    values["longer_schedule"] = float(f["ema_long"]) if f is not None else 0.0
    values["always_v2"] = 1.0 if recipe == V2 else 0.0
    return values


def _two_marker(a: Mapping[str, float | None], b: Mapping[str, float | None]) -> float | None:
    """The D-AND-Ψ rule as a pair value: +1 picks a, −1 picks b, None undecided."""
    keys = ("d_eff", "psi_eff")
    if any(a[k] is None or b[k] is None for k in keys):
        return None
    if all(a[k] > b[k] for k in keys):  # type: ignore[operator]
        return 1.0
    if all(a[k] < b[k] for k in keys):  # type: ignore[operator]
        return -1.0
    return None


def _frozen_features(row: Mapping[str, Any]) -> list[float] | None:
    out = []
    for _, record, how in FEATURES:
        v = row["means"].get(record)
        if v is None or (how == "log" and v <= 0):
            return None
        out.append(math.log(v) if how == "log" else float(v))
    return out


def eligible_pairs(
    rows: Mapping[tuple[str, str], dict[str, Any]],
    floors: Mapping[tuple[str, str], list[float]],
    config_stats: Any,
    frozen: Mapping[str, Any] | None,
    skip_tasks: set[str],
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(eligible pairs, admission table). Each pair has its task, arch, recipes, whether a won,
    its pair sets, and each rule's pick outcome; the frozen rule's P(a beats b) when given."""
    pairs, admission = [], []
    for (task, arch), recipes in sorted(rows.items()):
        floor = floors.get((task, arch), [])
        ok = {}
        for name, row in sorted(recipes.items()):
            verdict = (
                admitted(row["seeds"], floor, config_stats.admission_gain, config_stats.admission_p)
                if floor
                else None
            )
            admission.append({"task": task, "arch": arch, "recipe": name, **(verdict or {"admitted": False})})
            if verdict is not None and verdict["admitted"]:
                ok[name] = row
        if task in skip_tasks or len(ok) < MIN_ADMITTED:
            continue
        names = sorted(ok)
        probs = None
        feats = [_frozen_features(ok[n]) for n in names]
        if frozen is not None and all(f is not None for f in feats):
            probs = group_probabilities(frozen, np.array(feats))
        for i in range(len(names)):
            for j in range(i + 1, len(names)):
                a, b = ok[names[i]], ok[names[j]]
                gap = a["y"] - b["y"]
                noise = NOISE_Z * math.sqrt(a["sd"] ** 2 / a["k"] + b["sd"] ** 2 / b["k"])
                if not abs(gap) > noise:
                    continue
                va, vb = _rule_values(names[i], a), _rule_values(names[j], b)
                picks: dict[str, Pick] = {rule: pick(va[rule], vb[rule], a["y"], b["y"]) for rule in va}
                picks["d_and_psi"] = pick(_two_marker(va, vb), 0.0, gap, 0.0)
                pair: dict[str, Any] = {
                    "task": task,
                    "arch": arch,
                    "a": names[i],
                    "b": names[j],
                    "a_won": gap > 0,
                    "decoupled": a["parts"] != b["parts"],
                    "v1v2": {names[i], names[j]} == {V1, V2},
                    "longer_decides": va["longer_schedule"] != vb["longer_schedule"],
                    "picks": picks,
                }
                if probs is not None:
                    pair["p_frozen"] = float(probs[i, j])
                    picks["frozen_rule"] = pick(float(probs[i, j]), 0.5, gap, 0.0)
                pairs.append(pair)
    return pairs, admission


PAIR_SETS: dict[str, Callable[[Mapping[str, Any]], bool]] = {
    "all": lambda p: True,
    "decoupled": lambda p: bool(p["decoupled"]),
    "v1v2": lambda p: bool(p["v1v2"]),
    "longer_decides": lambda p: bool(p["longer_decides"]),
    "tied_parts": lambda p: not p["decoupled"],
}
APPLIES = {"always_v2": "v1v2", "longer_schedule": "longer_decides"}


def tallies(
    pairs: Sequence[Mapping[str, Any]], rule: str, pair_set: str, task: str | None
) -> dict[str, Tally]:
    """Per architecture, ``rule``'s correct / wrong / undecided picks on a pair set (one task or all)."""
    out: dict[str, Tally] = defaultdict(Tally)
    for p in pairs:
        if (task is None or p["task"] == task) and PAIR_SETS[pair_set](p) and rule in p["picks"]:
            out[p["arch"]] = out[p["arch"]].add(p["picks"][rule])
    return dict(out)


def _delta(rule: Mapping[str, Tally], base: Mapping[str, Tally], n_boot: int) -> dict[str, Any]:
    counts = {a: (rule[a].correct - base[a].correct, rule[a].pairs) for a in rule}
    n = sum(c[1] for c in counts.values())
    return {
        "delta": sum(c[0] for c in counts.values()) / n if n else None,
        "ci95": cluster_bootstrap(counts, n_boot),
    }


# The frozen rule is calibrated out of sample when the upper 95 % bounds are under these (PLAN-3.md).
BRIER_MAX = 0.25  # strictly below
ECE_MAX = 0.10  # at most


def frozen_calibration(
    pairs: Sequence[Mapping[str, Any]], n_boot: int, seed: int = 0
) -> dict[str, Any] | None:
    """Brier, ECE and bins of the frozen rule oriented to its predicted winner, with the
    architecture-cluster bootstrap's 95 % bounds (``seed``: the plan's is 0); ``calibrated`` per the
    plan's thresholds (:data:`BRIER_MAX`, :data:`ECE_MAX`)."""
    scored = [p for p in pairs if "p_frozen" in p]
    if not scored:
        return None
    p_hat = np.array([max(p["p_frozen"], 1 - p["p_frozen"]) for p in scored])
    won = np.array([(p["p_frozen"] >= 0.5) == p["a_won"] for p in scored], dtype=np.float64)
    archs = sorted({p["arch"] for p in scored})
    members = [np.array([i for i, p in enumerate(scored) if p["arch"] == a]) for a in archs]
    rng = np.random.default_rng(seed)
    brier, ece = [], []
    for _ in range(n_boot):
        idx = np.concatenate([members[k] for k in rng.integers(len(archs), size=len(archs))])
        cal = calibration(p_hat[idx], won[idx])
        brier.append(cal["brier"])
        ece.append(cal["ece"])
    out = calibration(p_hat, won)
    out["brier_ci95"] = (float(np.percentile(brier, 2.5)), float(np.percentile(brier, 97.5)))
    out["ece_ci95"] = (float(np.percentile(ece, 2.5)), float(np.percentile(ece, 97.5)))
    out["calibrated"] = out["brier_ci95"][1] < BRIER_MAX and out["ece_ci95"][1] <= ECE_MAX
    return out


def exclusions(models: Sequence[Model]) -> dict[str, dict[str, int]]:
    """Per task × architecture × recipe, the diverged models and those degenerate under ``none``."""
    out: dict[str, dict[str, int]] = defaultdict(lambda: {"diverged": 0, "degenerate": 0})
    for m in models:
        key = f"{m['task']}/{m['arch']}/{m['recipe']}"
        if m["diverged"]:
            out[key]["diverged"] += 1
        elif is_degenerate(m, CENTERING):
            out[key]["degenerate"] += 1
    return {k: v for k, v in sorted(out.items()) if v["diverged"] or v["degenerate"]}


def v1v2_replication(models: Sequence[Model], min_archs: int) -> dict[str, Any]:
    """Secondary: v1 vs ``g-a1-l1-e1`` per architecture × task × seed (kept models only). Each case
    records whether v2's outcome is higher and whether Ψ_eff and ID accuracy picked the winner
    ("always v2" is right exactly when v2 won). The exact sign flip is over the architectures'
    (v2 win rate − 0.5)."""
    by_key = {(m["task"], m["arch"], m["recipe"], m["seed"]): m for m in kept(models, CENTERING)}
    cases = []
    for (task, arch, recipe, seed), v1 in sorted(by_key.items()):
        v2 = by_key.get((task, arch, V2, seed))
        if recipe != V1 or v2 is None:
            continue
        won = v2["outcomes"][PRIMARY] > v1["outcomes"][PRIMARY]
        psi = [m["geometry"][CENTERING]["markers"].get("utilization") for m in (v1, v2)]
        case = {"task": task, "arch": arch, "seed": seed, "v2_won": bool(won)}
        case["psi_eff"] = pick(psi[1], psi[0], 1.0 if won else 0.0, 0.0 if won else 1.0)
        case["id_accuracy"] = pick(v2["id_acc"], v1["id_acc"], 1.0 if won else 0.0, 0.0 if won else 1.0)
        cases.append(case)
    rates: dict[str, list[bool]] = defaultdict(list)
    for c in cases:
        rates[c["arch"]].append(c["v2_won"])
    d = {a: float(np.mean(v)) - 0.5 for a, v in sorted(rates.items())}
    return {"cases": cases, "always_v2_rate": float(np.mean([c["v2_won"] for c in cases])) if cases else None,
            "test": primary_test(d, min_archs)}  # fmt: skip


FAMILIES = {
    "resnet_cnn": ("bnres8-w8", "bnres14-w8", "bnres8-w12", "vgg-bn", "dwsep-bn", "convmixer-d64-p4"),
    "vit": ("vit-p7-d64-l4", "vit-p7-d64-l2", "vit-p4-d48-l2"),
    "mixer": ("mixer-p7-d128-l2", "mixer-p4-d64-l2"),
    "mlp": ("mlp-bn",),
}


def by_family(pairs: Sequence[Mapping[str, Any]], rules: Sequence[str], n_boot: int) -> dict[str, Any]:
    """Secondary: each rule's pooled accuracy within each architecture family."""
    out: dict[str, Any] = {}
    for rule in rules:
        t = tallies(pairs, rule, APPLIES.get(rule, "all"), None)
        out[rule] = {
            family: tally_summary({a: x for a, x in t.items() if a in members}, n_boot)
            for family, members in FAMILIES.items()
        }
    return out


def _admitted_only(
    rows: Mapping[tuple[str, str], dict[str, Any]], admission: Sequence[Mapping[str, Any]]
) -> dict[tuple[str, str], dict[str, Any]]:
    ok = {(x["task"], x["arch"], x["recipe"]) for x in admission if x["admitted"]}
    return {
        key: {name: r for name, r in recipes.items() if (*key, name) in ok} for key, recipes in rows.items()
    }


def spearman_by_task(rows: Mapping[tuple[str, str], dict[str, Any]], tasks: Sequence[str]) -> dict[str, Any]:
    """Secondary: within-architecture Spearman ρ of each rule's value with the outcome over the
    admitted recipes, averaged over architectures (ρ̄, as H1/H2 of the registered study)."""
    out: dict[str, Any] = {}
    for task in tasks:
        per_rule: dict[str, Any] = {}
        for rule in [*MARKER_RULES, "more_v2_parts"]:
            groups = []
            for (t, _), recipes in sorted(rows.items()):
                if t != task:
                    continue
                points = [(_rule_values(name, r)[rule], r["y"]) for name, r in sorted(recipes.items())]
                if len(points) >= 2 and all(v is not None for v, _ in points):
                    groups.append(np.array(points, dtype=np.float64))
            per_rule[rule] = {"rho_bar": mean_rho(groups, 0, 1), "by_arch": rho_by_group(groups, 0, 1)}
        out[task] = per_rule
    return out


def factor_effects(rows: Mapping[tuple[str, str], dict[str, Any]], tasks: Sequence[str]) -> dict[str, Any]:
    """Secondary: per task, the 2×2×2 grid factors' main effects on the kept recipes' mean outcome,
    blocked by architecture (:func:`core.backtest.stats.main_effects`); None when too few recipes."""
    out: dict[str, Any] = {}
    for task in tasks:
        y, blocks, design = [], [], []
        for (t, arch), recipes in sorted(rows.items()):
            for name, r in sorted(recipes.items()):
                f = factors(name)
                if t == task and f is not None:
                    y.append(r["y"])
                    blocks.append(arch)
                    design.append([f["aug"], f["ls"], f["ema_long"]])
        try:
            out[task] = main_effects(np.array(y), blocks, np.array(design), ["aug", "ls", "ema_long"])
        except ValueError:
            out[task] = None
    return out


def analyze3(
    models: Sequence[Model],
    floors: Sequence[Model],
    config: Any,
    frozen: Mapping[str, Any] | None,
    *,
    centering: str = CENTERING,
    outcome: str = PRIMARY,
) -> dict[str, Any]:
    """The analysis of a finished run (``config`` is a ``Study3Config``): the primary one with the
    defaults; a secondary one (centring ``global``, another outcome) with the same statistics, which
    the report shows without significance claims."""
    stats = config.stats
    names = sorted({n for n, _ in MARKER_RULES.values()} | {r for _, r, _ in FEATURES})
    tasks = [t.name for t in config.tasks]
    skip = set()
    degenerate = {}
    for task in tasks:
        live = [m for m in models if m["task"] == task and not m["diverged"]]
        share = float(np.mean([is_degenerate(m, centering) for m in live])) if live else 0.0
        degenerate[task] = share
        if share > stats.degenerate_max_fraction:
            skip.add(task)
    floor_values: dict[tuple[str, str], list[float]] = defaultdict(list)
    for f in floors:
        floor_values[(f["task"], f["arch"])].append(float(f["outcomes"][outcome]))
    rows = _rows(models, names, centering, outcome)
    pairs, admission = eligible_pairs(rows, floor_values, stats, frozen, skip)
    rules = sorted({r for p in pairs for r in p["picks"]})
    accuracy = {
        rule: {
            scope: tally_summary(
                tallies(pairs, rule, APPLIES.get(rule, "all"), None if scope == "pooled" else scope),
                stats.n_boot,
            )
            for scope in [*tasks, "pooled"]
        }
        for rule in rules
    }
    tests = {}
    for name, (rule, base, pair_set) in PRIMARY_TESTS.items():
        t_rule, t_base = tallies(pairs, rule, pair_set, None), tallies(pairs, base, pair_set, None)
        tests[name] = {"rule": rule, "baseline": base, "pairs": pair_set,
                       **primary_test(differences(t_rule, t_base), stats.min_archs)}  # fmt: skip
        tests[name]["delta"] = {
            scope: _delta(tallies(pairs, rule, pair_set, s), tallies(pairs, base, pair_set, s), stats.n_boot)
            for scope, s in [*[(t, t) for t in tasks], ("pooled", None)]
        }
    for name, verdict in holm_decisions(tests, stats.alpha).items():
        tests[name].update(verdict)
    return {
        "centering": centering,
        "outcome": outcome,
        "degenerate_fraction": degenerate,
        "tasks_without_pairs": sorted(skip),
        "admission": admission,
        "pairs": pairs,
        "accuracy": accuracy,
        "tests": tests,
        "frozen_rule": frozen_calibration(pairs, stats.n_boot),
        "tied_pairs": {
            rule: tally_summary(tallies(pairs, rule, "tied_parts", None), stats.n_boot) for rule in rules
        },
        "families": by_family(pairs, rules, stats.n_boot),
        "spearman": spearman_by_task(_admitted_only(rows, admission), tasks),
        "factor_effects": factor_effects(rows, tasks),
        "exclusions": exclusions(models),
        "v1v2": v1v2_replication(models, stats.min_archs),
    }
