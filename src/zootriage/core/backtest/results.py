"""``results.json``: the per-model records, splits, analysis, decision and the evidence the service
quotes (``evidence``: per task, rule × centring × outcome, with the study id and the plan's commit)."""

from __future__ import annotations

from typing import Any

from zootriage.core.backtest.analysis import analyze
from zootriage.core.backtest.config import StudyConfig
from zootriage.core.backtest.decision import decide
from zootriage.core.backtest.run import study_id


def build_results(run: dict[str, Any], config: StudyConfig, *, plan_commit: str) -> dict[str, Any]:
    """Analyse a finished run (:func:`core.backtest.run.run_study`) and decide the default."""
    analysis = analyze(run["models"], config, run["n_scored"])
    ident = study_id(config)
    return {
        "study_id": ident,
        "plan_commit": plan_commit,
        "config": config.model_dump(mode="json"),
        "splits": run["splits"],
        "probe": run["probe"],
        "floors": run["floors"],
        "models": run["models"],
        "analysis": {k: v for k, v in analysis.items() if k != "evidence"},
        "decision": decide(analysis["primary"], config.markers.centerings),
        "evidence": {"study_id": ident, "plan_commit": plan_commit, "tasks": analysis["evidence"]},
    }
