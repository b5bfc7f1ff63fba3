"""``POST /v1/backtests``: does each marker predict the OOD outcome a user measured on stored runs?

The rules and the statistics are the back-test service's (``app.services.backtests``). It computes
with numpy and scipy (``core.backtest``), so the route imports it when it is called: the API starts
without them.
"""

from __future__ import annotations

from fastapi import APIRouter

from zootriage.app.api.deps import CallerDep, SessionDep
from zootriage.app.api.errors import responses
from zootriage.app.schemas.backtests import BacktestOut, BacktestRequest

router = APIRouter(prefix="/v1/backtests", tags=["backtests"])


@router.post("", response_model=BacktestOut, responses=responses(403, 404, 422))
def post_backtest(body: BacktestRequest, session: SessionDep, caller: CallerDep) -> BacktestOut:
    """Back-test every marker of the named runs against the outcomes given for them: by default study
    3's confirmatory method (each rule's correct / wrong / undecided picks over noise-eligible recipe
    pairs, accuracy with its architecture-cluster bootstrap interval, d_a against ID accuracy with the
    exact sign-flip p); ``method`` "preregistered" (study 2's) or "first-study" on request. Every run
    must be in a project the key may use (403)."""
    from zootriage.app.services import backtests as backtest_service

    return backtest_service.run_backtest(session, body, caller)
