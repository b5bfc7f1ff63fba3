"""Triage rules over stored marker records: rankings, the v1-vs-v2 verdict and CI-gate rules.

One module each: ``records`` (the marker records and the rules that say what "better" means),
``verdict`` (v1 vs v2), ``ranking`` (any set of candidates) and ``gates`` (CI-gate rules); this
package re-exports their public names.

Pure functions, shared by the API, the command line and the back-test, so that a recommendation
means the same thing wherever it is shown. Inputs are ``MarkerRecord`` objects built from stored
runs; nothing here reads a database or a model.

A rule names what "better" means (``make_rule``): ``geometry``, the paper's selection rule (among
weights of one architecture prefer higher D_eff, marker ``dimension``, AND higher Ψ_eff, marker
``utilization``), or one marker with a preferred direction (``id_accuracy``, ``logme``, ...). One
candidate is better than another only when every marker of the rule prefers it beyond the noise
(``core.noise``: a two-sided Welch test on the repeat means at 95%); a marker without a noise
estimate or from a degenerate GLUE regime never decides. A CI gate is a non-inferiority test of the
candidate against the baseline within each rule's margin (``gates``). Where the rule does not decide,
this module says why rather than guessing.
"""

from __future__ import annotations

from zootriage.core.triage.gates import (
    ALPHA,
    GATE_KINDS,
    GATE_TEST,
    GateKind,
    GateResult,
    GateRule,
    GateStatus,
    RuleError,
    RuleOutcome,
    UnknownMetric,
    evaluate_gate,
    parse_rule,
)
from zootriage.core.triage.ranking import (
    RankedEntry,
    Ranking,
    fronts_of,
    rank,
)
from zootriage.core.triage.records import (
    DIMENSION,
    GEOMETRY,
    GEOMETRY_RULE,
    ID_ACCURACY,
    LOGME,
    UTILIZATION,
    MarkerRecord,
    Rule,
    UnknownRule,
    make_rule,
)
from zootriage.core.triage.verdict import (
    Decision,
    MarkerComparison,
    Side,
    Verdict,
    accuracy_pick,
    verdict,
)

__all__ = [
    "ALPHA",
    "DIMENSION",
    "GATE_KINDS",
    "GATE_TEST",
    "GEOMETRY",
    "GEOMETRY_RULE",
    "ID_ACCURACY",
    "LOGME",
    "UTILIZATION",
    "Decision",
    "GateKind",
    "GateResult",
    "GateRule",
    "GateStatus",
    "MarkerComparison",
    "MarkerRecord",
    "RankedEntry",
    "Ranking",
    "Rule",
    "RuleError",
    "RuleOutcome",
    "Side",
    "UnknownMetric",
    "UnknownRule",
    "Verdict",
    "accuracy_pick",
    "evaluate_gate",
    "fronts_of",
    "make_rule",
    "parse_rule",
    "rank",
    "verdict",
]
