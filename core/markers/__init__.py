"""The marker suite: GLUE geometry, representation and logit baselines, LogME and H-score.

Importing this package registers every marker; see ``registry`` for the calling conventions.
"""

from zootriage.core.markers import geometry, logits, representation, transferability  # noqa: F401  (registration)
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
