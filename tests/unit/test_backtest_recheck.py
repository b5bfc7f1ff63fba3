"""The re-check's statistics against independent computations (brute-force enumeration, scipy's
exact binomial interval, the binomial formula and the spread of repeated runs), and the re-check
and its command on a synthetic study."""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from scipy.stats import binomtest, rankdata
from typer.testing import CliRunner

from zootriage.app.cli import app
from zootriage.core.backtest import stats
from zootriage.core.backtest.config import StudyConfig, load_config
from zootriage.core.backtest.recheck import MonteCarloP, decisive_p_values, h4_recheck, recheck, unsettled

STUDIES = Path(__file__).resolve().parents[2] / "studies"


@pytest.mark.parametrize("values", [[0.4, -0.2, 0.1, 0.0, 1.0], [0.3, 0.5, 0.2], [-0.1, -0.3, 0.2, 0.6]])
def test_sign_flip_matches_brute_force_enumeration(values: list[float]) -> None:
    x = np.asarray(values)
    observed = x.mean()
    means = [np.mean(np.asarray(signs) * x) for signs in itertools.product((1, -1), repeat=x.size)]
    test = stats.sign_flip(values)
    assert test.patterns == 2**x.size
    assert test.p_greater == pytest.approx(np.mean([m >= observed - 1e-12 for m in means]))
    assert test.p_two_sided == pytest.approx(np.mean([abs(m) >= abs(observed) - 1e-12 for m in means]))


def test_sign_flip_cannot_go_below_its_smallest_p() -> None:
    every_cluster_positive = stats.sign_flip([0.2, 1.0, 0.4, 0.4, 0.6])
    assert every_cluster_positive.p_greater == 1 / 32
    assert every_cluster_positive.p_two_sided == 2 / 32
    # a cluster with no difference doubles every count: the H4 figure, 2/32
    assert stats.sign_flip([0.0, 1.0, 0.2, 0.4, 0.4]).p_greater == 2 / 32
    with pytest.raises(ValueError, match="clusters"):
        stats.sign_flip([])


def test_binomial_interval_is_scipys_exact_interval() -> None:
    for hits, n in [(0, 50), (3, 1000), (41, 10_001), (50, 50), (7, 12)]:
        expected = binomtest(hits, n).proportion_ci(confidence_level=0.999, method="exact")
        assert stats.binomial_interval(hits, n, 0.999) == pytest.approx((expected.low, expected.high))
    with pytest.raises(ValueError):
        stats.binomial_interval(5, 4, 0.95)


def test_mc_standard_error_is_the_binomial_formula_and_the_spread_of_reruns() -> None:
    assert stats.mc_standard_error(0.004, 2_560_000) == pytest.approx(np.sqrt(0.004 * 0.996 / 2_560_000))
    # a permutation p whose exact value is known (4! · 4! orderings); 300 reruns of 1,000 permutations
    groups = [
        np.array([[0.1, 0.50], [0.4, 0.62], [0.3, 0.55], [0.9, 0.58]]),
        np.array([[1.0, 0.71], [2.0, 0.69], [3.0, 0.80], [4.0, 0.83]]),
    ]
    observed = stats.mean_rho(groups, 0, 1)
    assert observed is not None
    hits = 0
    for p0, p1 in itertools.product(itertools.permutations(range(4)), repeat=2):
        shuffled = [np.column_stack([g[:, 0], g[list(p), 1]]) for g, p in zip(groups, (p0, p1), strict=True)]
        hits += stats.mean_rho(shuffled, 0, 1) >= observed - 1e-12  # type: ignore[operator]
    exact = hits / 576
    n = 1000
    ps = np.array([stats.permutation_p(groups, 0, 1, n_perm=n, seed=s) for s in range(300)], dtype=np.float64)
    spread = float(np.std(ps, ddof=1))
    assert spread == pytest.approx(stats.mc_standard_error(exact, n), rel=0.2)


def test_permutation_exceedances_count_what_re_ranking_every_shuffle_counts() -> None:
    rng = np.random.default_rng(5)
    groups = [np.column_stack([rng.normal(size=7), np.round(rng.normal(size=7), 1)]) for _ in range(3)]
    groups[0][:2, 1] = 0.3  # a tie in the outcome: average ranks
    observed = stats.mean_rho(groups, 0, 1)
    assert observed is not None
    n = 3000
    fresh = np.random.default_rng(11)
    total = np.zeros(n)
    for g in groups:  # the original route: shuffle the values, rank each shuffle
        y = fresh.permuted(np.tile(g[:, 1], (n, 1)), axis=1)
        rx = np.tile(rankdata(g[:, 0]), (n, 1))
        ry = rankdata(y, axis=1)
        rx, ry = rx - rx.mean(axis=1, keepdims=True), ry - ry.mean(axis=1, keepdims=True)
        total += (rx * ry).sum(axis=1) / np.sqrt((rx * rx).sum(axis=1) * (ry * ry).sum(axis=1))
    expected = int(np.sum(total / 3 >= observed - 1e-12))
    assert stats.permutation_exceedances(groups, 0, 1, n, np.random.default_rng(11)) == expected


def test_holm_thresholds_give_holms_verdicts() -> None:
    pvalues = {"a": 0.01, "b": 0.04, "c": 0.03, "d": 0.005}
    thresholds = stats.holm_thresholds(pvalues, 0.05)
    assert thresholds == pytest.approx({"d": 0.0125, "a": 0.05 / 3, "c": 0.025, "b": 0.05})
    adjusted = stats.holm(pvalues)
    # step down: reject while p ≤ its threshold, stop at the first that is not
    rejected = set()
    for name in sorted(pvalues, key=pvalues.get):  # type: ignore[arg-type]
        if pvalues[name] > thresholds[name]:
            break
        rejected.add(name)
    assert rejected == {k for k, v in adjusted.items() if v <= 0.05} == {"a", "d"}


def test_pair_tally_counts_undecided_apart_from_wrong() -> None:
    """Columns: outcome, marker 1, marker 2, seed SD, k; with no seed noise every pair is eligible.
    Rule [1, 2]: (0,1) both markers higher in 0, which transfers better — right; (0,2) the markers
    disagree — undecided; (1,2) both higher in 2, which transfers worse — wrong."""
    rows = np.array(
        [[0.9, 3.0, 3.0, 0.0, 2], [0.5, 1.0, 1.0, 0.0, 2], [0.2, 2.0, 5.0, 0.0, 2]], dtype=np.float64
    )
    cols = stats.PairColumns(outcome=0, sd=3, k=4)
    correct, decided, eligible = stats.pair_tally(rows, cols, [1, 2])
    assert (int(correct), int(decided), int(eligible)) == (1, 2, 3)
    assert tuple(int(v) for v in stats.pair_counts(rows, cols, [1, 2])) == (1, 3)


def _fake_source(true_p: float) -> tuple[str, Any]:
    def draw(n: int, seed: stats.Seed) -> tuple[int, int]:
        return int(np.random.default_rng(seed).binomial(n, true_p)), n

    return "pair_bootstrap", draw


def test_draws_grow_until_no_verdict_can_flip() -> None:
    sources = {"far": _fake_source(0.001), "close": _fake_source(0.0235), "null": _fake_source(0.6)}
    first = dict.fromkeys(sources, 10_000)
    mc, still = decisive_p_values(sources, first, seed=0, alpha=0.05, max_draws=10_000 * 2**9)
    assert still == []
    assert mc["far"].draws == mc["null"].draws == 10_000  # settled by the plan's own draws
    assert mc["close"].draws > 10_000
    thresholds = stats.holm_thresholds({t: m.p for t, m in mc.items()}, 0.05)
    for test, m in mc.items():
        lo, hi = m.interval(0.999)
        assert not lo <= thresholds[test] < hi
    assert unsettled(mc, 0.05, 0.999) == []


def test_a_test_too_close_to_call_is_reported_unsettled() -> None:
    sources = {"on_the_line": _fake_source(0.025), "other": _fake_source(0.5)}
    mc, still = decisive_p_values(sources, dict.fromkeys(sources, 1000), seed=0, alpha=0.05, max_draws=8000)
    assert still == ["on_the_line"] and mc["on_the_line"].draws == 8000


def test_monte_carlo_p_follows_the_plans_definitions() -> None:
    perm, boot = MonteCarloP("permutation", 39, 9999), MonteCarloP("case_bootstrap", 40, 10_000)
    assert perm.p == pytest.approx(40 / 10_000) and boot.p == pytest.approx(0.004)
    assert perm.se == pytest.approx(np.sqrt(0.004 * 0.996 / 10_000))


# --- a synthetic study: the tiny config's layout, made-up records ---


def _config() -> StudyConfig:
    return load_config(STUDIES / "tiny.toml")


def _model(name: str, task: str, arch: str, recipe: str, seed: int, arm: str, **v: float) -> dict[str, Any]:
    geometry = {
        c: {
            "markers": {"dimension": v["d"], "utilization": v["u"], "radius": v.get("r", 1.0)},
            "regime": {"degenerate": False, "separable_fraction": 1.0, "saturated_fraction": 0.0},
        }
        for c in ("none", "global")
    }
    markers = {k: v.get(k, 1.0) for k in ("nc1", "participation_ratio", "numerical_rank", "logme", "h_score")}
    return {
        "name": name,
        "task": task,
        "arch": arch,
        "recipe": recipe,
        "seed": seed,
        "arm": arm,
        "diverged": False,
        "train_acc": 1.0,
        "id_acc": v["id"],
        "markers": markers,
        "geometry": geometry,
        "outcomes": {"probe": v["y"], "fewshot_2": v["y"], "fewshot_3": v["y"]},
        "numerical_rank": 1.0,
        "active_fraction": 1.0,
    }


def _study(rng: np.random.Generator) -> list[dict[str, Any]]:
    """Zoo: 4 recipes per architecture and task, 2 seeds; D_eff tracks the outcome, Ψ_eff only in
    part. Arm: v2 transfers better and has the higher geometry in every case, v1 the higher ID
    accuracy, so geometry = always v2 = right and ID accuracy = wrong in every case."""
    models = []
    for task, archs in (("A", ["mlp2", "cnn"]), ("B", ["mlp2"])):
        for arch in archs:
            for r in range(4):
                for seed in (0, 1):
                    y = 0.5 + 0.1 * r + rng.normal(0, 0.002)
                    models.append(
                        _model(
                            f"{task}-{arch}-r{r}-s{seed}", task, arch, f"r{r}", seed, "zoo",
                            d=r + rng.normal(0, 0.01), u=rng.normal(), id=rng.uniform(0.8, 0.9), y=y,
                        )
                    )  # fmt: skip
    for seed in (0, 1):
        models.append(_model(f"A-cnn-v1-s{seed}", "A", "cnn", "v1", seed, "v1", d=1.0, u=0.1, id=0.95, y=0.6))
        models.append(_model(f"A-cnn-v2-s{seed}", "A", "cnn", "v2", seed, "v2", d=2.0, u=0.2, id=0.90, y=0.8))
    return models


def test_h4_recheck_shows_the_baselines_and_the_exact_test() -> None:
    config = _config()
    arm = [m for m in _study(np.random.default_rng(0)) if m["arm"] != "zoo"]
    h4 = h4_recheck(arm, config, n_scored=24, centering="none")
    rules = h4["rules"]
    assert rules["geometry"]["accuracy"] == rules["always_v2"]["accuracy"] == 1.0
    assert rules["more_v2_parts"]["accuracy"] == 1.0  # v2 has every v2 part, v1 none
    assert (rules["id_accuracy"]["correct"], rules["id_accuracy"]["wrong"]) == (0, 2)
    exact = h4["exact"]["geometry − id_accuracy"]
    assert exact["patterns"] == 2 and exact["p_greater"] == 0.5  # one architecture: nothing below 1/2
    assert h4["exact"]["geometry − always_v2"]["mean"] == 0.0


def test_recheck_of_a_synthetic_study(tmp_path: Path) -> None:
    config = _config()
    models = _study(np.random.default_rng(1))
    decision = {"rule": "id_accuracy", "centering": "none", "v1_v2_rule": "id_accuracy"}
    before = [dict(m, diverged=True) for m in models if m["name"] == "A-cnn-v2-s0"]
    rc = recheck(models, before, config, 24, decision, max_draws=config.stats.n_perm * 4)
    assert set(rc["p_values"]) == set(rc["primary"])
    assert rc["h4"]["before_fix"]["none"]["cases"] == 1 and rc["h4"]["after_fix"]["none"]["cases"] == 2
    geo = rc["pairs"]["A/none"]["geometry"]
    assert geo["correct"] + geo["wrong"] + geo["undecided"] == geo["eligible"] > 0
    assert rc["pairs"]["A/none"]["dimension"]["win_rate_decided"] == 1.0
    with pytest.raises(ValueError, match="does not hold"):
        recheck(models, [{"name": "nope"}], config, 24, decision, max_draws=10_000)

    results = tmp_path / "results.json"
    results.write_text(
        json.dumps(
            {
                "config": config.model_dump(mode="json"),
                "models": models,
                "splits": {"A": {"probe_score": list(range(24))}},
                "decision": decision,
                "plan_commit": "0" * 40,
            }
        )
    )
    old = tmp_path / "before.json"
    old.write_text(json.dumps(before))
    out = tmp_path / "report"
    args = ["study2-recheck", str(results), "--before-fix", str(old), "--report-dir", str(out)]
    done = CliRunner().invoke(app, [*args, "--max-draws", "20000"])
    assert done.exit_code == 0, done.output
    report = (out / "report.md").read_text()
    for section in ("## Primary tests with decisive p-values", "always v2 (trivial)", "## Counts corrected"):
        assert section in report
    assert json.loads((out / "recheck.json").read_text())["decision"]["changed"] is False


def test_recheck_command_refuses_bad_input(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    records = tmp_path / "records.json"
    records.write_text("[]")
    for args in (
        [str(tmp_path / "missing.json"), "--before-fix", str(records)],
        [str(bad), "--before-fix", str(records)],
        [str(records), "--before-fix", str(records)],
    ):
        done = CliRunner().invoke(app, ["study2-recheck", *args, "--report-dir", str(tmp_path / "out")])
        assert done.exit_code == 2, done.output
        assert "bad_recheck" in done.output and "Traceback" not in done.output
    assert not (tmp_path / "out").exists()


def test_sensitivity_counts_are_per_task() -> None:
    """The first report labelled the filtered total of both tasks as each task's count."""
    from zootriage.core.backtest.analysis import analyze
    from zootriage.core.backtest.recheck import sensitivity_counts

    config = _config()
    models = _study(np.random.default_rng(2))
    zoo = [m for m in models if m["arm"] == "zoo"]
    arm = [m for m in models if m["arm"] != "zoo"]
    counts = sensitivity_counts(zoo, arm, config)
    sensitivity = analyze(models, config, {"A": 24, "B": 24})["sensitivity"]
    assert sensitivity["H1/A/none"]["models_kept"] == counts["task A zoo"]
    assert sensitivity["H1/B/none"]["models_kept"] == counts["task B zoo"]
    assert counts["task A zoo"] != counts["task B zoo"]  # 16 against 8 models before filtering
    assert 0 < counts["task B zoo"] < 8 and 0 < counts["task A zoo"] < 16
    assert sensitivity["H4/none"]["models_kept"] == counts["v1/v2 arm"]
