"""``GET /v1/trends``: a marker's values across a project's runs (or an alias's moves) with their noise,
and whether it drifted beyond that noise between the first and the last point (``app.services.trends``).

The query is declared once (:class:`TrendQuery`) for the API and the ``/trends`` page; like the history's
form, the page sends every field, so a blank value means "not given".
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

from fastapi import APIRouter, Depends, Query
from sqlalchemy.orm import Session

from zootriage.app.api.deps import CallerDep, SessionDep
from zootriage.app.api.errors import responses
from zootriage.app.api.run_query import Moment, Text, blank_to_none, parse_moment
from zootriage.app.api_keys import Caller
from zootriage.app.project_names import SLUG_CHARS
from zootriage.app.schemas.trends import TrendsOut
from zootriage.app.services.runs import tag_filter
from zootriage.app.services.trends import MARKERS_MAX, POINTS_DEFAULT, POINTS_MAX, Selection, trends

router = APIRouter(prefix="/v1/trends", tags=["trends"])

DEFAULT_MARKERS = ("d_eff", "psi_eff")


@dataclass
class TrendQuery:
    """Which markers, over which runs: the query-string names are those of the fields."""

    marker: Annotated[
        list[str] | None,
        Query(
            max_length=4 * MARKERS_MAX,
            description=f"a marker (registry name, or d_eff, psi_eff, r_eff); repeat, up to {MARKERS_MAX}; "
            f"default {', '.join(DEFAULT_MARKERS)}",
        ),
    ] = None
    project: Annotated[
        str | None,
        Query(
            max_length=SLUG_CHARS,
            description="only this project's runs (default: every project the key may use)",
        ),
    ] = None
    alias: Annotated[
        str | None,
        Query(
            max_length=SLUG_CHARS,
            description="follow this alias of the project (default: the default project) through its moves",
        ),
    ] = None
    arch: Annotated[Text, Query(description="only this architecture")] = None
    name_contains: Annotated[
        str | None, Query(max_length=128, description="only runs whose name contains this (any case)")
    ] = None
    tag: Annotated[
        list[str] | None,
        Query(max_length=16, description="key=value; repeat for several, every one must hold"),
    ] = None
    dataset: Annotated[str | None, Query(max_length=128, description="only this dataset fingerprint")] = None
    since: Moment = None
    limit: Annotated[
        int, Query(ge=2, le=POINTS_MAX, description="the latest this many runs (or alias moves)")
    ] = POINTS_DEFAULT

    @property
    def markers(self) -> list[str]:
        given = [text for text in (blank_to_none(m) for m in self.marker or []) if text is not None]
        return given or list(DEFAULT_MARKERS)

    @property
    def tags(self) -> list[str]:
        return [text for text in (blank_to_none(t) for t in self.tag or []) if text is not None]

    def selection(self) -> Selection:
        """The runs asked for; a 422 for a tag or a moment that means nothing."""
        return Selection(
            project=blank_to_none(self.project),
            alias=blank_to_none(self.alias),
            architecture=blank_to_none(self.arch),
            name_contains=blank_to_none(self.name_contains),
            tags=tag_filter(self.tags),
            dataset=blank_to_none(self.dataset),
            since=parse_moment(blank_to_none(self.since), "since"),
        )

    def answer(self, session: Session, caller: Caller | None) -> TrendsOut:
        return trends(session, self.markers, self.selection(), self.limit, caller)


TrendQueryDep = Annotated[TrendQuery, Depends()]


@router.get("", response_model=TrendsOut, responses=responses(404, 422))
def get_trends(session: SessionDep, caller: CallerDep, query: TrendQueryDep) -> TrendsOut:
    """Per marker, the selected runs in time order (by creation, or by the alias's moves) with each
    value's std and its band ±1 standard error, and the drift between the first and the last point:
    a two-sided Welch t-test at α = 0.05 (|Δ| > t·√(se₁² + se₂²)), or "cannot decide" when either point
    has no noise estimate. Without ``project``, the runs of every project the key may use; archived
    runs never take part. 403 for a project the key may not use; 404 ``project_not_found`` /
    ``alias_not_found``; 422 ``unknown_marker`` / ``too_many_markers`` / ``invalid_request``."""
    return query.answer(session, caller)
