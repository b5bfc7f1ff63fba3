"""Rankings: any set of candidates ordered by the rule (fronts of "better beyond the noise"), beside
the ID-accuracy and LogME orders and the pairs where they disagree."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from zootriage.core.triage.records import (
    GEOMETRY_RULE,
    ID_ACCURACY,
    LOGME,
    MarkerRecord,
    Rule,
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
    LogME order the other way round from the rule (each pair as (the rule's better, its worse)).
    ``reason`` says why the rule picks nobody."""

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


def _order_by(records: Sequence[MarkerRecord], marker: str) -> dict[str, int]:
    """Competition ranks of the candidates that have ``marker``, higher first."""
    present = sorted(
        (r for r in records if r.value(marker) is not None), key=lambda r: (-(r.value(marker) or 0.0), r.name)
    )
    ranks = _competition_ranks([r.value(marker) for r in present])
    return {r.name: rank for r, rank in zip(present, ranks, strict=True)}


def _discordant(better: set[tuple[str, str]], other: Mapping[str, int]) -> list[tuple[str, str]]:
    """Pairs the rule decides one way and ``other`` strictly orders the other way."""
    return sorted((a, b) for a, b in better if a in other and b in other and other[a] > other[b])


def _unrankable(record: MarkerRecord, rule: Rule) -> str | None:
    missing = [m for m in rule.markers if record.value(m) is None]
    if missing:
        return f"missing marker(s): {', '.join(missing)}"
    bad = [f"{m}: {record.undecidable[m]}" for m in rule.markers if m in record.undecidable]
    return f"not decidable ({'; '.join(bad)})" if bad else None


def rank(records: Sequence[MarkerRecord], rule: Rule = GEOMETRY_RULE) -> Ranking:
    """Order candidates by ``rule`` beyond the noise, beside the orders ID accuracy and LogME give.

    a beats b when ``verdict(b, a, rule)`` decides for a (every marker of the rule prefers a beyond
    the noise). Candidates are peeled into fronts of that relation (``fronts_of``); one front shares
    one rank: candidates the noise cannot separate tie. A candidate missing a marker of the rule, or
    whose marker comes from a degenerate GLUE regime, goes last with ``rank=None``. The rule picks a
    candidate only when it is alone in the first front; otherwise ``reason`` says why not.
    """
    names = [r.name for r in records]
    if len(set(names)) != len(names):
        raise ValueError("candidate names must be unique")
    why_not = {r.name: _unrankable(r, rule) for r in records}
    placed = sorted((r for r in records if why_not[r.name] is None), key=lambda r: r.name)
    better: set[tuple[str, str]] = set()
    undecided_pairs: dict[tuple[str, str], str] = {}
    for i, a in enumerate(placed):
        for b in placed[i + 1 :]:
            result = verdict(a, b, rule)
            if result.decision == "v1":
                better.add((a.name, b.name))
            elif result.decision == "v2":
                better.add((b.name, a.name))
            else:
                undecided_pairs[(a.name, b.name)] = result.reason
    index = {r.name: i for i, r in enumerate(placed)}
    dominates = [[False] * len(placed) for _ in placed]
    for winner, loser in better:
        dominates[index[winner]][index[loser]] = True
    fronts = fronts_of(dominates)
    order = sorted(index, key=lambda n: (fronts[index[n]], n))
    ranks = dict(zip(order, _competition_ranks([int(fronts[index[n]]) for n in order]), strict=True))
    by_accuracy = _order_by(records, ID_ACCURACY)
    by_logme = _order_by(records, LOGME)
    acc_pairs = _discordant(better, by_accuracy)
    logme_pairs = _discordant(better, by_logme)
    by_name = {r.name: r for r in records}
    entries = [
        RankedEntry(
            name=name,
            rank=ranks.get(name),
            front=int(fronts[index[name]]) + 1 if name in index else None,
            id_accuracy_rank=by_accuracy.get(name),
            logme_rank=by_logme.get(name),
            disagrees_with_id_accuracy=any(name in pair for pair in acc_pairs),
            disagrees_with_logme=any(name in pair for pair in logme_pairs),
            missing=tuple(m for m in (*rule.markers, ID_ACCURACY, LOGME) if by_name[name].value(m) is None),
            unrankable=why_not[name],
        )
        for name in [*order, *sorted(n for n in names if n not in index)]
    ]
    pick = _sole_best(ranks)
    if pick is not None:
        reason = f"{pick}: {rule.describe()}, against every other rankable candidate"
    elif not placed:
        reason = "undecided: no candidate can be ranked by this rule"
    else:
        first = [n for n, r in ranks.items() if r == 1]
        detail = [
            f"{a} vs {b}: {why}" for (a, b), why in undecided_pairs.items() if a in first and b in first
        ]
        reason = f"undecided: {', '.join(first)} share the first place ({'; '.join(detail) or 'alone'})"
    return Ranking(
        entries=tuple(entries),
        pick=pick,
        reason=reason,
        id_accuracy_pick=_sole_best(by_accuracy),
        logme_pick=_sole_best(by_logme),
        id_accuracy_discordant=tuple(acc_pairs),
        logme_discordant=tuple(logme_pairs),
        rule=rule,
    )


def _sole_best(ranks: dict[str, int]) -> str | None:
    """The one candidate ranked first; None when nobody is ranked or the first place is shared."""
    first = [name for name, r in ranks.items() if r == 1]
    return first[0] if len(first) == 1 else None
