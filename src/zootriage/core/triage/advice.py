"""Advice per question: every candidate rule's answer beside its own evidence, and the one followed.

A v1-vs-v2 verdict or a ranking answers with one rule, which may not decide (a missing marker, a
difference within the noise). The advice never stops there: it applies every candidate rule — ID
accuracy (measured, or the weights' published acc@1, ``core.triage.published``), Ψ_eff
(``utilization``), D_eff (``dimension``), the numerical rank and the geometry rule (D_eff and Ψ_eff
both higher), plus the rule the request named — and shows each one's pick (or why it has none)
beside its measured win rate, interval and number of pairs from the evidence file
(``core/evidence.json``) for the outcome that answers this question.

The rule followed:
1. the primary rule (the one the request named, else the product's default, which the plan's rule
   chose, ``core.defaults``) when it decides;
2. else the best-evidenced rule that decides, among those whose measured win rate is above a coin's
   (1/2: a rule that picks the better model less often than a coin flip, or has no evidence, is never
   followed in the primary rule's place): a validated rule (below) before one that is not, then the
   highest lower bound of the win-rate interval, then the highest win rate;
3. else nobody: the answer is then the primary rule's own, "no difference beyond the noise" where
   it compared the candidates and found them within it, "cannot decide" where it could not compare
   them (a missing marker, a degenerate regime, no noise estimate, a candidate it cannot rank).

A pick is *validated* when the evidence file has the followed rule on this question, the study did
not mark it exploratory, and the whole win-rate interval lies above 1/2 (it picks the better model
more often than a coin would); any other pick is labelled exploratory. Its confidence is the
followed rule's measured win rate with its interval.

With the confirmatory study's evidence (version 3, ``core.evidence``) both questions read its primary
outcome (``probe20`` pooled over tasks); a win rate there is correct picks / eligible pairs, an
undecided pick counting as not correct, with the study's tally beside it, and only a marker that the
plan's rule confirms is validated (the fallback to ID accuracy is exploratory).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

from zootriage.core.evidence import RuleEvidence, evidence_for, load_evidence, rule_key
from zootriage.core.noise import NO_NOISE_ESTIMATE
from zootriage.core.triage.ranking import rule_pick
from zootriage.core.triage.records import ID_ACCURACY, MarkerRecord, Rule, make_rule
from zootriage.core.triage.verdict import verdict

Question = Literal["v1_v2", "ranking"]
# ID accuracy, Ψ_eff, D_eff, numerical rank, the geometry rule (issue 24, item 2).
CANDIDATE_RULES = (ID_ACCURACY, "utilization", "dimension", "numerical_rank", "geometry")
NO_DIFFERENCE = "no difference beyond the noise"
CANNOT_DECIDE = "cannot decide"
# Reasons (``verdict``, ``rank``) that mean the rule could not be applied, rather than that it found
# no difference beyond the noise.
_NOT_APPLIED = (
    "missing marker", "not decidable", "no candidate can be ranked", "cannot rank", "nothing to rank",
    NO_NOISE_ESTIMATE,
)
COIN = 0.5


@dataclass(frozen=True)
class RuleAnswer:
    """One rule's answer: ``pick`` (a side or a candidate; None: ``reason`` says why not) and the
    evidence for it on this question (None: the evidence file has none)."""

    rule: str
    evidence_key: str
    pick: str | None
    reason: str
    evidence: RuleEvidence | None
    exploratory_in_study: bool
    primary: bool
    source: str | None = None  # where a value came from when not measured (published acc@1)

    @property
    def answer(self) -> str:
        """The pick; else "cannot decide" (a marker missing, from a degenerate regime or without a
        noise estimate) or "no difference beyond the noise"."""
        if self.pick is not None:
            return self.pick
        return CANNOT_DECIDE if any(why in self.reason for why in _NOT_APPLIED) else NO_DIFFERENCE

    @property
    def validated(self) -> bool:
        """Evidence on this question, a pre-registered test, and a win-rate interval above 1/2."""
        e = self.evidence
        return e is not None and not self.exploratory_in_study and e.win_rate_ci[0] > COIN

    def evidence_text(self) -> str:
        e = self.evidence
        if e is None:
            return "no evidence"
        lo, hi = e.win_rate_ci
        text = f"win rate {e.win_rate:.0%} [95% CI {lo:.0%}–{hi:.0%}] over {e.pairs} pairs"
        return f"{text} ({e.tally_text()})" if e.tally is not None else text


@dataclass(frozen=True)
class Advice:
    """What the product answers, which rule it followed and why, and how sure it is."""

    question: Question
    outcome: str
    study: str
    answers: tuple[RuleAnswer, ...]
    pick: str | None
    answer: str  # the pick, else the followed rule's "no difference beyond the noise" or "cannot decide"
    followed: str
    why: str
    exploratory: bool
    confidence: float | None
    confidence_ci: tuple[float, float] | None
    confidence_pairs: int | None

    def summary(self) -> str:
        """One line: the answer, the rule followed, its confidence and whether it is exploratory."""
        answer = self.answer
        # with no pick, the rule's win rate is what its picks are worth, not this answer's confidence
        what = "confidence" if self.pick is not None else "no pick; confidence of the rule where it picks"
        if self.confidence is None or self.confidence_ci is None:
            sure = f"{what}: unknown, no evidence for this rule"
        else:
            lo, hi = self.confidence_ci
            sure = (
                f"{what} {self.confidence:.0%} [95% CI {lo:.0%}–{hi:.0%}, {self.confidence_pairs} pairs "
                f"of study {self.study}, {self.outcome}]"
            )
        label = "exploratory" if self.exploratory else "validated"
        return f"{answer} (rule {self.followed}; {sure}; {label})"


def question_outcome(question: Question) -> str:
    """The evidence outcome that answers ``question``: the file's ``questions`` entry for it where
    present, else its primary outcome (the study's pairs are models of one architecture trained with
    different recipes, which is what both questions compare)."""
    doc = load_evidence()
    return str((doc.get("questions") or {}).get(question) or doc["primary_outcome"])


def _exploratory_in_study(key: str, outcome: str) -> bool:
    entry = load_evidence()["outcomes"].get(outcome, {}).get("rules", {}).get(key) or {}
    return bool(entry.get("exploratory", False))


def _rules(primary: Rule) -> list[Rule]:
    rules = [primary]
    rules += [make_rule(name) for name in CANDIDATE_RULES if name != primary.name]
    return rules


def _strength(answer: RuleAnswer) -> tuple[bool, bool, float, float]:
    e = answer.evidence
    return (False, False, 0.0, 0.0) if e is None else (True, answer.validated, e.win_rate_ci[0], e.win_rate)


def _advise(
    question: Question,
    primary: Rule,
    variant: tuple[str, str],
    decide: Callable[[Rule], tuple[str | None, str]],
    published: str | None,
) -> Advice:
    outcome = question_outcome(question)
    answers = []
    for rule in _rules(primary):
        pick, reason = decide(rule)
        key = rule_key(rule.name, *variant)
        answers.append(
            RuleAnswer(
                rule=rule.name,
                evidence_key=key,
                pick=pick,
                reason=reason,
                evidence=evidence_for(key, outcome),
                exploratory_in_study=_exploratory_in_study(key, outcome),
                primary=rule.name == primary.name,
                source=published if ID_ACCURACY in rule.markers else None,
            )
        )
    first = answers[0]
    deciding = [a for a in answers if a.pick is not None and a.evidence and a.evidence.win_rate > COIN]
    if first.pick is not None:
        followed = first
        why = (
            f"the product's default ({primary.default_reason})"
            if primary.default_reason is not None
            else "the rule the request named"
        )
    elif deciding:
        followed = max(deciding, key=_strength)
        why = (
            f"{first.rule} cannot decide ({first.reason}); {followed.rule} is the best-evidenced rule that "
            f"decides ({followed.evidence_text()})"
        )
    else:
        followed = first
        others = [a.rule for a in answers if a.pick is not None]
        if others:
            why = (
                f"{first.rule} cannot decide ({first.reason}); the rules that do ({', '.join(others)}) have "
                "no evidence of picking better than a coin flip"
            )
        elif first.answer == CANNOT_DECIDE:
            why = f"no candidate rule separates them ({first.rule}: {first.reason})"
        else:
            why = f"no candidate rule separates them beyond the noise ({first.rule}: {first.reason})"
    e = followed.evidence
    return Advice(
        question=question,
        outcome=outcome,
        study=str(load_evidence()["study"]),
        answers=tuple(answers),
        pick=followed.pick,
        answer=followed.answer,
        followed=followed.rule,
        why=why,
        exploratory=not followed.validated,
        confidence=e.win_rate if e else None,
        confidence_ci=e.win_rate_ci if e else None,
        confidence_pairs=e.pairs if e else None,
    )


def v1_v2_advice(
    v1: MarkerRecord, v2: MarkerRecord, primary: Rule, variant: tuple[str, str], published: str | None = None
) -> Advice:
    """Every candidate rule's v1-vs-v2 verdict (``core.triage.verdict``) and the one followed;
    ``variant`` is the GLUE (dichotomy, centering) the markers were computed under; ``published`` the
    source of an ID accuracy taken from the weights' metadata."""

    def decide(rule: Rule) -> tuple[str | None, str]:
        found = verdict(v1, v2, rule)
        return (None, found.reason) if found.decision == "undecided" else (found.decision, found.reason)

    return _advise("v1_v2", primary, variant, decide, published)


def ranking_advice(
    records: Sequence[MarkerRecord], primary: Rule, variant: tuple[str, str], published: str | None = None
) -> Advice:
    """Every candidate rule's pick among ``records`` (``core.triage.ranking.rule_pick``, as ``rank``
    picks) and the one followed."""
    return _advise("ranking", primary, variant, lambda rule: rule_pick(records, rule), published)
