"""What the product does when a request names no rule or centring: the pre-registered study's choice.

The study's decision (docs/study/PLAN.md, "The rule that chooses the product's default", applied by
``core.backtest.decision``) is written into ``core/evidence.json`` as ``default`` by
``core.evidence.build_from_preregistered``. This module reads only that entry, with the standard
library, so the protocol model (a leaf that the database models import) can take its default centring
from it without importing the evidence machinery. An evidence file without a ``default`` (version 1,
from before the pre-registered study) keeps the paper's choice: the geometry rule on raw features.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from pathlib import Path

EVIDENCE_PATH = Path(__file__).with_name("evidence.json")
_PAPERS_CHOICE = "the paper's choice; no pre-registered study has decided yet"


@dataclass(frozen=True)
class ProductDefault:
    rule: str  # the rule of rankings when a request names none
    v1_v2_rule: str  # the rule of the v1-vs-v2 verdict when a request names none
    centering: str  # GLUE's centring when a protocol names none
    reason: str
    study: str | None


def product_default() -> ProductDefault:
    """The default recorded in the evidence file (``EVIDENCE_PATH``, read once per path)."""
    return _read(EVIDENCE_PATH)


@cache
def _read(path: Path) -> ProductDefault:
    doc = json.loads(path.read_text())
    chosen = doc.get("default")
    if chosen is None:
        return ProductDefault("geometry", "geometry", "none", _PAPERS_CHOICE, doc.get("study"))
    return ProductDefault(
        rule=chosen["rule"],
        v1_v2_rule=chosen.get("v1_v2_rule", chosen["rule"]),
        centering=chosen["centering"],
        reason=chosen["reason"],
        study=doc.get("study"),
    )


def default_centering() -> str:
    return product_default().centering
