"""``/backtests``: paste measured outcomes of stored runs, see whether each marker predicts them; and
``/backtests/study``: the project's own evidence behind the triage rules (``core/evidence.json``).

The form's CSV (``run_id,outcome`` per line, an optional header) becomes the body of
``POST /v1/backtests`` and goes through the same service (``app.services.backtests``), so the page and
the API give the same numbers and refuse the same inputs with the same ``{code, message}``, runs
grouped into recipes by the recipe tag. The method is the API's default, study 3's confirmatory one
(``core.backtest.on_runs3``: each rule's correct / wrong / undecided picks, accuracy with its interval,
d_a and the exact sign-flip p against ID accuracy), or study 2's "preregistered" on request; the page
says which ran. The chosen marker is drawn against the outcome, one linked point per run, with its
rule's accuracy and interval (confirmatory) or ρ̄ and its interval (preregistered) in the title.
"""

from __future__ import annotations

import csv
import io
import uuid
from typing import TYPE_CHECKING, Any

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse
from pydantic import ValidationError
from starlette.concurrency import run_in_threadpool

from zootriage.app.api.deps import SessionDep, SettingsDep
from zootriage.app.schemas.backtests import MAX_RUNS, BacktestRequest
from zootriage.app.services.errors import ServiceError
from zootriage.app.ui.plots import marker_scatter
from zootriage.app.ui.session import check_csrf, page_caller
from zootriage.app.ui.templating import render
from zootriage.core.catalogue.markers import list_markers
from zootriage.core.noise import Estimate

if TYPE_CHECKING:
    # The back-test service computes with numpy and scipy (``core.backtest``): each page below imports
    # it when it is asked for, so that the API starts without them.
    from zootriage.app.services.backtests import BacktestAnswer

router = APIRouter()

# A run id (36) and a number (~20) per line: room for MAX_RUNS lines without admitting much more.
OUTCOMES_MAX_CHARS = MAX_RUNS * 64
DEFAULT_MARKER = "dimension"
DEFAULT_BOOT = "2000"
DEFAULT_RECIPE_TAG = "recipe"
METHODS = ("confirmatory", "preregistered")


class FieldError(ServiceError):
    """A ``ServiceError`` that belongs beside one form field."""

    def __init__(self, field: str, status: int, code: str, message: str) -> None:
        super().__init__(status, code, message)
        self.field = field


def _bad(message: str) -> FieldError:
    return FieldError("outcomes", 422, "invalid_request", message)


def parse_outcomes(text: str) -> dict[uuid.UUID, float]:
    """``run_id,outcome`` lines (blank lines and a ``run_id`` header skipped) as the request's map;
    422 ``invalid_request`` naming the first bad line."""
    if len(text) > OUTCOMES_MAX_CHARS:
        raise _bad(f"outcomes: at most {OUTCOMES_MAX_CHARS} characters")
    outcomes: dict[uuid.UUID, float] = {}
    for number, row in enumerate(csv.reader(io.StringIO(text)), start=1):
        cells = [cell.strip() for cell in row]
        if not any(cells) or (number == 1 and cells[0].lower() == "run_id"):
            continue
        where = f"outcomes line {number}"
        if len(cells) != 2:
            raise _bad(f"{where}: want run_id,outcome")
        try:
            run_id = uuid.UUID(cells[0])
        except ValueError:
            raise _bad(f"{where}: {cells[0][:40]!r} is not a run id") from None
        try:
            value = float(cells[1])
        except ValueError:
            raise _bad(f"{where}: {cells[1][:40]!r} is not a number") from None
        if run_id in outcomes:
            raise _bad(f"{where}: run {run_id} is given twice")
        outcomes[run_id] = value
        if len(outcomes) > MAX_RUNS:
            raise _bad(f"outcomes: at most {MAX_RUNS} runs")
    return outcomes


def _request(form: dict[str, str]) -> BacktestRequest:
    method = form.get("method") or METHODS[0]
    if method not in METHODS:  # the API's "first-study" answers in another shape, which the page cannot plot
        raise FieldError("method", 422, "invalid_request", f"method: one of {', '.join(METHODS)}")
    outcomes = parse_outcomes(form.get("outcomes", ""))
    try:
        return BacktestRequest.model_validate(
            {
                "outcomes": outcomes,
                "n_boot": form.get("n_boot") or DEFAULT_BOOT,
                "recipe_tag": form.get("recipe_tag") or DEFAULT_RECIPE_TAG,
                "method": method,
            }
        )
    except ValidationError as exc:
        err = exc.errors()[0]
        loc = [str(p) for p in err.get("loc", ())]
        field = loc[0] if loc and loc[0] in ("n_boot", "recipe_tag", "method") else "outcomes"
        message = f"{'.'.join(loc)}: {err.get('msg', 'invalid')}"
        raise FieldError(field, 422, "invalid_request", message) from None


def _title(answer: BacktestAnswer, marker: str) -> str:
    """The scatter's title: the marker's rule accuracy with its interval (confirmatory), or ρ̄ with its
    interval (preregistered)."""
    result = answer.result
    if result.method == "confirmatory":
        rule = (result.confirmatory_rules or {}).get(marker)
        if rule is None:
            return f"{marker}: no pick rule (no preferred direction)"
        if rule.accuracy is None or rule.ci95 is None:
            return f"{marker}: accuracy undefined ({rule.pairs} eligible pairs)"
        low, high = rule.ci95
        interval = f"[95% CI {low:.2f}, {high:.2f}]"
        return f"{marker}: accuracy {rule.accuracy:.2f} {interval}, {rule.pairs} eligible pairs"
    found = (result.rules or {})[marker].correlation
    assert found is not None  # every one-marker rule has its correlation
    if found.rho_bar is not None and found.rho_bar_ci is not None:
        low, high = found.rho_bar_ci
        return f"{marker}: ρ̄ = {found.rho_bar:.2f} [95% CI {low:.2f}, {high:.2f}], {found.recipes} recipes"
    return f"{marker}: ρ̄ undefined ({found.recipes} recipes)"


def _scatter(answer: BacktestAnswer, marker: str) -> tuple[str, int, str]:
    """The marker against the outcome, one point per run, and its title (:func:`_title`)."""
    title = _title(answer, marker)

    def value(number: float | None) -> Estimate | None:
        return None if number is None else Estimate(number, None, float("inf"))

    records = answer.records
    figure, points = marker_scatter(
        [r.architecture for r in records],
        [f"/runs/{r.model}" for r in records],
        [value(r.markers.get(marker)) for r in records],
        [value(r.outcome) for r in records],
        [None] * len(records),
        (marker, "outcome", ""),
        title=title,
    )
    return figure, points, title


@router.get("/backtests", response_class=HTMLResponse)
def backtest_form(request: Request) -> HTMLResponse:
    return render(request, "backtests.html", _context({}))


def _context(form: dict[str, str], **more: Any) -> dict[str, Any]:
    names = [spec.name for spec in list_markers()]
    return {"form": form, "names": names, "errors": {}, "result": None, "max_runs": MAX_RUNS,
            "max_chars": OUTCOMES_MAX_CHARS, "default_marker": DEFAULT_MARKER,
            "default_recipe_tag": DEFAULT_RECIPE_TAG, "methods": METHODS, **more}


@router.post("/backtests", response_class=HTMLResponse)
async def backtest_page(request: Request, session: SessionDep, settings: SettingsDep) -> HTMLResponse:
    """The form is read here; the back-test (database reads, numpy and scipy: seconds for a large
    one) runs in the thread pool, so it never holds the event loop and every other request with it."""
    form = {k: v for k, v in (await request.form()).items() if isinstance(v, str)}
    return await run_in_threadpool(_backtest_answer, request, session, settings, form)


def _backtest_answer(
    request: Request, session: SessionDep, settings: SettingsDep, form: dict[str, str]
) -> HTMLResponse:
    from zootriage.app.services import backtests as backtest_service

    marker = form.get("marker") or DEFAULT_MARKER
    try:
        check_csrf(request, form.get("csrf"))
        if marker not in {spec.name for spec in list_markers()}:
            raise FieldError("marker", 422, "unknown_marker", f"{marker[:64]!r} is not a marker")
        caller = page_caller(request, session, settings)
        answer = backtest_service.backtest_with_records(session, _request(form), caller)
        carried = sorted({name for r in answer.records for name in r.markers})
        if marker not in carried:
            message = f"no run carries {marker!r}; they carry {carried}"
            raise FieldError("marker", 422, "unknown_marker", message)
    except FieldError as exc:
        return render(request, "backtests.html", _context(form, errors={exc.field: exc}), status=exc.status)
    except ServiceError as exc:
        return render(request, "backtests.html", _context(form, errors={"outcomes": exc}), status=exc.status)
    figure, points, title = _scatter(answer, marker)
    context = _context(form, result=answer.result, marker=marker, figure=figure, points=points, title=title)
    return render(request, "backtests.html", context)


@router.get("/backtests/study", response_class=HTMLResponse)
def study_page(request: Request) -> HTMLResponse:
    from zootriage.app.services import backtests as backtest_service

    return render(request, "study.html", {"evidence": backtest_service.study_evidence()})
