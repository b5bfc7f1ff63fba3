"""Study 3's confirmatory method (docs/study/PLAN-3.md) on a user's stored runs: the default answer of
``POST /v1/backtests`` and its page.

The runs are grouped into recipes exactly as for study 2's method (``on_runs.recipe_table``: runs of
one architecture with the same recipe label are the seeds of one recipe, recipes with fewer than
``tables.MIN_SEEDS`` runs left out, each recipe the mean of its seeds, a lower-is-better marker
negated). Then, as in study 3's analysis:

- a pair of recipes of one architecture is *eligible* when |Δy| > 1.96 · sqrt(s_a²/k_a + s_b²/k_b)
  on the outcome. Study 3 also admits each recipe against its architecture's random-init floor; a
  user's runs have no such floor, so there is no admission test here (``METHOD_TEXT`` says so);
- every rule is scored on every eligible pair as a correct, wrong or undecided pick
  (``stats.pick``): one marker picks its preferred (higher after orientation) value; the geometry
  rule picks the recipe whose D_eff and Ψ_eff are both higher, and is undecided when they disagree;
  an undecided pick is reported apart and never counted correct;
- accuracy = correct / eligible pairs with the architecture-cluster bootstrap 95 % interval
  (``stats.cluster_bootstrap``, seed 0 as the plan fixes it);
- against the ID-accuracy rule (when the runs carry ``id_accuracy``): d_a = (correct_rule −
  correct_ID) / eligible pairs per architecture and the exact one-sided sign flip of mean_a d_a over
  the architectures with an eligible pair (``stats.primary_test``, as study 3's T1/T2), with the
  minimum attainable p 2^−n; *not assessable* with fewer than :data:`MIN_ARCHS` architectures.

``study3_analysis`` itself is not imported: it imports the study's measuring code (``measure``: nets,
probes, torchvision), which a request of the API process has no use for; the statistics it uses live
in ``stats`` and are used from there.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from zootriage.core.backtest import on_runs, stats
from zootriage.core.backtest.hypotheses import GEOMETRY_RULE
from zootriage.core.backtest.on_runs import OUTCOME, RunOutcome, left_out_notes, recipe_table
from zootriage.core.backtest.tables import ID_ACCURACY, RecipeRow

METHOD = "confirmatory"
GEOMETRY = "geometry"
# The plan's minimum number of architectures for a sign-flip test (studies/confirmatory.toml,
# [stats] min_archs; a unit test keeps the two equal).
MIN_ARCHS = 6
# Bounds on what one request may allocate in the API's process: the cluster bootstrap holds
# n_boot × architectures cells per rule; the exact sign flip enumerates 2^n × n cells (2^16 · 16 ≈ 1 M);
# every rule's pick is computed on every candidate pair of same-architecture recipes in Python.
MAX_BOOT = 20_000
MAX_ARCHS = 16
MAX_PICKS = 1_000_000
METHOD_TEXT = (
    "study 3's confirmatory method (docs/study/PLAN-3.md): recipes are the means of their seeds; a pair "
    "of recipes of one architecture is eligible when its outcome gap exceeds the seed noise "
    "(1.96·√(s_a²/k_a + s_b²/k_b)); there is no random-init floor for stored runs, so no recipe is "
    "tested for admission; each rule's picks are correct, wrong or undecided (undecided never counted "
    "correct); accuracy with an architecture-cluster bootstrap 95% interval (seed 0); against the "
    "ID-accuracy rule, d_a = (correct − ID accuracy's correct) / eligible pairs per architecture and the "
    f"exact one-sided sign-flip p over architectures, not assessable with fewer than {MIN_ARCHS}"
)


@dataclass(frozen=True)
class Rule:
    """A pick rule: the recipe whose ``markers`` are all higher (after orientation) is picked."""

    name: str
    markers: tuple[str, ...]
    higher_is_better: bool


@dataclass(frozen=True)
class Pair:
    """An eligible pair of recipes of one architecture and every rule's pick on it."""

    arch: str
    a: str
    b: str
    picks: Mapping[str, stats.Pick]


def rules_for(markers: Sequence[str], with_baseline: bool) -> tuple[list[Rule], list[str]]:
    """One rule per marker with a preferred direction, the geometry rule when both of its markers are
    asked for, and the ID-accuracy rule when the runs carry it; notes name the markers left out."""
    rules, directionless = [], []
    for name in markers:
        direction = on_runs._direction(name)
        if direction is None:
            directionless.append(name)
        else:
            rules.append(Rule(name, (name,), direction))
    if all(m in markers for m in GEOMETRY_RULE):
        rules.append(Rule(GEOMETRY, GEOMETRY_RULE, True))
    if with_baseline and ID_ACCURACY not in markers:
        rules.append(Rule(ID_ACCURACY, (ID_ACCURACY,), True))
    notes = []
    if directionless:
        notes.append(f"no preferred direction, so no pick rule: {directionless}")
    return rules, notes


def rule_pick(rule: Rule, a: RecipeRow, b: RecipeRow) -> stats.Pick:
    """``rule``'s pick on (a, b): every marker's ``stats.pick`` must agree, else undecided (the
    geometry rule decides only when D_eff and Ψ_eff are both higher on one side)."""
    y_a, y_b = a.means[OUTCOME], b.means[OUTCOME]
    assert y_a is not None and y_b is not None  # recipe_table always fills the outcome
    picks = {stats.pick(a.means.get(m), b.means.get(m), y_a, y_b) for m in rule.markers}
    return picks.pop() if len(picks) == 1 else "undecided"


def is_eligible(a: RecipeRow, b: RecipeRow) -> bool:
    """The outcome gap exceeds the seed noise: |Δy| > 1.96 · sqrt(s_a²/k_a + s_b²/k_b)."""
    y_a, y_b = a.means[OUTCOME], b.means[OUTCOME]
    assert y_a is not None and y_b is not None
    noise = stats.NOISE_Z * (a.sds[OUTCOME] ** 2 / a.k + b.sds[OUTCOME] ** 2 / b.k) ** 0.5
    return abs(y_a - y_b) > noise


def eligible_pairs(rows: Sequence[RecipeRow], rules: Sequence[Rule]) -> list[Pair]:
    """Every eligible same-architecture pair of recipes with each rule's pick."""
    by_arch: dict[str, list[RecipeRow]] = defaultdict(list)
    for row in rows:
        by_arch[row.arch].append(row)
    pairs = []
    for arch, recipes in sorted(by_arch.items()):
        for i, a in enumerate(recipes):
            for b in recipes[i + 1 :]:
                if is_eligible(a, b):
                    pairs.append(Pair(arch, a.recipe, b.recipe, {r.name: rule_pick(r, a, b) for r in rules}))
    return pairs


def tallies(pairs: Sequence[Pair], rule: str) -> dict[str, stats.Tally]:
    """Per architecture with an eligible pair, ``rule``'s correct / wrong / undecided picks."""
    out: dict[str, stats.Tally] = defaultdict(stats.Tally)
    for p in pairs:
        out[p.arch] = out[p.arch].add(p.picks[rule])
    return dict(out)


def versus_id_accuracy(
    rule: Mapping[str, stats.Tally], baseline: Mapping[str, stats.Tally]
) -> dict[str, Any]:
    """d_a per architecture and the exact one-sided sign flip over them (``stats.primary_test``)."""
    test = stats.primary_test(stats.differences(rule, baseline), MIN_ARCHS)
    return {
        "mean_d": test["mean"],
        "d_by_architecture": test["d"],
        "n_archs": test["n_archs"],
        "p": test["p"],
        "min_p": test["min_p"],
        "assessable": test["assessable"],
    }


def analyse(runs: Sequence[RunOutcome], markers: Sequence[str], *, n_boot: int) -> dict[str, Any]:
    """Every rule of ``markers`` by study 3's method; ``ValueError`` (before any large allocation) for
    a request beyond the bounds above. ``notes`` say what was left out and why."""
    if not 1 <= n_boot <= MAX_BOOT:
        raise ValueError(f"n_boot must be 1 to {MAX_BOOT}, got {n_boot}")
    carried = any(ID_ACCURACY in r.values for r in runs)
    names = sorted({*markers, ID_ACCURACY} if carried else set(markers))
    rows = recipe_table(runs, names, True)
    with_baseline = any(row.means.get(ID_ACCURACY) is not None for row in rows)
    rules, rule_notes = rules_for(markers, with_baseline)
    _check_size(rows, len(rules))
    pairs = eligible_pairs(rows, rules)
    archs = sorted({p.arch for p in pairs})
    if len(archs) > MAX_ARCHS:
        raise ValueError(
            f"{len(archs)} architectures have eligible pairs; the exact sign flip enumerates 2^n patterns, "
            f"so back-test at most {MAX_ARCHS} architectures at a time"
        )
    notes = [f"method: {METHOD_TEXT}", *left_out_notes(runs), *rule_notes]
    if not with_baseline:
        notes.append("no run carries id_accuracy: no comparison with the ID-accuracy rule")
    elif len(archs) < MIN_ARCHS:
        notes.append(
            f"{len(archs)} architecture(s) have eligible pairs, fewer than the plan's {MIN_ARCHS}: "
            "the sign-flip tests are not assessable"
        )
    by_rule = {r.name: tallies(pairs, r.name) for r in rules}
    out_rules: dict[str, Any] = {}
    for r in rules:
        compare = with_baseline and r.name != ID_ACCURACY
        out_rules[r.name] = {
            "markers": list(r.markers),
            "higher_is_better": r.higher_is_better,
            **stats.tally_summary(by_rule[r.name], n_boot),
            "vs_id_accuracy": versus_id_accuracy(by_rule[r.name], by_rule[ID_ACCURACY]) if compare else None,
        }
    return {
        "method": METHOD,
        "recipes": len(rows),
        "recipes_by_architecture": {
            a: sum(r.arch == a for r in rows) for a in sorted({r.arch for r in rows})
        },
        "eligible_pairs": len(pairs),
        "min_archs": MIN_ARCHS,
        "confirmatory_rules": out_rules,
        "notes": notes,
    }


def _check_size(rows: Sequence[RecipeRow], n_rules: int) -> None:
    """``ValueError`` when scoring every rule on every candidate pair would exceed :data:`MAX_PICKS`."""
    per_arch: dict[str, int] = defaultdict(int)
    for row in rows:
        per_arch[row.arch] += 1
    candidates = sum(n * (n - 1) // 2 for n in per_arch.values())
    if candidates * n_rules > MAX_PICKS:
        raise ValueError(
            f"{candidates} recipe pairs × {n_rules} rules exceeds {MAX_PICKS:,} picks: "
            "back-test fewer recipes or markers at a time"
        )
