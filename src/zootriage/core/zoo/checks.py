"""Static checks of a model reference: names resolved, weights looked up in the local caches.

The API runs these at submit time so that an unknown model or missing weights is a 4xx, not a failed
job; they build no network, read no weights file and download nothing (a missing file is
``WeightsNotAvailable``: deployments put weights into the shared caches ahead of time). The canonical
form they return (``DEFAULT`` resolved to the enum member, timm's default tag made explicit) is what
makes two spellings of the same weights one request.
"""

from __future__ import annotations

import timm
import torchvision

from zootriage.core.errors import UnknownModel, WeightsNotAvailable
from zootriage.core.zoo import timm_zoo, torchvision_zoo
from zootriage.core.zoo.refs import AnyModelRef, TimmRef, TorchvisionRef


def canonical_model(ref: AnyModelRef) -> AnyModelRef:
    """``ref`` in canonical form, or the ``ZooError`` the worker would raise for it."""
    if isinstance(ref, TorchvisionRef):
        weights = torchvision_zoo.weights_enum(ref.arch, ref.weights)
        if not torchvision_zoo.cache_path(weights).is_file():
            raise WeightsNotAvailable(f"weights {weights} are not in the local torch hub cache")
        return ref.model_copy(update={"weights": weights.name})
    if isinstance(ref, TimmRef):
        name = timm_zoo.check_name(ref.name)
        timm_zoo.cached_weights_file(name)
        return ref.model_copy(update={"name": name})
    if ref.library == "torchvision":
        try:
            torchvision.models.get_model_builder(str(ref.architecture))
        except ValueError as exc:
            raise UnknownModel(f"torchvision has no architecture {ref.architecture!r}") from exc
    elif ref.library == "timm" and not timm.is_model(str(ref.architecture).partition(".")[0]):
        raise UnknownModel(f"timm has no model {ref.architecture!r}")
    return ref
