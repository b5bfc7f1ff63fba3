"""``core.backtest.on_runs3``: study 3's confirmatory method on a user's runs, checked against a
brute-force recount of a small synthetic zoo (recipe means, noise eligibility, every rule's picks,
d_a per architecture, and the exact sign-flip p by enumerating all 2^n sign patterns here)."""

from __future__ import annotations

import itertools
import math
import os
import statistics
import subprocess
import sys
import tomllib
from collections import defaultdict
from pathlib import Path

import pytest

from zootriage.core.backtest import on_runs, on_runs3, stats
from zootriage.core.backtest.on_runs import RunOutcome

ROOT = Path(__file__).resolve().parents[2]
ARCHS = ("a0", "a1", "a2", "a3", "a4")
# Per architecture, per recipe: (outcome mean, seed spread). r0 and r1 lie within their seed noise of
# each other (gap 0.02 < 1.96·√((0.005² + 0.02²)/3) ≈ 0.023), so only (r0, r2) and (r1, r2) are eligible
# where the order is kept; architecture a3 widens r0–r1 to make it eligible too.
OUTCOMES = {
    "a0": ((0.50, 0.005), (0.52, 0.02), (0.60, 0.005)),
    "a1": ((0.60, 0.005), (0.58, 0.02), (0.50, 0.005)),
    "a2": ((0.50, 0.005), (0.52, 0.02), (0.60, 0.005)),
    "a3": ((0.40, 0.005), (0.55, 0.005), (0.60, 0.005)),
    "a4": ((0.50, 0.005), (0.51, 0.005), (0.52, 0.005)),
}
# Recipe-level marker values: dimension mostly follows the outcome, utilization ties on a1 and a2
# (undecided picks), nc1 is treated as lower-is-better, ID accuracy runs against the outcome on a0.
MARKERS = {
    "a0": {
        "dimension": (1, 2, 3),
        "utilization": (0.1, 0.3, 0.2),
        "nc1": (3, 2, 1),
        "id_accuracy": (0.9, 0.8, 0.7),
    },
    "a1": {
        "dimension": (3, 2, 1),
        "utilization": (0.2, 0.2, 0.2),
        "nc1": (1, 2, 3),
        "id_accuracy": (0.9, 0.8, 0.7),
    },
    "a2": {
        "dimension": (3, 2, 1),
        "utilization": (0.1, 0.1, 0.1),
        "nc1": (2, 2, 2),
        "id_accuracy": (0.7, 0.8, 0.9),
    },
    "a3": {
        "dimension": (1, 2, 3),
        "utilization": (0.1, 0.2, 0.3),
        "nc1": (3, 1, 2),
        "id_accuracy": (0.7, 0.9, 0.8),
    },
    "a4": {
        "dimension": (1, 2, 3),
        "utilization": (0.3, 0.2, 0.1),
        "nc1": (1, 2, 3),
        "id_accuracy": (0.9, 0.8, 0.7),
    },
}
RULES = {
    "dimension": ("dimension",),
    "utilization": ("utilization",),
    "nc1": ("nc1",),
    "geometry": ("dimension", "utilization"),
    "id_accuracy": ("id_accuracy",),
}


@pytest.fixture(autouse=True)
def lower_is_better_nc1(monkeypatch: pytest.MonkeyPatch) -> None:
    """No registered marker prefers lower values today; pretend nc1 does."""
    real = on_runs._direction
    monkeypatch.setattr(on_runs, "_direction", lambda name: False if name == "nc1" else real(name))


def zoo(archs: tuple[str, ...] = ARCHS) -> list[RunOutcome]:
    """``archs`` × 3 recipes × 3 seeds: seed s adds (s − 1)·spread to the outcome and a tiny, recipe-
    independent jitter to every marker (so recipe-level ties stay ties)."""
    runs = []
    for arch in archs:
        for r in range(3):
            mean, spread = OUTCOMES[arch][r]
            for s in range(3):
                values = {name: float(v[r]) + 0.001 * s for name, v in MARKERS[arch].items()}
                runs.append(RunOutcome(f"{arch}-r{r}-s{s}", arch, f"r{r}", mean + (s - 1) * spread, values))
    return runs


def brute_force(runs: list[RunOutcome]) -> dict[str, dict[str, list[str]]]:
    """rule → arch → the pick on each eligible pair, recounted from the runs without the module."""
    seeds: dict[tuple[str, str], list[RunOutcome]] = defaultdict(list)
    for run in runs:
        seeds[(run.architecture, str(run.recipe))].append(run)
    out: dict[str, dict[str, list[str]]] = {rule: defaultdict(list) for rule in RULES}
    for arch in sorted({a for a, _ in seeds}):
        names = sorted(r for a, r in seeds if a == arch)
        for i, j in itertools.combinations(names, 2):
            a, b = seeds[(arch, i)], seeds[(arch, j)]
            y_a, y_b = (statistics.fmean(x.outcome for x in s) for s in (a, b))
            s_a, s_b = (statistics.stdev(x.outcome for x in s) for s in (a, b))
            if not abs(y_a - y_b) > 1.96 * math.sqrt(s_a**2 / len(a) + s_b**2 / len(b)):
                continue
            for rule, markers in RULES.items():
                votes = set()
                for m in markers:
                    sign = -1.0 if m == "nc1" else 1.0
                    v_a, v_b = (sign * statistics.fmean(x.values[m] for x in s) for s in (a, b))
                    votes.add(
                        "undecided" if v_a == v_b else "correct" if (v_a > v_b) == (y_a > y_b) else "wrong"
                    )
                out[rule][arch].append(votes.pop() if len(votes) == 1 else "undecided")
    return out


def exact_p(d: list[float]) -> float:
    """One-sided sign-flip p: the share of the 2^n sign patterns whose mean is at least the observed."""
    observed = sum(d) / len(d)
    hits = sum(
        sum(s * x for s, x in zip(signs, d, strict=True)) / len(d) >= observed - 1e-12
        for signs in itertools.product((1, -1), repeat=len(d))
    )
    return hits / 2 ** len(d)


def test_counts_accuracy_and_d_match_a_brute_force_recount() -> None:
    runs = zoo()
    result = on_runs3.analyse(runs, ["dimension", "utilization", "nc1"], n_boot=300)
    truth = brute_force(runs)
    assert result["method"] == "confirmatory" and result["recipes"] == 15
    assert set(result["confirmatory_rules"]) == set(RULES)
    total = sum(len(p) for p in truth["dimension"].values())
    assert result["eligible_pairs"] == total and 0 < total < 15  # some pairs fall within the seed noise
    for rule, by_arch in truth.items():
        got = result["confirmatory_rules"][rule]
        flat = [p for picks in by_arch.values() for p in picks]
        assert got["markers"] == list(RULES[rule])
        assert (got["correct"], got["wrong"], got["undecided"], got["pairs"]) == (
            flat.count("correct"),
            flat.count("wrong"),
            flat.count("undecided"),
            len(flat),
        ), rule
        assert got["accuracy"] == pytest.approx(flat.count("correct") / len(flat))
        counts = {a: (p.count("correct"), len(p)) for a, p in by_arch.items()}
        assert got["ci95"] == pytest.approx(list(stats.cluster_bootstrap(counts, 300, seed=0) or ()))
        assert got["ci95"][0] <= got["accuracy"] <= got["ci95"][1]
        if rule == "id_accuracy":
            assert got["vs_id_accuracy"] is None
            continue
        base = truth["id_accuracy"]
        d = {a: (p.count("correct") - base[a].count("correct")) / len(p) for a, p in by_arch.items()}
        vs = got["vs_id_accuracy"]
        assert vs["d_by_architecture"] == pytest.approx(d)
        assert vs["mean_d"] == pytest.approx(statistics.fmean(d.values()))
        assert vs["n_archs"] == len(d) == 5 and vs["min_p"] == 2**-5
        assert vs["assessable"] is False and vs["p"] is None  # 5 architectures < the plan's 6
    # The zoo exercises every kind of pick: undecided ties, wrong picks, and nc1's negation.
    rules = result["confirmatory_rules"]
    assert rules["utilization"]["undecided"] > 0 and rules["geometry"]["undecided"] > 0
    assert rules["dimension"]["wrong"] > 0 and rules["id_accuracy"]["wrong"] > 0
    assert rules["nc1"]["higher_is_better"] is False and rules["nc1"]["correct"] > 0
    assert any("not assessable" in n for n in result["notes"])


def test_the_exact_sign_flip_p_over_enough_architectures(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(on_runs3, "MIN_ARCHS", 4)
    runs = zoo()
    result = on_runs3.analyse(runs, ["dimension", "utilization", "nc1"], n_boot=200)
    truth = brute_force(runs)
    base = truth["id_accuracy"]
    for rule in ("dimension", "utilization", "nc1", "geometry"):
        by_arch = truth[rule]
        d = [
            (by_arch[a].count("correct") - base[a].count("correct")) / len(by_arch[a])
            for a in sorted(by_arch)
        ]
        vs = result["confirmatory_rules"][rule]["vs_id_accuracy"]
        assert vs["assessable"] is True
        assert vs["p"] == pytest.approx(exact_p(d)), rule
        assert vs["min_p"] <= vs["p"] <= 1.0


def test_the_plans_minimum_architectures_is_the_configs() -> None:
    config = tomllib.loads((ROOT / "studies" / "confirmatory.toml").read_text())
    assert config["stats"]["min_archs"] == on_runs3.MIN_ARCHS


def test_undecided_is_never_correct_and_without_id_accuracy_there_is_no_comparison() -> None:
    runs = [
        RunOutcome(r.run, r.architecture, r.recipe, r.outcome, {"dimension": 1.0}) for r in zoo(("a0", "a3"))
    ]
    result = on_runs3.analyse(runs, ["dimension"], n_boot=100)
    rule = result["confirmatory_rules"]["dimension"]
    assert rule["undecided"] == rule["pairs"] > 0 and rule["correct"] == 0 and rule["accuracy"] == 0.0
    assert rule["vs_id_accuracy"] is None and "id_accuracy" not in result["confirmatory_rules"]
    assert any("no run carries id_accuracy" in n for n in result["notes"])


def test_unlabelled_single_seed_and_directionless_are_named() -> None:
    runs = [
        *zoo(("a0",)),
        RunOutcome("x", "a0", None, 0.1, {"dimension": 9.0}),
        RunOutcome("y", "a0", "lone", 0.1, {"dimension": 9.0}),
    ]
    result = on_runs3.analyse(runs, ["dimension", "radius"], n_boot=100)
    assert result["recipes"] == 3 and "radius" not in result["confirmatory_rules"]
    notes = " | ".join(result["notes"])
    assert "1 run(s) have no recipe label" in notes and "1 recipe(s) have fewer than 2 runs" in notes
    assert "no pick rule: ['radius']" in notes and "no random-init floor" in notes


def test_requests_beyond_the_bounds_are_refused_before_computing(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(ValueError, match="n_boot"):
        on_runs3.analyse(zoo(), ["dimension"], n_boot=on_runs3.MAX_BOOT + 1)
    monkeypatch.setattr(on_runs3, "MAX_PICKS", 10)
    with pytest.raises(ValueError, match="exceeds 10 picks"):
        on_runs3.analyse(zoo(), ["dimension"], n_boot=100)
    monkeypatch.setattr(on_runs3, "MAX_PICKS", 1_000_000)
    monkeypatch.setattr(on_runs3, "MAX_ARCHS", 3)
    with pytest.raises(ValueError, match="at most 3 architectures"):
        on_runs3.analyse(zoo(), ["dimension"], n_boot=100)


def test_the_module_does_not_load_the_studys_measuring_code() -> None:
    """A back-test request needs statistics, not the study's models and probes (study3_analysis)."""
    probe = (
        "import sys, zootriage.core.backtest.on_runs3; "
        "print(any(m in sys.modules for m in ('torchvision', 'zootriage.core.backtest.measure')))"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    out = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == "False"
