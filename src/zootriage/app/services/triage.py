"""What every triage answer shares: find the runs it needs, queue the missing ones, read them as
``core.triage`` records, and name the rule applied with its evidence. The answers themselves are
``app.services.recommendations``, ``app.services.rankings`` and ``app.services.gates``.

Runs are found and queued through the job service, so a triage request is idempotent exactly as a
job is: the same model, data and protocol is never scored twice, and asking again while its job runs
queues nothing new. Models are queued one by one (each ``submit`` commits), so when a later candidate
turns out to be bad input the earlier ones stay queued: their runs are valid and will be reused.
A job that failed is queued again on the next ask; clients should watch the jobs they are given.
"""

from __future__ import annotations

import uuid
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from sqlalchemy.orm import Session

from zootriage.app.db.models import Job, Marker, Run
from zootriage.app.db.run_queries import markers_of, upload_filenames
from zootriage.app.labels import run_label, stored_reference, warnings_of
from zootriage.app.schemas.jobs import JobOut, JobRequest
from zootriage.app.schemas.triage import (
    AdviceOut,
    MarkerStat,
    NamedModel,
    Pending,
    RuleAnswerOut,
    RuleUsed,
)
from zootriage.app.services import jobs as job_service
from zootriage.app.services.errors import ServiceError
from zootriage.app.settings import Settings
from zootriage.core.data.refs import AnyDatasetRef, Sampling
from zootriage.core.defaults import product_default
from zootriage.core.evidence import evidence_for, rule_key, statement
from zootriage.core.noise import TEST
from zootriage.core.protocol import Protocol
from zootriage.core.triage import (
    MarkerRecord,
    Rule,
    UnknownRule,
    make_rule,
)
from zootriage.core.triage.advice import Advice
from zootriage.core.triage.published import PUBLISHED_SOURCE, with_published
from zootriage.core.zoo.refs import AnyModelRef


@dataclass(frozen=True)
class ScoringPlan:
    """Where and how every model of one triage question is scored."""

    dataset: AnyDatasetRef
    sampling: Sampling
    protocol: Protocol


@dataclass(frozen=True)
class Wanted:
    """A model a triage answer needs, with the name and tags its run gets when it is queued."""

    model: AnyModelRef
    name: str | None = None
    tags: Mapping[str, str] = field(default_factory=dict)


def wanted(subject: AnyModelRef | NamedModel) -> Wanted:
    if isinstance(subject, NamedModel):
        return Wanted(subject.model, subject.name, subject.tags)
    return Wanted(subject)


@dataclass(frozen=True)
class Gathered:
    """The stored runs by key, and the jobs still computing the others."""

    runs: dict[str, Run]
    jobs: list[Job]
    markers: dict[uuid.UUID, list[Marker]]

    def pending(self) -> Pending | None:
        return Pending(jobs=[JobOut.model_validate(job) for job in self.jobs]) if self.jobs else None

    def record(self, key: str, label: str) -> MarkerRecord:
        run = self.runs[key]
        return record_of(label, run, self.markers[run.id])

    def stats(self, key: str) -> dict[str, MarkerStat]:
        markers = self.markers[self.runs[key].id]
        return {m.name: MarkerStat.model_validate(m, from_attributes=True) for m in markers}

    def scored(self, key: str, label: str, model: AnyModelRef) -> dict[str, Any]:
        """The fields of ``ScoredModel`` (what every triage answer says of a model) for the run at ``key``."""
        run = self.runs[key]
        return {
            "label": label,
            "model": model.model_dump(mode="json"),
            "run_id": run.id,
            "markers": self.stats(key),
            "warnings": [*warnings_of(run.model_meta), *archived_note(run)],
        }


def archived_note(run: Run) -> list[str]:
    """What an answer says of an archived run it used: a run named by a request (a gate's side, a
    ranking's candidate) still answers for its weights, because scoring again would find the same run."""
    if run.archived_at is None:
        return []
    return [f"run {run.id} is archived (since {run.archived_at:%Y-%m-%d %H:%M} UTC); it still answers here"]


def display_labels(
    session: Session, names: Mapping[str, str | None], runs: Mapping[str, Run]
) -> dict[str, str]:
    """Each run's label (``app.labels.run_label``: the name given in this request, else its run's, else
    the upload's file name, else the short reference); a label two runs share is followed by the
    reference."""
    filenames = upload_filenames(session, list(runs.values()))
    labels = {key: run_label(run, filenames, names.get(key)) for key, run in runs.items()}
    counts = Counter(labels.values())
    return {
        key: f"{text} ({stored_reference(runs[key].model_ref)})" if counts[text] > 1 else text
        for key, text in labels.items()
    }


def record_of(label: str, run: Run, markers: list[Marker]) -> MarkerRecord:
    """The stored markers as ``core.triage`` reads them: the run's repeats give the noise of its GLUE
    markers, and markers from a degenerate regime may not decide."""
    return MarkerRecord(
        label,
        {m.name: m.value for m in markers},
        {m.name: m.std for m in markers},
        repeats=run.protocol.repeats,
        undecidable={m.name: m.reason or "not decidable" for m in markers if not m.decidable},
        notes={m.name: m.reason for m in markers if m.decidable and m.reason},
    )


def published_acc1(run: Run) -> float | None:
    """The ImageNet-1k acc@1 (percent) published with the run's weights, as the worker stored it."""
    meta = run.model_meta or {}
    value = meta.get("acc1")
    return (
        float(value) if isinstance(value, int | float) and meta.get("label_space") == "imagenet-1k" else None
    )


def with_published_accuracy(
    records: list[MarkerRecord], acc1: Mapping[str, float | None]
) -> tuple[list[MarkerRecord], str | None]:
    """``core.triage.published.with_published``: the records, and the source to name when the ID
    accuracy of some came from the weights' metadata (None when all is measured)."""
    out, used = with_published(records, acc1)
    return out, PUBLISHED_SOURCE if used else None


def advice_out(advice: Advice) -> AdviceOut:
    """The API's view of ``core.triage.advice.Advice``."""
    return AdviceOut(
        question=advice.question,
        evidence_outcome=advice.outcome,
        study=advice.study,
        pick=advice.pick,
        answer=advice.answer,
        followed_rule=advice.followed,
        why=advice.why,
        exploratory=advice.exploratory,
        confidence=advice.confidence,
        confidence_ci=advice.confidence_ci,
        confidence_pairs=advice.confidence_pairs,
        summary=advice.summary(),
        rules=[
            RuleAnswerOut(
                rule=a.rule,
                evidence_key=a.evidence_key,
                pick=a.pick,
                answer=a.answer,
                reason=a.reason,
                win_rate=a.evidence.win_rate if a.evidence else None,
                win_rate_ci=a.evidence.win_rate_ci if a.evidence else None,
                pairs=a.evidence.pairs if a.evidence else None,
                tally=a.evidence.tally if a.evidence else None,
                evidence=a.evidence_text(),
                validated=a.validated,
                primary=a.primary,
                source=a.source,
            )
            for a in advice.answers
        ],
    )


def triage_rule(name: str | None, *, verdict: bool = False) -> Rule:
    """The rule a user named; 422 ``unknown_rule`` for a name that is no rule. ``None``: the product's
    default (``core.defaults``: the pre-registered study's choice), for a v1-vs-v2 verdict when
    ``verdict``, else for rankings."""
    if name is None:
        chosen = product_default()
        return replace(make_rule(chosen.v1_v2_rule if verdict else chosen.rule), default_reason=chosen.reason)
    try:
        return make_rule(name)
    except UnknownRule as exc:
        raise ServiceError(422, "unknown_rule", str(exc)) from None


def rule_used(rule: Rule, protocol: Protocol) -> RuleUsed:
    """What an answer applied, with the back-test evidence for it under this GLUE variant; for the
    product's default rule (the request named none), why it is the default."""
    dichotomy, centering = protocol.dichotomy, protocol.centering
    key = rule_key(rule.name, dichotomy, centering)
    found = evidence_for(key)
    return RuleUsed(
        name=rule.name,
        markers=list(rule.markers),
        glue_variant=f"{dichotomy},{centering}",
        noise_test=TEST,
        description=rule.describe(),
        evidence=statement(key),
        evidence_detail=found.to_dict() if found else None,
        chosen_by="request" if rule.default_reason is None else "default",
        default_reason=rule.default_reason,
    )


def job_request(want: Wanted, scoring: ScoringPlan) -> JobRequest:
    return JobRequest(
        model=want.model,
        dataset=scoring.dataset,
        sampling=scoring.sampling,
        protocol=scoring.protocol,
        name=want.name,
        tags=dict(want.tags),
    )


def gather(
    session: Session,
    settings: Settings,
    models: Mapping[str, Wanted],
    scoring: ScoringPlan,
    project_id: int | None = None,
) -> Gathered:
    """Each model's stored run, or its job (queued now or already running), asked for in project
    ``project_id`` (None: the default project). Two labels naming the same weights (``DEFAULT`` and the
    member it stands for) share one job."""
    runs: dict[str, Run] = {}
    jobs: dict[uuid.UUID, Job] = {}
    for key, want in models.items():
        submitted = job_service.submit(session, settings, job_request(want, scoring), None, project_id)
        if submitted.run is not None:
            runs[key] = submitted.run
        elif submitted.job is not None:
            jobs[submitted.job.id] = submitted.job
    markers = markers_of(session, [run.id for run in runs.values()]) if not jobs else {}
    return Gathered(runs, list(jobs.values()), markers)
