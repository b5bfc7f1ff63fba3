"""Study 2's ``results.json`` and ``report.md`` (docs/study/PLAN.md).

``results.json``: the per-model records, splits, analysis, decision and the evidence the service quotes
(``evidence``: per task, rule × centring × outcome, with the study id and the plan's commit).
``report.md``: the results in the plan's order, section by section, the paper's figures beside ours;
anything beyond the plan is marked **exploratory**."""

from __future__ import annotations

import json
from collections.abc import Sequence
from functools import partial
from pathlib import Path
from typing import Any

from zootriage.core.backtest.analysis import analyze
from zootriage.core.backtest.config import StudyConfig
from zootriage.core.backtest.decision import PAPER_H4, decide
from zootriage.core.backtest.figures import recipe_scatter
from zootriage.core.backtest.report import interval as _ci
from zootriage.core.backtest.report import num as _n
from zootriage.core.backtest.report import run_record, write_report
from zootriage.core.backtest.report import table as _table
from zootriage.core.backtest.run import study_id


def build_results(run: dict[str, Any], config: StudyConfig, *, plan_commit: str) -> dict[str, Any]:
    """Analyse a finished run (:func:`core.backtest.run.run_study`) and decide the default."""
    analysis = analyze(run["models"], config, run["n_scored"])
    ident = study_id(config)
    return {
        "study_id": ident,
        "plan_commit": plan_commit,
        **run_record(run, config),
        "analysis": {k: v for k, v in analysis.items() if k != "evidence"},
        "decision": decide(analysis["primary"], config.markers.centerings),
        "evidence": {"study_id": ident, "plan_commit": plan_commit, "tasks": analysis["evidence"]},
    }


# The paper (Chou et al., ICLR 2026): per-setting Pearson r with OOD probe accuracy over its 16
# architecture × optimiser settings, and the v1/v2 verdict's accuracy against ID accuracy's.
PAPER = {
    "H1": "r 0.62 to 0.95 per setting (pooled 0.94)",
    "H2": "r 0.62 to 0.94 per setting (pooled 0.93)",
    "H3": "–",
    "H4": f"{PAPER_H4[0]:.0%} vs {PAPER_H4[1]:.0%}",
}


def _statistic(test_id: str, result: dict[str, Any]) -> str:
    if test_id.startswith(("H1", "H2")):
        return f"ρ̄ = {_n(result['rho_bar'])}"
    return f"Δ = {_n(result['delta'], '+.2f')}"


def _verdict(result: dict[str, Any]) -> str:
    if not result["assessable"]:
        return "not assessable"
    return "**significant**" if result.get("significant") else "not significant"


def _primary(primary: dict[str, dict[str, Any]]) -> list[str]:
    rows = []
    for test_id, r in primary.items():
        hyp = test_id.split("/")[0]
        rows.append(
            [
                test_id,
                _statistic(test_id, r),
                _ci(r["ci"]),
                _n(r["p"], ".4f"),
                _n(r["p_holm"], ".4f"),
                _verdict(r),
                PAPER[hyp],
            ]
        )
    return _table(["test", "statistic", "95 % CI", "p", "Holm p", "verdict", "paper"], rows)


def _details(primary: dict[str, dict[str, Any]], sensitivity: bool = False) -> list[str]:
    corr, pairs, cases = [], [], []
    for test_id, r in primary.items():
        if test_id.startswith(("H1", "H2")):
            per_arch = ", ".join(f"{a} {_n(v)}" for a, v in r["rho_by_arch"].items())
            corr.append([test_id, str(r["recipes"]), per_arch or "–", _n(r["rho_bar"]), _ci(r["ci"])])
        elif test_id.startswith("H3"):
            pairs.append(
                [
                    test_id,
                    str(r["eligible_pairs"]),
                    _n(r["accuracy"]),
                    _n(r["baseline_accuracy"]),
                    _n(r["delta"], "+.2f"),
                    _ci(r["ci"]),
                ]
            )
        else:
            parts = [
                f"{_n(r[p]['accuracy'])} vs {_n(r[p]['baseline_accuracy'])} ({r[p]['cases']})"
                for p in ("all", "within_noise", "beyond_noise")
            ]
            cases.append([test_id, str(r["cases"]), *parts, _n(r["delta"], "+.2f"), _ci(r["ci"])])
    lines = [*_table(["test", "recipes", "ρ per architecture", "ρ̄", "95 % CI"], corr), ""]
    lines += [
        *_table(["test", "eligible pairs", "acc geometry", "acc ID accuracy", "Δ", "95 % CI"], pairs),
        "",
    ]
    lines += _table(
        ["test", "cases", "all: geometry vs ID (n)", "within noise", "beyond noise", "Δ", "95 % CI"], cases
    )
    if sensitivity:
        lines += [
            "",
            "Models kept by the filters: "
            + ", ".join(f"{k} {v['models_kept']}" for k, v in primary.items() if k.startswith(("H1/", "H4"))),
        ]
    return lines


def _zoo(results: dict[str, Any]) -> list[str]:
    excl = results["analysis"]["exclusions"]
    lines = []
    for task, e in excl.items():
        diverged = ", ".join(f"{k} {v}" for k, v in sorted(e["diverged_per_recipe"].items())) or "none"
        lines.append(f"- Task {task}: {e['models']} zoo models, {e['diverged']} diverged ({diverged}).")
    arm = [m for m in results["models"] if m["arm"] in ("v1", "v2")]
    if arm:
        lines.append(f"- v1/v2 arm: {len(arm)} models, {sum(m['diverged'] for m in arm)} diverged.")
    lines += [
        "",
        "Collapse per recipe (means over non-diverged seeds): numerical rank and active-unit fraction "
        "of the 512 penultimate units.",
        "",
    ]
    rows = [
        [
            key,
            str(v["models"]),
            _n(v["train_acc"], ".3f"),
            _n(v["id_acc"], ".3f"),
            _n(v["numerical_rank"], ".1f"),
            _n(v["active_fraction"]),
        ]
        for key, v in results["analysis"]["collapse"].items()
    ]
    return lines + _table(
        ["task/arch/recipe", "models", "train acc", "ID acc", "numerical rank", "active"], rows
    )


def _regime(results: dict[str, Any]) -> list[str]:
    rows = []
    centerings = results["config"]["markers"]["centerings"]
    for task in ("A", "B"):
        live = [m for m in results["models"] if m["task"] == task and not m["diverged"]]
        for c in centerings:
            regimes = [m["geometry"][c]["regime"] for m in live]
            sep = [r["separable_fraction"] for r in regimes if r["separable_fraction"] is not None]
            sat = [r["saturated_fraction"] for r in regimes if r["saturated_fraction"] is not None]
            flagged = sum(r["degenerate"] is True for r in regimes)
            unknown = sum(r["degenerate"] is None for r in regimes)
            rows.append(
                [
                    task,
                    c,
                    str(len(live)),
                    f"{flagged}" + (f" ({unknown} without the diagnostic)" if unknown else ""),
                    _n(sum(sep) / len(sep)) if sep else "–",
                    _n(sum(sat) / len(sat)) if sat else "–",
                ]
            )
    return _table(
        ["task", "centring", "models", "degenerate", "mean separable fraction", "mean saturated fraction"],
        rows,
    )


def _evidence(results: dict[str, Any], outcomes: Sequence[str], rules: Sequence[str] | None) -> list[str]:
    rows = []
    for task, per_variant in results["evidence"]["tasks"].items():
        for centering, entry in per_variant.items():
            for outcome in outcomes:
                for rule, e in entry["outcomes"][outcome].items():
                    if rules is not None and rule not in rules:
                        continue
                    corr = e.get("correlation") or {}
                    rows.append(
                        [
                            task,
                            centering,
                            outcome,
                            rule + (" (exploratory)" if e["exploratory"] else ""),
                            f"{_n(e['accuracy'])} ({e['eligible_pairs']})",
                            f"{_n(e['delta'], '+.2f')} {_ci(e['ci'])}",
                            f"{_n(corr.get('rho_bar'))} {_ci(corr.get('ci'))}" if corr else "–",
                        ]
                    )
    return _table(
        ["task", "centring", "outcome", "rule", "pairwise acc (pairs)", "Δ vs ID acc [CI]", "ρ̄ [CI]"], rows
    )


def _floors(results: dict[str, Any], floors: dict[str, list[float]]) -> list[str]:
    lines = []
    for key, values in sorted(floors.items()):
        floor = sum(values) / len(values)
        task, arch = key.split("/")
        trained = [
            m["outcomes"]["probe"]
            for m in results["models"]
            if m["task"] == task and m["arch"] == arch and m["arm"] == "zoo" and not m["diverged"]
        ]
        if not trained:
            lines.append(f"  - {key}: floor {floor:.3f}; no trained model kept")
            continue
        gain = sum(trained) / len(trained) - floor
        lines.append(
            f"  - {key}: floor {floor:.3f}; trained {min(trained):.3f}–{max(trained):.3f}, "
            f"mean gain {gain:+.3f}"
        )
    return lines


def render(results: dict[str, Any], figures: Sequence[tuple[str, str]], title: str) -> str:
    a, cfg, d = results["analysis"], results["config"], results["decision"]
    probe = results["probe"]
    floors: dict[str, list[float]] = {}
    for f in results["floors"]:
        floors.setdefault(f"{f['task']}/{f['arch']}", []).append(f["outcomes"]["probe"])
    outcomes = [o for o in next(iter(next(iter(results["evidence"]["tasks"].values())).values()))["outcomes"]]
    lines = [
        f"# {title}",
        "",
        f"Study `{results['study_id']}`, plan commit `{results['plan_commit']}` (docs/study/PLAN.md). "
        "Sections follow the plan; anything beyond it is marked **exploratory**.",
        "",
        "## Why a second study",
        "",
        "See the plan: the first back-test (2026-11-30) could not settle the question. "
        "Every choice below was fixed before training.",
        "",
        "## Hypotheses",
        "",
        f"The 14 primary tests, one-sided, Holm over the family at α = {cfg['stats']['alpha']}. "
        "A not-assessable test enters Holm with p = 1.",
        "",
        *_primary(a["primary"]),
        "",
        "## Data and outcomes",
        "",
        *(
            f"- Task {t}: {len(s['train'])} ID training, {len(s['test'])} ID test and "
            f"{len(s['ood'])} OOD images ({s['sources']['train']} / {s['sources']['ood']}); the probe fits "
            f"{len(s['probe_fit'])} and scores {len(s['probe_score'])}; C = {probe[t]['c']:g}, chosen on the "
            "random-init models "
            f"(validation accuracy by C: {json.dumps(probe[t]['validation_accuracy'])})."
            for t, s in results["splits"].items()
        ),
        "- Random-init floor (probe accuracy of the untrained models) and the trained zoo's gain over it "
        "(secondary outcome; within an architecture it changes no correlation):",
        *_floors(results, floors),
        "",
        "## The zoo",
        "",
        *_zoo(results),
        "",
        "## Markers",
        "",
        "GLUE regime diagnostic per task and centring (models flagged degenerate are excluded from that "
        "centring's geometry analyses).",
        "",
        *_regime(results),
        "",
        "## Exclusion rules",
        "",
        *(
            f"- Task {t}, centring {c}: {e['count']} of {e['of']} degenerate ({e['fraction']:.0%}); "
            f"{'assessable' if e['assessable'] else '**not assessable**'}."
            for t, x in a["exclusions"].items()
            for c, e in x["degenerate"].items()
        ),
        "",
        "## Statistics",
        "",
        *_details(a["primary"]),
        "",
        *(f"![task {t}]({name})" for t, name in figures),
        "",
        "### Sensitivity: the paper's accuracy filters (no significance claims)",
        "",
        *_details(a["sensitivity"], sensitivity=True),
        "",
        "### Secondary outcomes and exploratory markers (intervals, no significance claims)",
        "",
        *_evidence(results, [o for o in outcomes if o != "probe"], ("geometry", "id_accuracy")),
        "",
        *_evidence(results, ["probe"], None),
        "",
        "## The rule that chooses the product's default",
        "",
        f"- Default rule: **{d['rule']}**, centring **{d['centering']}**; "
        f"v1/v2 verdict: **{d['v1_v2_rule']}**.",
        f"- Why: {d['reason']}.",
        *(f"- Centring {c}: {r}." for c, r in d["reasons"].items()),
        f"- H4 beside the paper's {PAPER_H4[0]:.0%} against {PAPER_H4[1]:.0%}: "
        + "; ".join(
            f"{k}: {_n(v['all']['accuracy'])} against {_n(v['all']['baseline_accuracy'])}"
            for k, v in a["primary"].items()
            if k.startswith("H4")
        )
        + ".",
        "",
        "The evidence the service quotes is `results.json` → `evidence`.",
        "",
        "## Changes after registration",
        "",
        f"- epoch scale {cfg['epoch_scale']:g}" + (" (none)" if cfg["epoch_scale"] == 1 else ""),
        "",
    ]
    return "\n".join(lines)


def write_report2(results: dict[str, Any], folder: Path, *, title: str) -> Path:
    """``results.json``, ``recipes_<task>.png`` and ``report.md`` into ``folder``."""
    figures = {f"recipes_{task}.png": partial(recipe_scatter, results, task) for task in ("A", "B")}
    labelled = {f"recipes_{task}.png": task for task in ("A", "B")}
    return write_report(
        results,
        folder,
        lambda drawn: render(results, [(labelled[name], file) for name, file in drawn], title),
        figures=figures,
    )
