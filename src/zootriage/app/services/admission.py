"""What the API checks before it queues a job: everything knowable without opening any content.

No model is built, no dataset opened, no weights file hashed or downloaded here (that is the worker's
job, in ``core.scoring``): references are checked statically (``core.zoo.checks``,
``core.data.checks``), the protocol's cost is bounded, and the request is normalised into the form its
request key hashes, so bad input is a 4xx at submit time and the API's memory does not depend on what
a request names.

Model names are checked against the published catalogues (``core.catalogue``), without torchvision
or timm. The dataset checks (``core.data.checks``) draw a builtin set's classes with numpy's seeded
generator, as the worker will, and read an archive's array headers: that module, which still
reaches torch through ``core.data``'s loaders, is imported by the first ``admit`` rather than at the
API's start.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from zootriage.app.db.run_key import request_key, reusable_by_request
from zootriage.app.references import upload_of
from zootriage.app.schemas.jobs import JobRequest
from zootriage.app.settings import Settings
from zootriage.app.storage import upload_store
from zootriage.core.data.refs import PER_CLASS_MAX, Sampling
from zootriage.core.errors import ZooError
from zootriage.core.glue_cost import glue_seconds
from zootriage.core.protocol import Protocol
from zootriage.core.zoo.checks import canonical_model
from zootriage.core.zoo.refs import CheckpointRef


class TooExpensive(ZooError):
    """A protocol whose estimated GLUE time (``core.glue_cost``) is over the service's budget."""

    code = "too_expensive"


@dataclass(frozen=True)
class Admitted:
    """A request that passed every static check, in normalised JSON form, with its request key."""

    request: dict[str, Any]
    request_key: str

    @property
    def reusable(self) -> bool:
        return reusable_by_request(self.request)


def glue_cost(classes: int, sampling: Sampling, protocol: Protocol) -> float:
    """Estimated single-core seconds of GLUE's solver (``core.glue_cost``, at the widest feature
    width a zoo model has). M is capped by both the protocol and the sample; with neither set
    ("every point of every image") it is taken at the largest sample a request may ask for."""
    caps = [n for n in (protocol.points_per_class, sampling.per_class) if n is not None]
    return glue_seconds(classes, min(caps, default=PER_CLASS_MAX), protocol.n_t, protocol.repeats)


def normalised_request(body: JobRequest) -> dict[str, Any]:
    """The request as its request key hashes it (the model reference already canonical); a name and
    tags label the answer but do not change it, so they are left out."""
    return body.model_dump(mode="json", exclude={"name", "tags"})


def admit(body: JobRequest, settings: Settings) -> Admitted:
    """The normalised request and its key, or the ``ZooError`` (a 4xx) that refuses it."""
    canonical = canonical_model(body.model)
    if isinstance(canonical, CheckpointRef):
        stored = upload_of(canonical, upload_store(settings))
        canonical = canonical.model_copy(update={"path": stored.rsplit("/", 1)[-1]})
    from zootriage.core.data.archives import ArchiveLimits
    from zootriage.core.data.checks import check_dataset

    classes = check_dataset(body.dataset, body.sampling, settings.effective_data_roots, ArchiveLimits())
    # Unknown class counts (a folder sampled whole) are taken at GLUE's minimum of 2 here.
    cost = glue_cost(classes or 2, body.sampling, body.protocol)
    if cost > settings.glue_cost_budget:
        raise TooExpensive(
            f"this protocol's GLUE stage is estimated at {cost:.3g} core-seconds, over the service's "
            f"budget of {settings.glue_cost_budget:.3g}; lower n_t, repeats, classes or points per class"
        )
    request = normalised_request(body.model_copy(update={"model": canonical}))
    return Admitted(request, request_key(request))
