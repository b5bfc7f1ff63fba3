"""The run history's query (filter and order), declared once for ``GET /v1/runs``, ``/runs`` and
``/runs.csv``, and the two answers they share: a page with the next page's token, and the CSV.

The pages' form sends every field, blank ones included, so a blank value means "not given" here, for
the API as for the pages. Bounds and moments arrive as text and are parsed in :meth:`RunQuery.run_filter`,
so that a page can show a bad one as a message on itself; the API answers the same 422 as JSON. The
OpenAPI schema still documents them as a number and a date-time.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from datetime import UTC, datetime
from enum import StrEnum
from typing import Annotated

from fastapi import Depends, Query
from fastapi.responses import StreamingResponse
from pydantic import WithJsonSchema
from sqlalchemy.orm import Session

from zootriage.app.api.cursor import decode_cursor, encode_cursor
from zootriage.app.api.errors import ApiError
from zootriage.app.db.paging import CREATED
from zootriage.app.db.run_queries import Archived, RunFilter
from zootriage.app.schemas.runs import RunSummary
from zootriage.app.services.runs import csv_rows, history_filter, history_page, tag_filter

MARKER_NAME = r"^[A-Za-z0-9_.\-]{1,64}$"
BOUND_MAX = 32  # characters of a bound: any float's repr fits
MOMENT_MAX = 40  # characters of a moment: an ISO 8601 date-time with microseconds and zone fits

Text = Annotated[str | None, Query(max_length=128)]
Bound = Annotated[str | None, WithJsonSchema({"type": "number"})]
Moment = Annotated[
    str | None,
    WithJsonSchema({"type": "string", "format": "date-time"}),
    Query(max_length=MOMENT_MAX, description="ISO 8601 date or date-time; one without a zone is UTC"),
]


class Order(StrEnum):
    asc = "asc"
    desc = "desc"


def blank_to_none(value: str | None) -> str | None:
    return value.strip() or None if value else None


@dataclass
class RunQuery:
    """The filter and order of a history query as the client spelled them, blanks already dropped
    by :meth:`texts`; the query-string names are ``min`` and ``max`` for the marker bounds."""

    architecture: Text = None
    name: Annotated[str | None, Query(max_length=128, description="runs with exactly this name")] = None
    name_contains: Annotated[
        str | None,
        Query(max_length=128, description="runs whose name contains this, in any case (% and _ are plain)"),
    ] = None
    archived: Annotated[
        Archived, Query(description="exclude (default): live runs only; include: archived ones too; only")
    ] = Archived.exclude
    tag: Annotated[
        list[str] | None,
        Query(max_length=16, description="key=value; repeat for several, every one must hold"),
    ] = None
    weights: Annotated[str | None, Query(max_length=128, description="weights sha256")] = None
    dataset: Annotated[str | None, Query(max_length=128, description="dataset fingerprint")] = None
    marker: Annotated[str | None, Query(max_length=64, description="filter on this marker")] = None
    marker_min: Annotated[
        Bound, Query(alias="min", max_length=BOUND_MAX, description="marker lower bound, inclusive")
    ] = None
    marker_max: Annotated[
        Bound, Query(alias="max", max_length=BOUND_MAX, description="marker upper bound, inclusive")
    ] = None
    created_after: Moment = None
    created_before: Moment = None
    sort: Annotated[str, Query(pattern=MARKER_NAME, description="'created_at' or a marker name")] = CREATED
    order: Order = Order.desc
    project: Annotated[str | None, Query(max_length=64, description="runs of this project")] = None
    # The projects listed when none is named: a key's own (``app.api.project_scope``); None: every one.
    scope: tuple[str, ...] | None = field(default=None, init=False)

    @property
    def descending(self) -> bool:
        return self.order is Order.desc

    @property
    def tags(self) -> list[str]:
        """The tags given (the form always sends one more, empty)."""
        return [text for text in (blank_to_none(t) for t in self.tag or []) if text is not None]

    def texts(self) -> dict[str, str | None]:
        """The query by its query-string names, blanks as None (tags aside: :attr:`tags`), to echo it
        in a form or a link."""
        return {
            "architecture": blank_to_none(self.architecture),
            "name": blank_to_none(self.name),
            "name_contains": blank_to_none(self.name_contains),
            "archived": None if self.archived is Archived.exclude else self.archived.value,
            "weights": blank_to_none(self.weights),
            "dataset": blank_to_none(self.dataset),
            "marker": blank_to_none(self.marker),
            "min": blank_to_none(self.marker_min),
            "max": blank_to_none(self.marker_max),
            "created_after": blank_to_none(self.created_after),
            "created_before": blank_to_none(self.created_before),
            "sort": self.sort,
            "order": self.order.value,
            "project": blank_to_none(self.project),
        }

    def run_filter(self) -> RunFilter:
        """The filter, parsed here and checked by the runs service; a 422 for anything it cannot mean."""
        given = self.texts()
        flt = RunFilter(
            architecture=given["architecture"],
            weights_sha256=given["weights"],
            dataset_fingerprint=given["dataset"],
            marker=given["marker"],
            marker_min=_bound(given["min"], "min"),
            marker_max=_bound(given["max"], "max"),
            created_after=parse_moment(given["created_after"], "created_after"),
            created_before=parse_moment(given["created_before"], "created_before"),
            name=given["name"],
            name_contains=given["name_contains"],
            archived=self.archived,
            tags=tag_filter(self.tags),
            projects=(given["project"],) if given["project"] is not None else self.scope,
        )
        return history_filter(flt, self.sort)

    def page(self, session: Session, size: int, cursor: str | None) -> tuple[list[RunSummary], str | None]:
        """The page of ``size`` runs after ``cursor`` (a token of this sort and order, else the
        first) and the token of the next page (None on the last)."""
        flt, sort, descending = self.run_filter(), self.sort, self.descending
        after = decode_cursor(cursor, sort, descending) if cursor else None
        items, next_key = history_page(session, flt, sort, descending, size, after)
        return items, encode_cursor(next_key, sort, descending) if next_key is not None else None

    def csv(self, database_url: str) -> StreamingResponse:
        """Every run the query matches, in its order, as a CSV download."""
        rows = csv_rows(database_url, self.run_filter(), self.sort, self.descending)
        headers = {"Content-Disposition": 'attachment; filename="runs.csv"'}
        return StreamingResponse(rows, media_type="text/csv", headers=headers)


RunQueryDep = Annotated[RunQuery, Depends()]


def _bound(text: str | None, name: str) -> float | None:
    if text is None:
        return None
    try:
        value = float(text)
    except ValueError:
        raise ApiError(422, "invalid_request", f"{name}: {text!r} is not a number") from None
    if not math.isfinite(value):  # no marker is compared with NaN or beyond infinity
        raise ApiError(422, "invalid_request", f"{name}: {text!r} is not a finite number")
    return value


def parse_moment(text: str | None, name: str) -> datetime | None:
    """An ISO 8601 date or date-time (``2026-01-31``, ``2026-01-31T12:00``, ``...Z``); one without a
    zone is UTC, as the stored ``created_at`` is."""
    if text is None:
        return None
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        raise ApiError(
            422, "invalid_request", f"{name}: {text!r} is not a date (YYYY-MM-DD or YYYY-MM-DDTHH:MM)"
        ) from None
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)
