"""What the product does when a request names no rule or centring: the pre-registered studies' choice.

Read from the evidence file (``core/evidence.json``) with the standard library only, so the protocol
model (a leaf that the database models import) can take its default centring from it without
importing the evidence machinery. By the file's version:

- version 3 (study 3, docs/study/PLAN-3.md, "What changes the product's default"): the default is
  *computed here* from the evidence's ``rule_inputs`` by the plan's rule (:func:`plan3_decision`),
  applied mechanically. A marker M ∈ {Ψ_eff (test T1), numerical rank (T2)} qualifies when (a) its
  test is significant after Holm, (b) acc(M) − acc(ID accuracy) ≥ 0.10 on each task, and (c) it beats
  every trivial baseline by ≥ 0.05, pooled over tasks, on the pairs where that baseline applies (ID
  accuracy: all; more v2 parts: decoupled; always v2: v1/v2 pairs; numerical rank: all, for Ψ_eff;
  longer schedule: where it decides); a baseline with no such pair is not applicable. acc = correct
  picks / eligible pairs (an undecided pick is not correct). One qualifying marker becomes the default
  rule for rankings and the v1/v2 verdict (centring ``none``); of two, the one with the larger pooled
  acc(M) − acc(ID accuracy). If none qualifies, the plan's fallback: rankings by ID accuracy.
- version 2 (study 2, docs/study/PLAN.md): ``default`` as study 2's rule (``core.backtest.decision``)
  decided it when the file was built (``core.evidence.build_from_preregistered``); the file does not
  carry the tests that rule reads.
- no decision (version 1, from before the pre-registered studies): the paper's choice, the geometry
  rule on raw features.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

EVIDENCE_PATH = Path(__file__).with_name("evidence.json")
_PAPERS_CHOICE = "the paper's choice; no pre-registered study has decided yet"


@dataclass(frozen=True)
class ProductDefault:
    rule: str  # the rule of rankings when a request names none
    v1_v2_rule: str  # the rule of the v1-vs-v2 verdict when a request names none
    centering: str  # GLUE's centring when a protocol names none
    reason: str
    study: str | None


def product_default() -> ProductDefault:
    """The default recorded in the evidence file (``EVIDENCE_PATH``, read once per path)."""
    return _read(EVIDENCE_PATH)


@cache
def _read(path: Path) -> ProductDefault:
    return pick_default(json.loads(path.read_text()))


def pick_default(doc: Mapping[str, Any]) -> ProductDefault:
    """The product's default from an evidence document, by its version (module docstring)."""
    if int(doc.get("version", 1)) >= 3:
        decision = plan3_decision(doc["rule_inputs"], doc["rules"])
        rule = PRODUCT_RULES[decision["default"]]
        study = doc.get("study", doc.get("plan_commit"))
        return ProductDefault(rule, rule, decision["centering"], plan3_reason(decision), study)
    chosen = doc.get("default")
    if chosen is None:
        return ProductDefault("geometry", "geometry", "none", _PAPERS_CHOICE, doc.get("study"))
    return ProductDefault(
        rule=chosen["rule"],
        v1_v2_rule=chosen.get("v1_v2_rule", chosen["rule"]),
        centering=chosen["centering"],
        reason=chosen["reason"],
        study=doc.get("study"),
    )


def default_centering() -> str:
    return product_default().centering


# Study 3's rule (docs/study/PLAN-3.md, "What changes the product's default")

MARGIN_ID = 0.10
MARGIN_BASELINE = 0.05
CANDIDATES = {"psi_eff": "T1", "numerical_rank": "T2"}  # marker → its primary test against ID accuracy
BASELINES = {
    "id_accuracy": "all",
    "more_v2_parts": "decoupled",
    "always_v2": "v1v2",
    "numerical_rank": "all",
    "longer_schedule": "longer_decides",
}
PRODUCT_RULES = {"psi_eff": "utilization", "numerical_rank": "numerical_rank", "id_accuracy": "id_accuracy"}


def plan3_accuracy(inputs: Mapping[str, Any], rule: str, pair_set: str, task: str | None) -> float | None:
    """acc of ``rule`` on ``pair_set`` for ``task`` (None: pooled) from ``inputs["tallies"]``
    (``[correct, pairs]`` per rule, pair set and task or ``"pooled"``); None without pairs."""
    found = inputs["tallies"].get(rule, {}).get(pair_set, {}).get(task or "pooled")
    if not found or not found[1]:
        return None
    return int(found[0]) / int(found[1])


def plan3_qualifies(inputs: Mapping[str, Any], marker: str) -> dict[str, Any]:
    """Conditions (a)–(c) for ``marker`` with the numbers behind each."""
    per_task: dict[str, float | None] = {}
    for task in inputs["tasks"]:
        m, base = (
            plan3_accuracy(inputs, marker, "all", task),
            plan3_accuracy(inputs, "id_accuracy", "all", task),
        )
        per_task[task] = None if m is None or base is None else m - base
    margins: dict[str, float | None] = {}
    for baseline, pair_set in BASELINES.items():
        if baseline == marker:
            continue
        m, base = (
            plan3_accuracy(inputs, marker, pair_set, None),
            plan3_accuracy(inputs, baseline, pair_set, None),
        )
        margins[baseline] = None if m is None or base is None else m - base
    a = bool(inputs["significant"][CANDIDATES[marker]])
    b = all(d is not None and d >= MARGIN_ID - 1e-12 for d in per_task.values())
    c = all(d >= MARGIN_BASELINE - 1e-12 for d in margins.values() if d is not None)
    return {"a_holm": a, "b_vs_id_per_task": per_task, "b": b, "c_margins": margins, "c": c,
            "qualifies": a and b and c}  # fmt: skip


def plan3_decision(inputs: Mapping[str, Any], accuracy: Mapping[str, Any]) -> dict[str, Any]:
    """The default rule for rankings and the v1/v2 verdict, and what the answer quotes as confidence.

    ``inputs``: ``tasks``, ``significant`` (T1, T2 after Holm), ``tallies`` and ``frozen_calibrated``;
    ``accuracy``: every rule's accuracy per task and pooled with its interval (the evidence's ``rules``)."""
    checks = {m: plan3_qualifies(inputs, m) for m in CANDIDATES}
    passing = [m for m, c in checks.items() if c["qualifies"]]
    confidence = "frozen_rule_probability" if inputs["frozen_calibrated"] else "win_rate"
    if passing:
        pooled = {m: plan3_accuracy(inputs, m, "all", None) or 0.0 for m in passing}
        base = plan3_accuracy(inputs, "id_accuracy", "all", None) or 0.0
        default = max(passing, key=lambda m: pooled[m] - base)
        return {
            "checks": checks,
            "default": default,
            "centering": "none",
            "confidence": confidence,
            "win_rate": accuracy[default]["pooled"],
        }
    tasks: Sequence[str] = inputs["tasks"]
    always = accuracy.get("always_v2", {})
    v2_prior = all(always.get(t, {}).get("ci95") is not None and always[t]["ci95"][0] > 0.5 for t in tasks)
    scored = {r: a["pooled"] for r, a in accuracy.items() if a["pooled"]["accuracy"] is not None}
    best = max(scored, key=lambda r: scored[r]["accuracy"]) if scored else None
    return {
        "checks": checks,
        "default": "id_accuracy",
        "centering": "none",
        "nothing_predicts": True,
        "rankings": {"rule": "id_accuracy", "win_rate": accuracy.get("id_accuracy", {}).get("pooled")},
        "v1v2": (
            {"answer": "v2 on the recipe prior (not on geometry)", "win_rate": always.get("pooled")}
            if v2_prior
            else {
                "answer": "no rule beats a coin on our evidence",
                "exploratory_best": best,
                "win_rate": scored.get(best) if best else None,
            }
        ),
        "confidence": confidence,
    }


def plan3_reason(decision: Mapping[str, Any]) -> str:
    """Why the default is what it is, in words, with the win rate the answer quotes."""

    def picked(rule: str, found: Mapping[str, Any] | None) -> str:
        if not found or found.get("accuracy") is None:
            return f"{rule} had no eligible recipe pair to pick from"
        ci = found.get("ci95")
        interval = f" [{ci[0]:.2f}, {ci[1]:.2f}]" if ci else ""
        return (
            f"{rule} picked the better-transferring recipe in {found['correct']} of {found['pairs']} "
            f"pairs, {found['accuracy']:.2f}{interval}"
        )

    if not decision.get("nothing_predicts"):
        return f"study 3 (PLAN-3.md): {decision['default']} qualifies by the plan's rule; " + picked(
            decision["default"], decision["win_rate"]
        )
    return (
        "study 3 (PLAN-3.md): no marker qualifies, so no rule is confirmed; "
        + picked("ID accuracy", decision["rankings"]["win_rate"])
        + f"; v1 or v2: {decision['v1v2']['answer']}"
    )
