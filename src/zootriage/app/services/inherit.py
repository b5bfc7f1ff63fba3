"""What a job takes from the checkpoint it scores when it does not say itself.

An upload may carry preprocessing, a label space, a name and tags (``POST /v1/checkpoints``). They go
into the job at submit: preprocessing and label space into the model reference, so that they are part
of the request key (they change the answer) and reach the worker's loader; name and tags into the job
row, from which the worker copies them onto the run. A job's own values always win.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy.orm import Session

from zootriage.app.db.checkpoint_queries import stored_checkpoint
from zootriage.app.db.models import Checkpoint
from zootriage.app.schemas.jobs import JobRequest
from zootriage.core.zoo.preprocess import Preprocess
from zootriage.core.zoo.refs import CheckpointRef


@dataclass(frozen=True)
class Inherited:
    body: JobRequest
    name: str | None
    tags: dict[str, str]


def checkpoint_of(session: Session, ref: CheckpointRef) -> Checkpoint | None:
    """The upload record a checkpoint reference names (its path is ``<sha256>[.suffix]``)."""
    return stored_checkpoint(session, ref.path.partition(".")[0])


def inherit(session: Session, body: JobRequest) -> Inherited:
    ref = body.model
    row = checkpoint_of(session, ref) if isinstance(ref, CheckpointRef) else None
    if row is None or not isinstance(ref, CheckpointRef):
        return Inherited(body, body.name, dict(body.tags))
    update: dict[str, object] = {}
    if ref.preprocess is None and row.preprocess is not None:
        update["preprocess"] = Preprocess.model_validate(row.preprocess)
    if ref.label_space is None and row.label_space is not None:
        update["label_space"] = row.label_space
    named = body.name is not None or bool(body.tags)
    return Inherited(
        body.model_copy(update={"model": ref.model_copy(update=update)}) if update else body,
        body.name if named else row.name,
        dict(body.tags) if named else dict(row.tags),
    )
