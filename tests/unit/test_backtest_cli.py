"""``zootriage backtest FILE.csv`` and the CSV reader behind it: by default study 3's confirmatory method
(``core.backtest.on_runs3``, the default of ``POST /v1/backtests``), its counts checked against a recount
here, and with ``--method preregistered`` the same answer ``core.backtest.on_runs.analyse`` gives."""

from __future__ import annotations

import csv
import itertools
import json
import statistics
from collections import defaultdict
from pathlib import Path

import pytest
from typer.testing import CliRunner

from zootriage.app.cli import app
from zootriage.core.backtest import on_runs3
from zootriage.core.backtest.csv_runs import read_runs
from zootriage.core.backtest.on_runs import analyse


def _csv() -> str:
    """Two architectures × 3 recipes × 2 seeds: the outcome and dimension rise with the recipe, ID
    accuracy falls with it; a text column and a model without a recipe."""
    lines = ["id,architecture,recipe,created_at,ood_accuracy,dimension,utilization,id_accuracy"]
    for arch, offset in (("resnet", 0.0), ("vgg", 0.05)):
        for recipe in range(3):
            for seed in range(2):
                outcome = 0.5 + 0.1 * recipe + offset + 0.002 * seed
                dim, util, acc = 1.0 + recipe + 0.01 * seed, 0.1 * recipe + 0.003 * seed, 0.95 - 0.01 * recipe
                lines.append(
                    f"{arch}{recipe}{seed},{arch},r{recipe},2026-01-0{seed + 1},{outcome},{dim},{util},{acc}"
                )
    lines.append("loose,resnet,,2026-01-09,0.4,1.0,,0.9")
    return "\n".join(lines) + "\n"


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "zoo.csv"
    path.write_text(text)
    return path


def test_reader_finds_markers_recipes_and_skips_text_columns(tmp_path: Path) -> None:
    runs, skipped = read_runs(_write(tmp_path, _csv()), outcome="ood_accuracy")
    assert skipped == ["created_at"]
    assert [r.run for r in runs[:2]] == ["resnet00", "resnet01"] and runs[0].recipe == "r0"
    assert runs[-1].recipe is None and runs[-1].values == {
        "dimension": 1.0,
        "utilization": None,
        "id_accuracy": 0.9,
    }


def test_reader_rejects_bad_input(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="row 2: outcome 'n/a'"):
        read_runs(_write(tmp_path, _csv().replace(",0.5,", ",n/a,", 1)), outcome="ood_accuracy")
    with pytest.raises(ValueError, match="no outcome column 'ood'"):
        read_runs(_write(tmp_path, _csv()), outcome="ood")
    with pytest.raises(ValueError, match="no recipe column 'seed_group'"):
        read_runs(_write(tmp_path, _csv()), outcome="ood_accuracy", recipe="seed_group")
    with pytest.raises(ValueError, match="appears twice"):
        read_runs(_write(tmp_path, _csv() + "resnet00,resnet,r0,x,0.5,1,0.1,0.9\n"), outcome="ood_accuracy")


def test_backtest_command_gives_the_preregistered_answer(tmp_path: Path) -> None:
    path = _write(tmp_path, _csv())
    result = CliRunner().invoke(
        app,
        ["backtest", str(path), "--method", "preregistered", "--json", "--n-boot", "200", "--n-perm", "500"],
    )
    assert result.exit_code == 0, result.output
    body = json.loads(result.stdout)
    runs, _ = read_runs(path, outcome="ood_accuracy")
    expected = analyse(runs, ["dimension", "id_accuracy", "utilization"], n_boot=200, n_perm=500, seed=0)
    assert body == json.loads(json.dumps({**expected, "n_models": 13}))
    assert body["method"] == "preregistered" and body["recipes_by_architecture"] == {"resnet": 3, "vgg": 3}
    dim = body["rules"]["dimension"]
    assert dim["correlation"]["rho_bar"] == pytest.approx(1.0)  # ρ = 1 in each architecture
    assert dim["pairwise"]["accuracy"] == pytest.approx(1.0) and dim["pairwise"]["eligible_pairs"] == 6
    assert dim["pairwise"]["delta"] == pytest.approx(1.0)  # ID accuracy picks the worse recipe each time
    assert body["rules"]["geometry"]["pairwise"]["accuracy"] == pytest.approx(1.0)
    assert any("1 run(s) have no recipe label" in note for note in body["notes"])


def test_backtest_command_prints_a_table(tmp_path: Path) -> None:
    args = ["backtest", str(_write(tmp_path, _csv())), "--method", "preregistered", "--n-boot", "100"]
    result = CliRunner().invoke(app, [*args, "--n-perm", "0"], env={"COLUMNS": "250"})
    assert result.exit_code == 0, result.output
    assert "6 recipes" in result.stdout and "dimension" in result.stdout and "geometry" in result.stdout
    assert "Δ vs ID acc" in result.stdout and "mean d_a" not in result.stdout


# Per architecture, the direction of dimension, utilization and id_accuracy over the recipes r0 < r1 < r2
# (whose outcome rises): +1 rises with it (correct picks), -1 falls (wrong), 0 is flat (undecided).
DIRECTIONS = {
    "a0": (1, 1, 1),
    "a1": (1, 1, -1),
    "a2": (1, 1, -1),
    "a3": (1, 1, -1),
    "a4": (-1, 1, -1),
    "a5": (-1, 0, -1),
}
MARKERS = ("dimension", "utilization", "id_accuracy")


def _six_archs_csv() -> str:
    """6 architectures × 3 recipes × 2 seeds with the markers of :data:`DIRECTIONS`; in a1, r2's outcome
    is within r1's seed noise, so that pair is not eligible (17 eligible pairs of 18)."""
    lines = ["model,architecture,recipe,ood_accuracy," + ",".join(MARKERS)]
    for arch, signs in DIRECTIONS.items():
        for recipe in range(3):
            level = 1.001 if (arch, recipe) == ("a1", 2) else recipe
            for seed in range(2):
                outcome = 0.5 + 0.1 * level + 0.002 * seed
                values = [0.5 + 0.1 * sign * recipe + 0.001 * seed for sign in signs]
                lines.append(
                    f"{arch}-{recipe}-{seed},{arch},r{recipe},{outcome}," + ",".join(map(str, values))
                )
    return "\n".join(lines) + "\n"


def _recount(path: Path) -> dict[str, dict[str, dict[str, int]]]:
    """Per rule and architecture, correct / wrong / undecided picks over the recipe pairs whose outcome
    gap exceeds 1.96 · sqrt(s_a²/2 + s_b²/2), counted from the CSV with the standard library alone."""
    seeds: dict[tuple[str, str], list[dict[str, float]]] = defaultdict(list)
    with path.open() as f:
        for row in csv.DictReader(f):
            seeds[row["architecture"], row["recipe"]].append(
                {k: float(row[k]) for k in ("ood_accuracy", *MARKERS)}
            )
    mean = {key: {k: statistics.fmean(s[k] for s in rows) for k in rows[0]} for key, rows in seeds.items()}
    sd = {key: statistics.stdev(s["ood_accuracy"] for s in rows) for key, rows in seeds.items()}
    rules = {m: (m,) for m in MARKERS} | {"geometry": ("dimension", "utilization")}
    counts: dict[str, dict[str, dict[str, int]]] = {
        r: defaultdict(lambda: {"correct": 0, "wrong": 0, "undecided": 0}) for r in rules
    }
    for a, b in itertools.combinations(sorted(seeds), 2):
        gap = mean[a]["ood_accuracy"] - mean[b]["ood_accuracy"]
        if a[0] != b[0] or abs(gap) <= 1.96 * ((sd[a] ** 2 + sd[b] ** 2) / 2) ** 0.5:
            continue
        for rule, markers in rules.items():
            signs = {(mean[a][m] > mean[b][m]) - (mean[a][m] < mean[b][m]) for m in markers}
            sign = signs.pop() if len(signs) == 1 else 0
            pick = "undecided" if sign == 0 else "correct" if (sign > 0) == (gap > 0) else "wrong"
            counts[rule][a[0]][pick] += 1
    return {rule: dict(by_arch) for rule, by_arch in counts.items()}


def test_backtest_command_defaults_to_the_confirmatory_method(tmp_path: Path) -> None:
    path = tmp_path / "six.csv"
    path.write_text(_six_archs_csv())
    result = CliRunner().invoke(app, ["backtest", str(path), "--json", "--n-boot", "200"])
    assert result.exit_code == 0, result.output
    body = json.loads(result.stdout)
    runs, _ = read_runs(path, outcome="ood_accuracy")
    expected = on_runs3.analyse(runs, ["dimension", "id_accuracy", "utilization"], n_boot=200)
    assert body == json.loads(json.dumps({**expected, "n_models": 36}))
    assert body["method"] == "confirmatory" and body["eligible_pairs"] == 17
    recount = _recount(path)
    assert set(body["confirmatory_rules"]) == set(recount)
    for name, rule in body["confirmatory_rules"].items():
        total = {k: sum(t[k] for t in recount[name].values()) for k in ("correct", "wrong", "undecided")}
        assert {k: rule[k] for k in total} == total, name
        assert rule["pairs"] == 17 and rule["accuracy"] == pytest.approx(total["correct"] / 17)
    rules = body["confirmatory_rules"]
    assert [rules["geometry"][k] for k in ("correct", "wrong", "undecided")] == [11, 0, 6]
    versus = rules["dimension"]["vs_id_accuracy"]
    d = {
        arch: (recount["dimension"][arch]["correct"] - recount["id_accuracy"][arch]["correct"])
        / sum(recount["dimension"][arch].values())
        for arch in DIRECTIONS
    }
    assert versus["d_by_architecture"] == pytest.approx(d) and versus["mean_d"] == pytest.approx(0.5)
    # d = (0, 1, 1, 1, 0, 0): a mean ≥ 0.5 needs the three ones positive, 2^3 of the 2^6 sign patterns.
    assert versus["assessable"] and versus["p"] == pytest.approx(8 / 64) and versus["min_p"] == 1 / 64
    assert rules["id_accuracy"]["vs_id_accuracy"] is None


def test_backtest_command_prints_the_confirmatory_table(tmp_path: Path) -> None:
    path = tmp_path / "six.csv"
    path.write_text(_six_archs_csv())
    wide = {"COLUMNS": "250"}
    six = CliRunner().invoke(app, ["backtest", str(path), "--n-boot", "100"], env=wide)
    assert six.exit_code == 0, six.output
    assert "17 eligible pairs" in six.stdout and "undecided" in six.stdout
    assert "0.1250 (min 0.0156)" in six.stdout and "+0.500" in six.stdout
    two = CliRunner().invoke(app, ["backtest", str(_write(tmp_path, _csv())), "--n-boot", "100"], env=wide)
    assert two.exit_code == 0, two.output
    assert "not assessable (2 of 6 architectures)" in two.stdout and "ρ̄" not in two.stdout


def test_backtest_command_fails_cleanly(tmp_path: Path) -> None:
    one_seed = "\n".join(line for line in _csv().splitlines() if not line.split(",")[0].endswith("1")) + "\n"
    result = CliRunner().invoke(app, ["backtest", str(_write(tmp_path, one_seed))])
    assert result.exit_code == 2 and "no recipe has 2 or more runs" in result.output
    missing = CliRunner().invoke(app, ["backtest", str(tmp_path / "nope.csv")])
    assert missing.exit_code == 2 and "cannot read" in missing.output
    bad = CliRunner().invoke(app, ["backtest", str(_write(tmp_path, _csv())), "--n-perm", "-1"])
    assert bad.exit_code == 2 and "--n-perm" in bad.output
    method = CliRunner().invoke(app, ["backtest", str(_write(tmp_path, _csv())), "--method", "first-study"])
    assert method.exit_code == 2 and "first-study" in method.output and "Traceback" not in method.output
    too_many = CliRunner().invoke(app, ["backtest", str(_write(tmp_path, _csv())), "--n-boot", "20001"])
    assert too_many.exit_code == 2 and "n_boot must be 1 to 20000" in too_many.output
