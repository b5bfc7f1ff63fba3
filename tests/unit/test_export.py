"""``zootriage export`` on a real trained model (ccexam's MNIST CNN): the .pt2 it writes passes the
upload's static check, describes itself, and scores with its own preprocessing; a plain export scores
with the [0, 1] fallback and says so."""

from __future__ import annotations

import sysconfig
from pathlib import Path

import pytest
import torch
from typer.testing import CliRunner

from zootriage.app.cli import app
from zootriage.core.data.refs import Sampling, parse_dataset_ref
from zootriage.core.markers import Protocol
from zootriage.core.scoring import score
from zootriage.core.zoo.archive_check import check_file, program_extra
from zootriage.core.zoo.exporting import export_program
from zootriage.core.zoo.program_metadata import METADATA_FILE, ProgramMetadata, parse_metadata
from zootriage.core.zoo.programs import NO_PREPROCESS
from zootriage.core.zoo.refs import parse_model_ref

WEIGHTS = Path(sysconfig.get_paths()["purelib"]) / "ccexam" / "weights" / "mnist.pth"
QUICK = Protocol(points_per_class=10, n_t=50, seed=0)
FACTORIES = """
from ccexam.models import MNISTNet
from tests.conftest import LeNet5


def mnist_net():
    return MNISTNet(28)


def lenet():
    return LeNet5()


def not_a_module():
    return 42
"""


@pytest.fixture
def factories(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The user's own code, in the folder they run the command from."""
    (tmp_path / "user_nets.py").write_text(FACTORIES)
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(Path(__file__).resolve().parents[2]))  # tests.conftest for LeNet5
    return tmp_path


def export(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(app, ["export", *args])
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    return result.exit_code, result.output


def test_an_exported_program_passes_the_upload_check_and_scores_as_described(
    factories: Path, tmp_path: Path
) -> None:
    out = tmp_path / "mnist.pt2"
    code, output = export(
        "user_nets:mnist_net", "--weights", str(WEIGHTS), "--preset", "mnist", "--label-space", "digits",
        "--input-shape", "1,28,28", "--name", "ccexam mnist", "--out", str(out),
    )
    assert code == 0, output
    check_file(out, out.name)
    saved = parse_metadata(program_extra(out, out.name, METADATA_FILE), out.name)
    assert (saved.architecture, saved.name, saved.label_space) == ("MNISTNet", "ccexam mnist", "digits")
    assert saved.preprocess is not None and saved.preprocess.resize is None
    assert saved.preprocess.mean == (0.1307,)

    result = score(parse_model_ref(f"ckpt:{out}"), parse_dataset_ref("builtin:mnist"),
                   Sampling(classes=3, per_class=10, seed=0), QUICK)
    assert result.model.architecture == "MNISTNet" and result.model.warnings == []
    assert result.markers["id_accuracy"].value is not None and result.markers["id_accuracy"].value >= 0.9


def test_a_plain_export_is_scored_with_a_warning(tmp_path: Path) -> None:
    from ccexam.models import MNISTNet

    torch.manual_seed(0)  # the untrained network's weights, so its features are the same every run
    plain = export_program(MNISTNet(28), (1, 28, 28), ProgramMetadata(), tmp_path / "plain.pt2")
    result = score(parse_model_ref(f"ckpt:{plain}"), parse_dataset_ref("builtin:mnist"),
                   Sampling(classes=2, per_class=10, seed=0), QUICK)
    assert list(result.model.warnings) == [NO_PREPROCESS]
    assert result.model.architecture == "torch.export"


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["user_nets:lenet", "--preset", "mnist"], "does not fit LeNet5: missing keys"),
        (["user_nets:lenet", "--preset", "mnist"], "mnist.pth"),
        (["user_nets:not_a_module", "--preset", "mnist"], "not a torch nn.Module"),
        (["user_nets:nothing", "--preset", "mnist"], "no callable 'nothing'"),
        (["no_such_module:f", "--preset", "mnist"], "cannot import no_such_module"),
        (["user_nets:mnist_net", "--preset", "mnist", "--input-shape", "3,28,28"], "(1, 28, 28)"),
        (["user_nets:mnist_net", "--preset", "cifar"], "one of ['imagenet', 'mnist']"),
        (["user_nets:mnist_net"], "exactly one of --preprocess"),
        (["user_nets:mnist_net", "--preprocess", '{"crop": [0, 0]}'], "invalid --preprocess"),
        (["user_nets:mnist_net", "--preset", "mnist", "--name", " x"], "--name"),
        (["user_nets:mnist_net", "--preset", "mnist", "--input-shape", "1,28"], "expected C,H,W"),
    ],
)
def test_bad_exports_exit_2_with_one_line(
    factories: Path, tmp_path: Path, args: list[str], says: str
) -> None:
    out = tmp_path / "bad.pt2"
    code, output = export(*args, "--weights", str(WEIGHTS), "--out", str(out))
    assert code == 2 and says in output, output
    assert "Traceback" not in output and not out.exists()
