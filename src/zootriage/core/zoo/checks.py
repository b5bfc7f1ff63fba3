"""Static checks of a model reference: names resolved, weights looked up in the local caches.

The API runs these at submit time so that an unknown model or missing weights is a 4xx, not a failed
job; they build no network, read no weights file and download nothing (a missing file is
``WeightsNotAvailable``: deployments put weights into the shared caches ahead of time). The canonical
form they return (``DEFAULT`` resolved to the enum member, timm's default tag made explicit) is what
makes two spellings of the same weights one request.

Names are checked against the published catalogues of torchvision and timm (``core.catalogue``), so
the API process imports neither library; the worker loads with the libraries themselves.
"""

from __future__ import annotations

from zootriage.core.catalogue import timm as timm_catalogue
from zootriage.core.catalogue import torchvision as torchvision_catalogue
from zootriage.core.errors import UnknownModel, WeightsNotAvailable
from zootriage.core.zoo.refs import AnyModelRef, TimmRef, TorchvisionRef
from zootriage.core.zoo.weight_caches import hub_checkpoint, pretrained_file


def canonical_model(ref: AnyModelRef) -> AnyModelRef:
    """``ref`` in canonical form, or the ``ZooError`` the worker would raise for it."""
    if isinstance(ref, TorchvisionRef):
        weights = torchvision_catalogue.weights_info(ref.arch, ref.weights)
        if not hub_checkpoint(weights.file).is_file():
            raise WeightsNotAvailable(
                f"weights {ref.arch}:{weights.name} are not in the local torch hub cache"
            )
        return ref.model_copy(update={"weights": weights.name})
    if isinstance(ref, TimmRef):
        name = timm_catalogue.check_name(ref.name)
        found = timm_catalogue.pretrained(name)
        if found is None:
            raise WeightsNotAvailable(f"timm has no pretrained weights for {ref.name!r}")
        pretrained_file(name, found.hf_hub_id, found.hf_hub_filename, found.url_file, download=False)
        return ref.model_copy(update={"name": name})
    if ref.library == "torchvision" and not torchvision_catalogue.has_architecture(str(ref.architecture)):
        raise UnknownModel(f"torchvision has no architecture {ref.architecture!r}")
    if ref.library == "timm" and not timm_catalogue.is_model(str(ref.architecture).partition(".")[0]):
        raise UnknownModel(f"timm has no model {ref.architecture!r}")
    return ref
