"""/compare highlights a marker only beyond its noise: the Welch test on the stored stds of every marker
(GLUE's and the others', ``core.markers.compute``), and never a marker stored without a std."""

from __future__ import annotations

from typing import Any

import numpy as np
from scipy import stats

from tests.integration.stored_runs import stored_run
from zootriage.app.db.session import session_scope
from zootriage.app.services.compare import Cell, compare_runs
from zootriage.core.markers import list_markers
from zootriage.core.noise import NO_NOISE_ESTIMATE

REPEATS = 5  # the stored runs' protocol (tests.integration.stored_runs.PROTOCOL)


def _second_cells(
    database_url: str, runs: list[Any], stds: list[Any], prefix: str = "run"
) -> dict[str, Cell]:
    ids = [
        stored_run(database_url, f"{prefix}-{i}", m, stds=s)
        for i, (m, s) in enumerate(zip(runs, stds, strict=True))
    ]
    with session_scope(database_url) as session:
        compared = compare_runs(session, ids, ("dimension", "utilization"))
    return {row.name: row.cells[1] for row in compared.rows}


def _welch_p(first: float, second: float, std: float) -> float:
    return float(
        stats.ttest_ind_from_stats(second, std, REPEATS, first, std, REPEATS, equal_var=False).pvalue
    )


def test_highlighting_uses_each_markers_noise_and_never_a_marker_without_one(clean_db: str) -> None:
    first = {"dimension": 1.0, "utilization": 0.40, "id_accuracy": 0.90, "logme": 0.1, "nc1": 2.0}
    second = {"dimension": 1.1, "utilization": 0.401, "id_accuracy": 0.95, "logme": 5.0, "nc1": 2.0}
    stds: dict[str, float | None] = {
        "dimension": 0.001,
        "utilization": 0.01,
        "id_accuracy": 0.002,
        "logme": None,
        "nc1": None,
    }
    cells = _second_cells(clean_db, [first, second], [stds, stds])
    for name in ("dimension", "utilization", "id_accuracy"):
        std = stds[name]
        assert std is not None
        p = _welch_p(first[name], second[name], std)
        assert cells[name].beyond_noise == (p < 0.05), name
        assert f"p={p:.3g}" in cells[name].reason
    assert cells["dimension"].beyond_noise and cells["id_accuracy"].beyond_noise
    assert not cells["utilization"].beyond_noise  # 0.001 apart, std 0.01
    for name in ("logme", "nc1"):  # a difference of 4.9 without a std is no evidence
        assert not cells[name].beyond_noise and cells[name].reason == NO_NOISE_ESTIMATE
    # The same accuracy difference under a larger noise is not highlighted.
    noisy = {**stds, "id_accuracy": 0.1}
    assert not _second_cells(clean_db, [first, second], [noisy, noisy], "noisy")["id_accuracy"].beyond_noise


def test_a_model_against_itself_is_highlighted_about_five_percent_of_the_time(clean_db: str) -> None:
    """Ten runs of one model: every marker's stored value is the mean of 5 normal repeats around its
    truth and its std their sample std (what a run stores). At 95% the Welch test flags about 5% of
    the 9 × markers cells against the first run."""
    rng = np.random.default_rng(7)
    names = [spec.name for spec in list_markers()]
    truth = {name: (rng.uniform(0.5, 5.0), rng.uniform(0.01, 0.2)) for name in names}
    runs, stds = [], []
    for _ in range(10):
        draws = {name: rng.normal(mean, sigma, REPEATS) for name, (mean, sigma) in truth.items()}
        runs.append({name: float(d.mean()) for name, d in draws.items()})
        stds.append({name: float(d.std(ddof=1)) for name, d in draws.items()})
    ids = [
        stored_run(clean_db, f"seed-{i}", m, stds=s) for i, (m, s) in enumerate(zip(runs, stds, strict=True))
    ]
    with session_scope(clean_db) as session:
        compared = compare_runs(session, ids, ("dimension", "utilization"))
    flagged = [cell.beyond_noise for row in compared.rows for cell in row.cells[1:]]
    assert len(flagged) == 9 * len(names)
    assert 0.01 <= np.mean(flagged) <= 0.10
