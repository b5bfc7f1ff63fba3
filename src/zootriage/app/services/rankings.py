"""Rankings: any set of candidates ordered by a rule on one dataset sample (queued until every run is
stored)."""

from __future__ import annotations

from collections.abc import Mapping

from sqlalchemy.orm import Session

from zootriage.app.labels import reference_of
from zootriage.app.schemas.attributes import Attributes
from zootriage.app.schemas.triage import (
    Pending,
    RankedOut,
    RankingOut,
    RankingRequest,
)
from zootriage.app.services.errors import ServiceError
from zootriage.app.services.triage import (
    Gathered,
    ScoringPlan,
    Wanted,
    advice_out,
    display_labels,
    gather,
    published_acc1,
    rule_used,
    triage_rule,
    wanted,
    with_published_accuracy,
)
from zootriage.app.settings import Settings
from zootriage.core.protocol import Protocol
from zootriage.core.triage import (
    Rule,
    rank,
)
from zootriage.core.triage.advice import ranking_advice


def ranking(
    session: Session, settings: Settings, body: RankingRequest, project_id: int | None = None
) -> Pending | RankingOut:
    rule = triage_rule(body.rule)
    models: dict[str, Wanted] = {}
    for candidate in body.candidates:
        want = wanted(candidate)
        key = want.model.model_dump_json()
        if key in models:
            raise ServiceError(
                422, "duplicate_candidates", f"candidate {reference_of(want.model)} is listed more than once"
            )
        models[key] = want
    scoring = ScoringPlan(body.dataset, body.sampling, body.protocol)
    gathered = gather(session, settings, models, scoring, project_id)  # None: the default project
    if (pending := gathered.pending()) is not None:
        return pending
    return ranked(session, rule, scoring.protocol, models, gathered)


def ranked(
    session: Session, rule: Rule, protocol: Protocol, models: Mapping[str, Wanted], gathered: Gathered
) -> RankingOut:
    """The stored runs of ``models`` (every key has one in ``gathered``) ranked by ``rule``
    (``core.triage.rank``: candidates the noise cannot separate share a rank), beside every candidate
    rule's pick (``core.triage.advice``). Where no candidate's ID accuracy was measured (ImageNet
    weights on another label space), the weights' published acc@1 stands in for it."""
    labels = display_labels(session, {key: want.name for key, want in models.items()}, gathered.runs)
    keys = {text: key for key, text in labels.items()}
    records, source = with_published_accuracy(
        [gathered.record(key, labels[key]) for key in models],
        {labels[key]: published_acc1(gathered.runs[key]) for key in models},
    )
    result = rank(records, rule)
    advice = ranking_advice(records, rule, (protocol.dichotomy, protocol.centering), source)
    entries = []
    for e in result.entries:
        scored = gathered.scored(keys[e.name], e.name, models[keys[e.name]].model)
        entries.append(RankedOut.model_validate(Attributes(e, **scored), from_attributes=True))
    used = rule_used(rule, protocol)
    return RankingOut.model_validate(
        Attributes(result, entries=entries, rule=used, advice=advice_out(advice)), from_attributes=True
    )
