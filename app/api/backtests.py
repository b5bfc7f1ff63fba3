"""``POST /v1/backtests``: does each marker predict the OOD outcome a user measured on stored runs?

The same statistics as the ``study`` and ``backtest`` commands (``core.study.stats``): Pearson and
Spearman with bootstrap 95% intervals, pooled and per architecture, and pairwise win rates within an
architecture, including the geometry rule (D_eff and Ψ_eff both higher). Runs are compared only under
one protocol and on one ID dataset, as everywhere in the service.
"""

from __future__ import annotations

import json

from fastapi import APIRouter

from zootriage.app.api.deps import SessionDep
from zootriage.app.api.errors import ApiError, responses
from zootriage.app.db.backtest_queries import runs_with_markers
from zootriage.app.schemas.backtests import BacktestOut, BacktestRequest
from zootriage.core.study.stats import Record, backtest

router = APIRouter(prefix="/v1/backtests", tags=["backtests"])


@router.post("", response_model=BacktestOut, responses=responses(404, 422))
def post_backtest(body: BacktestRequest, session: SessionDep) -> BacktestOut:
    """Correlate every marker of the named runs with the outcomes given for them."""
    found = runs_with_markers(session, body.outcomes.keys())
    missing = [str(run_id) for run_id in body.outcomes if run_id not in found]
    if missing:
        shown = ", ".join(missing[:10]) + (f" and {len(missing) - 10} more" if len(missing) > 10 else "")
        raise ApiError(404, "run_not_found", f"no run(s) {shown}")
    protocols = {json.dumps(run.protocol, sort_keys=True) for run, _ in found.values()}
    if len(protocols) > 1:
        raise ApiError(
            422,
            "mixed_protocols",
            f"the runs were scored under {len(protocols)} different "
            "protocols; back-test runs of one protocol at a time",
        )
    datasets = {run.dataset_fingerprint for run, _ in found.values()}
    if len(datasets) > 1:
        raise ApiError(
            422,
            "mixed_datasets",
            f"the runs were scored on {len(datasets)} different ID datasets; "
            "back-test runs scored on one dataset",
        )
    if body.markers is not None:
        known = {name for _, values in found.values() for name in values}
        unknown = sorted(set(body.markers) - known)
        if unknown:
            raise ApiError(
                422, "unknown_marker", f"no run carries marker(s) {unknown}; they carry {sorted(known)}"
            )
    records = [
        Record(str(run_id), found[run_id][0].architecture or "-", outcome, found[run_id][1])
        for run_id, outcome in body.outcomes.items()
    ]
    try:
        result = backtest(records, body.markers, n_boot=body.n_boot, seed=body.seed)
    except ValueError as exc:
        raise ApiError(422, "invalid_backtest", str(exc)) from None
    return BacktestOut.model_validate(result.to_dict())
