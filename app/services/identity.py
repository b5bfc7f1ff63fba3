"""The run key's ingredients for a job request, computed before anything is queued.

This is also where bad input is caught early: an unknown model, weights that are not available, an
unknown dataset, a path outside the data roots or an impossible sampling raise core's ``ZooError``
here, so the client gets a 4xx instead of a job that is bound to fail.
"""

from __future__ import annotations

from app.references import Identity, weights_sha256
from app.schemas.jobs import JobRequest
from app.settings import Settings
from core.data.open import open_dataset
from core.data.sampling import sample


def identify(body: JobRequest, settings: Settings) -> Identity:
    sha256 = weights_sha256(body.model, settings.effective_upload_dir)
    images = open_dataset(body.dataset, body.sampling.split, roots=settings.effective_data_roots)
    chosen = sample(images, body.sampling)
    return Identity(sha256, chosen.fingerprint, body.sampling.model_dump(mode="json"))
