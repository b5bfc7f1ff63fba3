"""The marker suite: GLUE geometry, representation and logit baselines, LogME and H-score, and
markers from the field (RankMe, α-ReQ, an NCTI-style collapse score, ATC).

Importing this package registers every marker; see ``registry`` for the calling conventions.
"""

from zootriage.core.markers import geometry, logits, representation, transferability  # noqa: F401  (registration)

# isort: split
# Registered after the baselines so that, within each group, they list after them.
from zootriage.core.markers import atc, collapse, spectrum  # noqa: F401  (registration)
from zootriage.core.markers.compute import compute_markers
from zootriage.core.markers.registry import (
    MarkerSpec,
    MarkerUndefined,
    MarkerValue,
    get_marker,
    list_markers,
    register_marker,
)
from zootriage.core.protocol import Protocol

__all__ = [
    "MarkerSpec",
    "MarkerUndefined",
    "MarkerValue",
    "Protocol",
    "compute_markers",
    "get_marker",
    "list_markers",
    "register_marker",
]
