"""Rankings: any set of candidates ordered by the rule (fronts of "better beyond the noise"), beside
the ID-accuracy and LogME orders under the same test and the pairs where they disagree."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from zootriage.core.triage.records import (
    GEOMETRY_RULE,
    ID_ACCURACY,
    LOGME,
    MarkerRecord,
    Rule,
    make_rule,
)
from zootriage.core.triage.verdict import verdict


@dataclass(frozen=True)
class RankedEntry:
    """One candidate's place under the rule: ``rank`` 1 = best, equal ranks are ties (numbered like
    sports results: 1, 1, 3); ``front`` its front of the "better beyond the noise" relation; None
    where a marker of the rule is missing or may not decide."""

    name: str
    rank: int | None
    front: int | None
    id_accuracy_rank: int | None
    logme_rank: int | None
    disagrees_with_id_accuracy: bool
    disagrees_with_logme: bool
    missing: tuple[str, ...]
    unrankable: str | None


@dataclass(frozen=True)
class Ranking:
    """Entries in rule order (unrankable candidates last), the picks, and the pairs that ID accuracy or
    LogME decide the other way round from the rule, beyond the noise (each pair as (the rule's
    better, its worse)). ``reason`` says why the rule picks nobody."""

    entries: tuple[RankedEntry, ...]
    pick: str | None
    reason: str
    id_accuracy_pick: str | None
    logme_pick: str | None
    id_accuracy_discordant: tuple[tuple[str, str], ...]
    logme_discordant: tuple[tuple[str, str], ...]
    rule: Rule = GEOMETRY_RULE

    @property
    def picks_agree(self) -> bool | None:
        """Whether the rule and ID accuracy pick the same candidate (None when either cannot pick)."""
        if self.pick is None or self.id_accuracy_pick is None:
            return None
        return self.pick == self.id_accuracy_pick


def fronts_of(dominates: Sequence[Sequence[bool]]) -> list[int]:
    """Front index (0 = undominated) from a boolean relation ``dominates[a][b]`` (a beats b).

    Front 0 is the candidates nobody beats; front f+1 those beaten only by candidates of fronts <= f.
    The relation has no cycles: a beats b only when a's value of the rule's first marker is strictly
    preferred to b's, and values are totally ordered, so every step peels at least one candidate.
    """
    fronts = [-1] * len(dominates)
    remaining = set(range(len(dominates)))
    front = 0
    while remaining:
        current = {b for b in remaining if not any(dominates[a][b] for a in remaining)}
        for b in current:
            fronts[b] = front
        remaining -= current
        front += 1
    return fronts


def _competition_ranks(keys: Sequence[Any]) -> list[int]:
    """Ranks for keys sorted best first: equal keys share the rank of the first of them (1, 1, 3)."""
    ranks: list[int] = []
    for i, key in enumerate(keys):
        ranks.append(ranks[-1] if i and key == keys[i - 1] else i + 1)
    return ranks


def _unrankable(record: MarkerRecord, rule: Rule) -> str | None:
    missing = [m for m in rule.markers if record.value(m) is None]
    if missing:
        return f"missing marker(s): {', '.join(missing)}"
    bad = [f"{m}: {record.undecidable[m]}" for m in rule.markers if m in record.undecidable]
    return f"not decidable ({'; '.join(bad)})" if bad else None


@dataclass(frozen=True)
class _Order:
    """``rule``'s relation on the candidates: ``better`` holds (a, b) when a beats b beyond the noise,
    ``ranks`` the competition rank of each rankable candidate's front, ``undecided`` why each pair of
    rankable candidates is not separated, ``why_not`` why a candidate cannot be ranked (None: it can)."""

    rule: Rule
    ranks: dict[str, int]
    fronts: dict[str, int]
    better: set[tuple[str, str]]
    undecided: dict[tuple[str, str], str]
    why_not: dict[str, str | None]


def _order(records: Sequence[MarkerRecord], rule: Rule) -> _Order:
    """a beats b when ``verdict(b, a, rule)`` decides for a; candidates are peeled into fronts of that
    relation (``fronts_of``) and one front shares one rank."""
    names = [r.name for r in records]
    if len(set(names)) != len(names):
        raise ValueError("candidate names must be unique")
    why_not = {r.name: _unrankable(r, rule) for r in records}
    placed = sorted((r for r in records if why_not[r.name] is None), key=lambda r: r.name)
    better: set[tuple[str, str]] = set()
    undecided: dict[tuple[str, str], str] = {}
    for i, a in enumerate(placed):
        for b in placed[i + 1 :]:
            result = verdict(a, b, rule)
            if result.decision == "v1":
                better.add((a.name, b.name))
            elif result.decision == "v2":
                better.add((b.name, a.name))
            else:
                undecided[(a.name, b.name)] = result.reason
    index = {r.name: i for i, r in enumerate(placed)}
    dominates = [[False] * len(placed) for _ in placed]
    for winner, loser in better:
        dominates[index[winner]][index[loser]] = True
    peeled = fronts_of(dominates)
    fronts = {name: peeled[i] for name, i in index.items()}
    order = sorted(fronts, key=lambda n: (fronts[n], n))
    ranks = dict(zip(order, _competition_ranks([fronts[n] for n in order]), strict=True))
    return _Order(rule, ranks, fronts, better, undecided, why_not)


def _discordant(better: set[tuple[str, str]], other: _Order) -> list[tuple[str, str]]:
    """Pairs the rule decides one way and ``other``'s rule decides the other way, beyond the noise."""
    return sorted((a, b) for a, b in better if (b, a) in other.better)


def _pick(order: _Order) -> tuple[str | None, str]:
    """The candidate the order's rule picks and why, or None and why not: a pick needs every candidate ranked
    (one that cannot be ranked might be the best) and one of them alone in the first front."""
    unrankable = {name: why for name, why in order.why_not.items() if why is not None}
    if not order.why_not:
        return None, "undecided: no candidates"
    if unrankable and not order.ranks:
        return None, "undecided: no candidate can be ranked by this rule"
    if unrankable:
        listed = "; ".join(f"{name}: {why}" for name, why in sorted(unrankable.items()))
        return None, f"undecided: a candidate the rule cannot rank might be the best ({listed})"
    if len(order.ranks) < 2:
        return None, "undecided: one candidate, nothing to rank it against"
    first = sorted(n for n, r in order.ranks.items() if r == 1)
    if len(first) == 1:
        return first[0], f"{first[0]}: {order.rule.describe()}, against every other candidate"
    detail = [f"{a} vs {b}: {why}" for (a, b), why in order.undecided.items() if a in first and b in first]
    return None, f"undecided: {', '.join(first)} share the first place ({'; '.join(detail)})"


def rule_pick(records: Sequence[MarkerRecord], rule: Rule) -> tuple[str | None, str]:
    """The candidate ``rule`` picks among ``records`` and why (or None and why not): ``rank``'s pick
    without the ID-accuracy and LogME orders beside it."""
    return _pick(_order(records, rule))


def rank(records: Sequence[MarkerRecord], rule: Rule = GEOMETRY_RULE) -> Ranking:
    """Order candidates by ``rule`` beyond the noise, beside the orders ID accuracy and LogME give
    under the same test (``_order``): candidates the noise cannot separate tie. A candidate missing a
    marker of the rule, or whose marker comes from a degenerate GLUE regime, goes last with
    ``rank=None``. The rule picks a candidate only when every candidate is ranked and it is alone in
    the first front (``_pick``); otherwise ``reason`` says why not. The ID-accuracy and LogME picks
    follow the same condition, and a pair counts as discordant only when both rules decide it,
    opposite ways.
    """
    order = _order(records, rule)
    by_accuracy, by_logme = _order(records, make_rule(ID_ACCURACY)), _order(records, make_rule(LOGME))
    acc_pairs = _discordant(order.better, by_accuracy)
    logme_pairs = _discordant(order.better, by_logme)
    by_name = {r.name: r for r in records}
    ranked = sorted(order.ranks, key=lambda n: (order.ranks[n], n))
    entries = [
        RankedEntry(
            name=name,
            rank=order.ranks.get(name),
            front=order.fronts[name] + 1 if name in order.fronts else None,
            id_accuracy_rank=by_accuracy.ranks.get(name),
            logme_rank=by_logme.ranks.get(name),
            disagrees_with_id_accuracy=any(name in pair for pair in acc_pairs),
            disagrees_with_logme=any(name in pair for pair in logme_pairs),
            missing=tuple(m for m in (*rule.markers, ID_ACCURACY, LOGME) if by_name[name].value(m) is None),
            unrankable=order.why_not[name],
        )
        for name in [*ranked, *sorted(n for n in by_name if n not in order.ranks)]
    ]
    pick, reason = _pick(order)
    return Ranking(
        entries=tuple(entries),
        pick=pick,
        reason=reason,
        id_accuracy_pick=_pick(by_accuracy)[0],
        logme_pick=_pick(by_logme)[0],
        id_accuracy_discordant=tuple(acc_pairs),
        logme_discordant=tuple(logme_pairs),
        rule=rule,
    )
