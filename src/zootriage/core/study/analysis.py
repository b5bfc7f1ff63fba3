"""From a study's per-model results to the answer: per outcome, every marker's back-test, and the
geometry rule (both D_eff and Ψ_eff higher) under every GLUE variant next to "higher ID accuracy"."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from zootriage.core.study.run import variant_name
from zootriage.core.study.stats import Record, backtest, pairwise_both_higher, pairwise_higher


def records_for(models: list[dict[str, Any]], outcome: str, *, by_setting: bool = False) -> list[Record]:
    """Kept models as back-test records against ``outcome``; grouped by architecture, or with
    ``by_setting`` by architecture × optimiser (the paper's "settings")."""
    return [
        Record(
            m["name"],
            f"{m['arch']}/{m['optimizer']}" if by_setting else m["arch"],
            float(m["outcomes"][outcome]),
            m["markers"],
        )
        for m in models
        if m["kept"] and outcome in m.get("outcomes", {})
    ]


def analyze_study(results: dict[str, Any], *, n_boot: int, seed: int) -> dict[str, Any]:
    """``{outcome: {"backtest", "variant_rules", "by_setting"}}`` for every measured outcome.

    ``variant_rules[dichotomy,centering]`` is the geometry rule's pairwise rate with that variant's
    D_eff and Ψ_eff; ``variant_rules["id_accuracy"]`` is the "higher ID accuracy" rule beside it.
    ``by_setting[marker][arch/optimiser]`` is the Pearson r within one architecture × optimiser.
    Outcomes with fewer than three kept models are reported as ``{"skipped": reason}``.
    """
    kept = [m for m in results["models"] if m["kept"]]
    outcomes = sorted({name for m in kept for name in m["outcomes"]})
    variants = [tuple(v) for v in results["config"]["variants"]]
    answer: dict[str, Any] = {}
    for outcome in outcomes:
        records = records_for(results["models"], outcome)
        try:
            test = backtest(records, n_boot=n_boot, seed=seed)
        except ValueError as exc:
            answer[outcome] = {"skipped": str(exc)}
            continue
        rules = {
            f"{d},{c}": asdict(
                pairwise_both_higher(
                    records, variant_name("dimension", d, c), variant_name("utilization", d, c)
                )
            )
            for d, c in variants
        }
        rules["id_accuracy"] = asdict(pairwise_higher(records, "id_accuracy"))
        per_setting = backtest(records_for(results["models"], outcome, by_setting=True), n_boot=1, seed=seed)
        by_setting = {
            name: {setting: c.pearson for setting, c in m.by_architecture.items()}
            for name, m in per_setting.markers.items()
        }
        answer[outcome] = {"backtest": test.to_dict(), "variant_rules": rules, "by_setting": by_setting}
    return answer
