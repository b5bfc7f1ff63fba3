"""One extraction pass: batching, worker processes and the progress callback change nothing."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from zootriage.core.data.fitting import FittedImages
from zootriage.core.data.open import open_dataset
from zootriage.core.data.refs import Sampling, parse_dataset_ref
from zootriage.core.data.sampling import sample
from zootriage.core.features import extract
from zootriage.core.zoo.loader import load_model
from zootriage.core.zoo.refs import parse_model_ref


@pytest.fixture(scope="module")
def ccexam_on_mnist(digit_programs: dict[str, Path]):  # type: ignore[no-untyped-def]
    model = load_model(parse_model_ref(f"ckpt:{digit_programs['ccexam']}"))
    images = open_dataset(parse_dataset_ref("builtin:mnist"))
    chosen = sample(images, Sampling(classes=5, per_class=20, seed=2))
    return model, FittedImages(images, chosen.indices, model.preprocess), images.labels[chosen.indices]


def test_batches_and_workers_do_not_change_results(ccexam_on_mnist) -> None:  # type: ignore[no-untyped-def]
    model, dataset, labels = ccexam_on_mnist
    seen: list[tuple[str, int, int]] = []
    one = extract(model.module, dataset, model.preprocess, batch_size=7, num_workers=0,
                  progress=lambda *event: seen.append(event))
    two = extract(model.module, dataset, model.preprocess, batch_size=64, num_workers=2)
    np.testing.assert_allclose(one.features, two.features, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(one.logits, two.logits, rtol=1e-5, atol=1e-4)
    assert np.array_equal(one.labels, labels) and np.array_equal(two.labels, labels)
    assert seen[0] == ("extract", 0, 100) and seen[-1] == ("extract", 100, 100)
    assert [done for _, done, _ in seen] == sorted(done for _, done, _ in seen) and len(seen) == 16
    assert one.features.dtype == np.float32 and one.features.shape == (100, 128)
    assert (one.features >= 0).all() and (one.features > 0).mean() > 0.05  # post-ReLU activations


def test_accuracy_on_the_sample(ccexam_on_mnist) -> None:  # type: ignore[no-untyped-def]
    model, dataset, labels = ccexam_on_mnist
    out = extract(model.module, dataset, model.preprocess, batch_size=50, num_workers=0)
    assert (out.logits.argmax(1) == labels).mean() >= 0.97


def test_no_worker_processes_inside_a_daemon(monkeypatch: pytest.MonkeyPatch) -> None:
    import multiprocessing

    import torch

    from zootriage.core.features import default_workers

    assert default_workers(torch.device("cpu")) >= 1
    monkeypatch.setattr(multiprocessing.current_process(), "daemon", True)  # as in a Celery prefork child
    assert default_workers(torch.device("cpu")) == 0
