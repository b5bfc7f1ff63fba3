"""The plan's rule that chooses the product's default, applied mechanically to the primary results.

1. A centring *qualifies* when H3 for task A is significant after Holm and task B's Δ is not negative
   with 95 % confidence (the upper bound of its interval is ≥ 0).
2. If any qualifies, the default is the geometry rule under the qualifying centring with the larger
   mean Δ over tasks A and B (ties: the order of the centrings in the config, "none" first).
3. Otherwise the default is ID accuracy, geometry shown beside it as "not confirmed by our back-test";
   the default centring stays "none" unless H1 and H2 are both significant for one centring only.
   The plan does not say for which task; here "significant for a centring" means significant after
   Holm in every task (A and B), the stricter reading.
4. The v1/v2 verdict follows the same choice; H4 is reported beside the paper's 73 % vs 37 %.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from zootriage.core.backtest.analysis import TASKS

PAPER_H4 = (0.73, 0.37)


def _qualifies(primary: dict[str, dict[str, Any]], centering: str) -> tuple[bool, str]:
    a, b = primary[f"H3/A/{centering}"], primary[f"H3/B/{centering}"]
    if not a["significant"]:
        return False, f"H3 task A is not significant after Holm (p_holm = {a['p_holm']:.3g})"
    if b["ci"] is None or b["ci"][1] < 0:
        return False, "H3 task B's Δ is negative with 95 % confidence (or has no interval)"
    return True, "H3 task A significant after Holm and task B's Δ interval reaches 0 or above"


def _mean_delta(primary: dict[str, dict[str, Any]], centering: str) -> float:
    deltas = [primary[f"H3/{t}/{centering}"]["delta"] for t in TASKS]
    return sum(d for d in deltas if d is not None) / len(deltas)


def decide(primary: dict[str, dict[str, Any]], centerings: Sequence[str]) -> dict[str, Any]:
    """``{"rule", "centering", "v1_v2_rule", "qualifying", "reasons", "reason"}``."""
    reasons = {c: _qualifies(primary, c) for c in centerings}
    qualifying = [c for c in centerings if reasons[c][0]]
    per_variant = {c: reasons[c][1] for c in centerings}
    if qualifying:
        best = max(qualifying, key=lambda c: (_mean_delta(primary, c), -list(centerings).index(c)))
        reason = (
            f"centring {best!r} qualifies ({per_variant[best]}) with mean Δ over tasks A and B of "
            f"{_mean_delta(primary, best):+.3f}"
            + (f"; qualifying: {qualifying}" if len(qualifying) > 1 else "")
        )
        return {
            "rule": "geometry",
            "centering": best,
            "v1_v2_rule": "geometry",
            "qualifying": qualifying,
            "reasons": per_variant,
            "reason": reason,
        }
    markers_confirmed = [
        c
        for c in centerings
        if all(primary[f"{h}/{t}/{c}"]["significant"] for h in ("H1", "H2") for t in TASKS)
    ]
    centering = markers_confirmed[0] if len(markers_confirmed) == 1 else "none"
    reason = (
        "no centring qualifies; the default rule is ID accuracy, "
        "geometry shown as not confirmed by our back-test"
    )
    if len(markers_confirmed) == 1:
        reason += (
            f"; H1 and H2 are significant for {centering!r} only, so it becomes the markers' default centring"
        )
    else:
        reason += "; the default centring stays 'none'"
    return {
        "rule": "id_accuracy",
        "centering": centering,
        "v1_v2_rule": "id_accuracy",
        "qualifying": [],
        "reasons": per_variant,
        "reason": reason,
    }
