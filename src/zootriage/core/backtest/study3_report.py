"""Study 3's ``results.json`` and ``report.md`` (docs/study/PLAN-3.md). The report follows the plan's
order: for each primary test the statistic, the per-architecture d_a, the exact p, the minimum
attainable p, Holm's p̃ and the verdict; then every rule's accuracy with correct / wrong / undecided and
its cluster-bootstrap interval; the frozen rule's calibration; admission; and the decision. Anything a
reader adds beyond these is exploratory and belongs in the dated report written by hand."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from zootriage.core.backtest.config import Study3Config
from zootriage.core.backtest.freeze_rule import load_frozen_rule
from zootriage.core.backtest.measure import FULL, fewshot_name
from zootriage.core.backtest.measure import PRIMARY3 as PRIMARY
from zootriage.core.backtest.report import interval, num, run_record, write_report
from zootriage.core.backtest.study3_analysis import analyze3
from zootriage.core.backtest.study3_decision import decide3, rule_inputs
from zootriage.core.backtest.study3_mc import bootstrap_error
from zootriage.core.backtest.tables import accuracy_filter, kept

EVIDENCE_VERSION = 3
# The paper's accuracy filters, repeated as a sensitivity analysis without significance claims
# (exclusion rule 5), with the registered study's settings: train accuracy ≥ 99 % and ID accuracy in
# the central 80 % of its range per architecture × task.
FILTER_TRAIN_ACC_MIN = 0.99
FILTER_CENTRAL_FRACTION = 0.8


CHANGES = "## Changes after registration"


def registration_changes(plan: str) -> str:
    """The plan's "Changes after registration" section (its text up to the next heading of that level,
    empty when the plan has none), carried into the results and the report."""
    start = plan.find(CHANGES)
    if start < 0:
        return ""
    body = plan[start + len(CHANGES):]
    end = body.find("\n## ")
    return (body if end < 0 else body[:end]).strip()


def build_results3(
    run: Mapping[str, Any], config: Study3Config, *, plan_commit: str, frozen_path: Path, changes: str = ""
) -> dict[str, Any]:
    """Analyse a finished run (:func:`core.backtest.study3_run.run_study3`) and decide; ``changes``: the
    plan's changes after registration (:func:`registration_changes`), reported as they are."""
    frozen = load_frozen_rule(frozen_path)
    analysis = analyze3(run["models"], run["floors"], config, frozen)
    tasks = [t.name for t in config.tasks]
    decision = decide3(analysis, tasks)
    filtered = [
        m
        for task in tasks
        for arch in config.archs
        for m in accuracy_filter(
            kept([z for z in run["models"] if z["task"] == task and z["arch"] == arch], None),
            FILTER_TRAIN_ACC_MIN,
            FILTER_CENTRAL_FRACTION,
        )
    ]
    sensitivity = analyze3(filtered, run["floors"], config, None)
    secondary = {
        f"{centering}/{outcome}": analyze3(
            run["models"], run["floors"], config, None, centering=centering, outcome=outcome
        )
        for centering, outcome in secondary_views(config)
    }
    return {
        "plan_commit": plan_commit,
        "changes_after_registration": changes,
        **run_record(run, config),
        "analysis": analysis,
        "decision": decision,
        "monte_carlo": bootstrap_error(analysis, tasks, config.stats.n_boot),
        "secondary": {k: {"accuracy": v["accuracy"], "tests": v["tests"]} for k, v in secondary.items()},
        "sensitivity_accuracy_filter": {
            "train_acc_min": FILTER_TRAIN_ACC_MIN,
            "central_fraction": FILTER_CENTRAL_FRACTION,
            "models": len(filtered),
            "accuracy": sensitivity["accuracy"],
            "tests": sensitivity["tests"],
        },
        "evidence": {
            "version": EVIDENCE_VERSION,
            "plan_commit": plan_commit,
            "outcome": "probe20",
            "centering": "none",
            "rules": analysis["accuracy"],
            "rule_inputs": rule_inputs(analysis, tasks),
            "decision": decision,
        },
        "budget": {
            "cpu_seconds": sum(float(m.get("cpu_seconds", 0.0)) for m in run["models"]),
            "wall_seconds": sum(float(m.get("wall_seconds", 0.0)) for m in run["models"]),
            "devices": sorted({str(m.get("device")) for m in run["models"]}),
        },
    }


def secondary_views(config: Study3Config) -> list[tuple[str, str]]:
    """The plan's secondary analyses: everything under centring ``global``, and the full probe and
    the few-shot NCM probes as outcomes (centring ``none``)."""
    views = [(c, PRIMARY) for c in config.markers.centerings if c != "none"]
    return views + [("none", FULL)] + [("none", fewshot_name(k)) for k in config.probe.fewshot]


def _fmt(x: float | None, digits: int = 3) -> str:
    return num(x, f".{digits}f")


def _ci(ci: Any) -> str:
    return interval(ci, ".3f")


def render(results: Mapping[str, Any], title: str) -> str:
    a, d = results["analysis"], results["decision"]
    lines = [
        f"# {title}",
        "",
        f"Plan: docs/study/PLAN-3.md, registration commit `{results['plan_commit']}`.",
        "",
        "## Changes after registration",
        "",
        results.get("changes_after_registration") or "(none)",
        "",
    ]
    lines += [
        "## Primary tests",
        "",
        "| test | rule vs baseline | pairs | n archs | mean d_a | exact p | min p | Holm p̃ | verdict |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for name, t in a["tests"].items():
        verdict = (
            "not assessable"
            if not t["assessable"]
            else ("significant" if t["significant"] else "not significant")
        )
        lines.append(
            f"| {name} | {t['rule']} vs {t['baseline']} | {t['pairs']} | {t['n_archs']} | "
            f"{_fmt(t['mean'])} | {_fmt(t['p'], 5)} | {_fmt(t['min_p'], 5)} | "
            f"{_fmt(t['p_holm'], 5)} | {verdict} |"
        )
    lines += ["", "Per-architecture d_a:", ""]
    for name, t in a["tests"].items():
        lines.append(f"- {name}: " + ", ".join(f"{arch} {v:+.3f}" for arch, v in t["d"].items()))
    lines += [
        "",
        "## Rules on the eligible pairs (primary outcome probe20, centring none)",
        "",
        "| rule | scope | correct | wrong | undecided | pairs | accuracy | 95 % interval |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for rule, scopes in sorted(a["accuracy"].items()):
        for scope, s in scopes.items():
            lines.append(
                f"| {rule} | {scope} | {s['correct']} | {s['wrong']} | {s['undecided']} | {s['pairs']} | "
                f"{_fmt(s['accuracy'])} | {_ci(s['ci95'])} |"
            )
    f = a["frozen_rule"]
    lines += ["", "## The frozen rule out of sample", ""]
    if f is None:
        lines.append("No eligible pair had every feature of the frozen rule.")
    else:
        lines += [
            f"Brier {_fmt(f['brier'])} {_ci(f['brier_ci95'])}, "
            f"ECE {_fmt(f['ece'])} {_ci(f['ece_ci95'])}; "
            f"calibrated: {'yes' if f['calibrated'] else 'no'}.",
            "",
            "| p̂ bin | pairs | mean p̂ | win rate |",
            "|---|---|---|---|",
        ]
        lines += [
            f"| [{b['lo']}, {b['hi']}) | {b['n']} | {_fmt(b['mean_p'])} | {_fmt(b['win_rate'])} |"
            for b in f["bins"]
        ]
    refused = [x for x in a["admission"] if not x["admitted"]]
    lines += [
        "",
        "## Admission",
        "",
        f"{len(refused)} of {len(a['admission'])} recipes not admitted "
        f"(tasks without pairs: {a['tasks_without_pairs'] or 'none'}).",
        "",
    ]
    lines += [
        f"- {x['task']} {x['arch']} {x['recipe']}: gain {_fmt(x.get('gain'))}, p {_fmt(x.get('p'))}"
        for x in refused
    ]
    lines += ["", "## Secondary analyses (no significance claims)", ""]
    for view, sec in results.get("secondary", {}).items():
        means = ", ".join(f"{n} mean d_a {_fmt(t['mean'])}" for n, t in sec["tests"].items())
        pooled = {r: s["pooled"]["accuracy"] for r, s in sec["accuracy"].items()}
        lines.append(
            f"- {view}: {means}; pooled accuracy "
            + ", ".join(f"{r} {_fmt(v)}" for r, v in sorted(pooled.items()))
        )
    lines += ["", "Recipe factors' main effects on probe20 (blocked by architecture):", ""]
    for task, eff in a.get("factor_effects", {}).items():
        if eff is None:
            lines.append(f"- task {task}: too few recipe means")
            continue
        lines.append(
            f"- task {task}: "
            + ", ".join(
                f"{k} {eff[k]['effect']:+.3f} (F {eff[k]['F']:.2f}, p {eff[k]['p']:.3g})"
                for k in ("aug", "ls", "ema_long")
            )
        )
    lines += ["", "Accuracy on the 3 tied-parts grid pairs per architecture × task:", ""]
    lines += [
        f"- {r}: {s['correct']}/{s['pairs']} (undecided {s['undecided']})"
        for r, s in sorted(a.get("tied_pairs", {}).items())
    ]
    lines += ["", "## Decision", "", "```", json.dumps(d, indent=1, default=str), "```", ""]
    lines += _monte_carlo(results.get("monte_carlo"))
    return "\n".join(lines)


FLIPS = "**A decisive bound changes side with the seed: that decision is within Monte Carlo error.**"


def _monte_carlo(mc: Mapping[str, Any] | None) -> list[str]:
    """The bootstrap's Monte Carlo error (``core.backtest.study3_mc``); the sign flips are exact."""
    if mc is None:
        return []
    lines = [
        "## Monte Carlo error",
        "",
        "The primary tests are exact (every sign pattern enumerated). The cluster bootstrap's bounds,",
        f"recomputed with {mc['seeds']} generator seeds at {mc['resamples']} resamples each",
        "(seed 0 is the plan's):",
        "",
        "| decisive bound | seed 0 holds | min | max | threshold | same side for every seed |",
        "|---|---|---|---|---|---|",
    ]
    lines += [
        f"| {name} | {'yes' if b['holds'] else 'no'} | {_fmt(b['min'])} | {_fmt(b['max'])} | "
        f"{b['threshold']} | {'yes' if b['stable'] else '**no**'} |"
        for name, b in mc["decisive"].items()
    ]
    lines += [
        "",
        f"Largest spread of any other interval's end point over the seeds: "
        f"{_fmt(mc['largest_interval_end_spread'], 4)}. "
        + ("No decision can flip with the generator seed." if mc["stable"] else FLIPS),
        "",
    ]
    return lines


def write_report3(results: Mapping[str, Any], folder: Path, *, title: str) -> Path:
    """``results.json`` and ``report.md`` into ``folder``."""
    return write_report(results, folder, lambda _: render(results, title))
