"""Study 3's run on a tiny grid (studies/tiny-confirmatory.toml, one architecture, task A): records carry
the recipe's v2 parts, the device and timings; a run interrupted between models or mid-training and
resumed gives the same records as an uninterrupted one; shards gather to the same records; and the
timing-only cost check projects and scales the plan's budget."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from zootriage.core.backtest.config import Study3Config, load_study3_config
from zootriage.core.backtest.study3_recipes import recipe_parts
from zootriage.core.backtest.study3_run import TIMING_KEYS, projection, run_study3, time_only

STUDIES = Path(__file__).resolve().parents[2] / "studies"
# The plan's timing table (seconds per epoch per image), "Budget, measured per-model cost".
PLAN_COSTS = {
    "bnres8-w8": 0.00047, "bnres14-w8": 0.00087, "bnres8-w12": 0.00099, "vgg-bn": 0.00071, "mlp-bn": 0.00008,
    "dwsep-bn": 0.00079, "vit-p7-d64-l4": 0.00115, "vit-p7-d64-l2": 0.00023, "vit-p4-d48-l2": 0.00046,
    "mixer-p7-d128-l2": 0.00033, "mixer-p4-d64-l2": 0.00034, "convmixer-d64-p4": 0.00032,
}  # fmt: skip


@pytest.fixture(scope="module")
def tiny() -> Study3Config:
    """One architecture, task A, and one draw of the few-shot probe (each draw is a probe fit, most of
    a tiny model's cost; the mean over draws is the same code for one draw as for two)."""
    config = load_study3_config(STUDIES / "tiny-confirmatory.toml")
    probe = config.probe.model_copy(update={"draws": 1})
    return config.model_copy(update={"archs": ["mlp-bn"], "tasks": [config.tasks[0]], "probe": probe})


def _untimed(models: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{k: v for k, v in m.items() if k not in TIMING_KEYS} for m in models]


@pytest.fixture(scope="module")
def reference_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("ref")


@pytest.fixture(scope="module")
def reference(tiny: Study3Config, reference_dir: Path) -> dict[str, Any]:
    run = run_study3(tiny, reference_dir, device="cpu", threads=1)
    assert run is not None
    return run


def test_records_carry_parts_device_and_timing(tiny: Study3Config, reference: dict[str, Any]) -> None:
    models = reference["models"]
    assert len(models) == 9 * 2
    parts = recipe_parts(tiny)
    live = [m for m in models if not m["diverged"]]
    assert live, "the tiny grid should train some models past 50 % train accuracy"
    for m in models:
        assert m["v2_parts"] == parts[m["recipe"]] and m["device"] == "cpu"
        assert m["wall_seconds"] > 0 and m["cpu_seconds"] >= 0
    for m in live:
        assert set(m["outcomes"]) == {"probe20", "probe", "fewshot_2"}
        assert 0 <= m["outcomes"]["probe20"] <= 1 and set(m["geometry"]) == {"none", "global"}
    assert [f["arch"] for f in reference["floors"]] == ["mlp-bn"]
    assert reference["probe"]["A"]["c"] in (0.1, 1.0)


def test_interrupted_runs_resume_to_the_same_records(
    tiny: Study3Config, reference: dict[str, Any], tmp_path: Path
) -> None:
    class Stop(Exception):
        pass

    def stop_after_three(name: str) -> None:
        if name.endswith("g-a0-l0-e0-s0"):
            raise Stop

    def stop_mid_training(message: str) -> None:
        if "g-a0-l1-e1-s1 epoch 2" in message:  # a 3-epoch recipe, checkpointed after epoch 2
            raise Stop

    with pytest.raises(Stop):
        run_study3(tiny, tmp_path, device="cpu", threads=1, after_model=stop_after_three)
    assert len(list((tmp_path / "models").glob("*.json"))) == 3
    with pytest.raises(Stop):
        run_study3(tiny, tmp_path, device="cpu", threads=1, progress=stop_mid_training)
    assert (tmp_path / "checkpoints" / "A-mlp-bn-g-a0-l1-e1-s1.pt").exists()
    assert not (tmp_path / "models" / "A-mlp-bn-g-a0-l1-e1-s1.json").exists()
    resumed = run_study3(tiny, tmp_path, device="cpu", threads=1)
    assert resumed is not None
    assert _untimed(resumed["models"]) == _untimed(reference["models"])
    assert resumed["floors"] == reference["floors"] and resumed["splits"] == reference["splits"]


def test_shards_gather_to_the_same_records(
    tiny: Study3Config, reference: dict[str, Any], reference_dir: Path, tmp_path: Path
) -> None:
    """Shard 2 of 2 trains its nine models as the straight run did; with the other shard's records in
    place (the reference's: training the missing models is the resume above) gathering trains nothing
    and gives the straight run's records."""
    assert run_study3(tiny, tmp_path, device="cpu", threads=1, shard=(2, 2)) is None
    mine = sorted((tmp_path / "models").glob("*.json"))
    assert len(mine) == 9
    straight = {m["name"]: m for m in _untimed(reference["models"])}
    for path in mine:
        (record,) = _untimed([json.loads(path.read_text())])
        assert record == straight[record["name"]]
    for path in (reference_dir / "models").glob("*.json"):
        if not (tmp_path / "models" / path.name).exists():
            shutil.copy(path, tmp_path / "models" / path.name)

    def trains_nothing(name: str) -> None:
        raise AssertionError(f"gathering trained {name}")

    gathered = run_study3(tiny, tmp_path, device="cpu", threads=1, after_model=trains_nothing)
    assert gathered is not None and _untimed(gathered["models"]) == _untimed(reference["models"])
    with pytest.raises(ValueError, match="shard must be"):
        run_study3(tiny, tmp_path, device="cpu", shard=(3, 2))


def test_another_config_in_the_same_folder_is_refused(tiny: Study3Config, tmp_path: Path) -> None:
    run_study3(tiny, tmp_path, device="cpu", threads=1, shard=(1, 100))
    with pytest.raises(ValueError, match="another config"):
        run_study3(tiny.model_copy(update={"seeds": [0]}), tmp_path, device="cpu", shard=(1, 100))


def test_projection_reproduces_the_plans_budget_and_scales_above_seven_hours() -> None:
    config = load_study3_config(STUDIES / "confirmatory.toml")
    costs = {t: dict(PLAN_COSTS) for t in ("A", "C")}
    sizes = {"A": 3000, "C": 3000}
    plan = projection(config, costs, sizes, threads=1)
    assert plan["trained_models"] == 648 and plan["floor_models"] == 72
    assert plan["training_cpu_hours"] == pytest.approx(3.45 + 0.17, abs=0.03)
    assert plan["projected_cpu_hours"] == pytest.approx(5.6, abs=0.05) and plan["epoch_factor"] == 1.0
    slow = projection(config, {t: {a: 3 * c for a, c in v.items()} for t, v in costs.items()}, sizes, 1)
    assert slow["projected_cpu_hours"] > 7.0 and 0 < slow["epoch_factor"] < 1
    rescaled = slow["training_cpu_hours"] * slow["epoch_factor"] + slow["measurement_cpu_hours"]
    assert rescaled == pytest.approx(7.0)
    assert slow["epoch_scale"] == pytest.approx(slow["epoch_factor"])


def test_time_only_trains_one_epoch_per_architecture_and_task() -> None:
    config = load_study3_config(STUDIES / "tiny-confirmatory.toml").model_copy(update={"archs": ["mlp-bn"]})
    timing = time_only(config, device="cpu", threads=1)
    assert set(timing["seconds_per_epoch_image"]) == {"A", "C"}
    assert timing["seconds_per_epoch_image"]["C"]["mlp-bn"] > 0
    assert timing["trained_models"] == 2 * 9 * 2 and timing["epoch_factor"] == 1.0
    assert timing["device"] == "cpu" and timing["projected_cpu_hours"] > 0
