"""Representation baselines against independent computations and closed forms."""

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from scipy.spatial.distance import pdist
from sklearn.metrics.pairwise import cosine_similarity

from zootriage.core.markers import MarkerUndefined
from zootriage.core.markers import representation as rep
from zootriage.core.markers.pairwise import mean_pairwise_angle, mean_pairwise_distance


@pytest.fixture
def blobs():
    rng = np.random.default_rng(0)
    labels = np.repeat(np.arange(4), 30)
    centres = rng.standard_normal((4, 12)) * 2.0
    features = centres[labels] + rng.standard_normal((120, 12)) * np.linspace(0.2, 1.5, 12)
    return features, labels


def test_participation_ratio_closed_form_spectrum():
    # Centred data with exactly known singular values: PR = (Σs²)² / Σs⁴.
    rng = np.random.default_rng(1)
    n, dim = 40, 6
    basis, _ = np.linalg.qr(np.column_stack([np.ones(n), rng.standard_normal((n, dim))]))
    u = basis[:, 1:]  # orthonormal and orthogonal to the all-ones vector: already centred
    s = np.array([5.0, 4.0, 2.0, 1.0, 0.5, 0.1])
    v, _ = np.linalg.qr(rng.standard_normal((dim, dim)))
    x = (u * s) @ v.T + 3.0
    assert rep.participation_ratio(features=x) == pytest.approx(np.sum(s**2) ** 2 / np.sum(s**4), rel=1e-10)


def test_participation_ratio_of_isotropic_gaussian_is_the_dimension():
    # Population PR = N; the sample estimate is N·n/(n+N+1) in expectation to first order.
    x = np.random.default_rng(2).standard_normal((20000, 16))
    assert rep.participation_ratio(features=x) == pytest.approx(16 * 20000 / (20000 + 17), rel=5e-3)


def test_participation_ratio_matches_numpy_cov(blobs):
    x, _ = blobs
    lam = np.linalg.eigvalsh(np.cov(x, rowvar=False))
    assert rep.participation_ratio(features=x) == pytest.approx(lam.sum() ** 2 / np.sum(lam**2), rel=1e-10)


def test_participation_ratio_wide_data_uses_the_small_gram():
    x = np.random.default_rng(3).standard_normal((10, 50))
    lam = np.linalg.eigvalsh(np.cov(x, rowvar=False))
    assert rep.participation_ratio(features=x) == pytest.approx(lam.sum() ** 2 / np.sum(lam**2), rel=1e-9)


def _nc1_explicit(x, labels):
    classes = np.unique(labels)
    mu_g = x.mean(axis=0)
    sw = np.zeros((x.shape[1], x.shape[1]))
    sb = np.zeros_like(sw)
    for c in classes:
        xc = x[labels == c]
        d = xc - xc.mean(axis=0)
        sw += d.T @ d
        m = (xc.mean(axis=0) - mu_g)[:, None]
        sb += m @ m.T
    sw /= x.shape[0]
    sb /= classes.size
    w, v = np.linalg.eigh(sb)
    keep = w > 1e-3 * w.max()
    sb_pinv = (v[:, keep] / w[keep]) @ v[:, keep].T
    return np.trace(sw @ sb_pinv) / classes.size


def test_nc1_matches_explicit_scatter_matrices(blobs):
    x, labels = blobs
    assert rep.nc1(features=x, labels=labels) == pytest.approx(_nc1_explicit(x, labels), rel=1e-9)


def test_nc1_cutoff_drops_tiny_between_class_directions():
    # Two well separated classes plus a third whose mean is almost on the line: Σ_B has a direction
    # with eigenvalue < 1e-3·λ_max that must be dropped, not inverted.
    rng = np.random.default_rng(4)
    labels = np.repeat(np.arange(3), 20)
    means = np.array([[10.0, 0, 0], [-10.0, 0, 0], [0.0, 0.01, 0]])
    x = means[labels] + rng.standard_normal((60, 3))
    assert rep.nc1(features=x, labels=labels) == pytest.approx(_nc1_explicit(x, labels), rel=1e-9)


def test_nc1_is_zero_for_collapsed_classes():
    labels = np.repeat(np.arange(5), 8)
    x = np.random.default_rng(5).standard_normal((5, 20))[labels]
    assert rep.nc1(features=x, labels=labels) == pytest.approx(0.0, abs=1e-20)


def test_numerical_rank_matches_svd_count():
    rng = np.random.default_rng(6)
    x = rng.standard_normal((80, 5)) @ rng.standard_normal((5, 30)) + 1e-6 * rng.standard_normal((80, 30))
    sigma = np.linalg.svd(x - x.mean(axis=0), compute_uv=False)
    expected = np.count_nonzero(sigma >= 1e-3 * sigma[0])
    assert expected == 5
    assert rep.numerical_rank(features=x) == expected


def test_numerical_rank_full_for_gaussian(blobs):
    assert rep.numerical_rank(features=blobs[0]) == 12


def test_activation_density_counts_entries_above_threshold():
    x = np.array([[0.0, 1e-7, 2e-6], [-3.0, 0.0, -1e-6]])
    assert rep.activation_density(features=x) == pytest.approx(2 / 6)


def test_mean_abs_covariance_matches_numpy_cov(blobs):
    x, _ = blobs
    cov = np.cov(x, rowvar=False)
    expected = np.abs(cov[~np.eye(12, dtype=bool)]).mean()
    assert rep.mean_abs_covariance(features=x) == pytest.approx(expected, rel=1e-12)
    # A block budget of one column at a time gives the same value.
    assert rep.mean_abs_covariance(features=x, max_block_bytes=8) == pytest.approx(expected, rel=1e-12)


def test_mean_distance_and_angle_match_scipy(blobs):
    x, _ = blobs
    assert rep.mean_distance(features=x) == pytest.approx(pdist(x).mean(), rel=1e-10)
    cos = cosine_similarity(x)[np.triu_indices(len(x), k=1)]
    assert rep.mean_angle(features=x) == pytest.approx(np.arccos(np.clip(cos, -1, 1)).mean(), rel=1e-10)


def test_within_class_versions_average_per_class(blobs):
    x, labels = blobs
    dist = np.mean([pdist(x[labels == c]).mean() for c in range(4)])
    ang = np.mean([np.arccos(1 - np.clip(pdist(x[labels == c], "cosine"), 0, 2)).mean() for c in range(4)])
    assert rep.within_class_distance(features=x, labels=labels) == pytest.approx(dist, rel=1e-10)
    assert rep.within_class_angle(features=x, labels=labels) == pytest.approx(ang, rel=1e-9)


def test_mean_angle_of_orthogonal_and_opposite_rows():
    x = np.array([[1.0, 0.0], [0.0, 2.0], [-3.0, 0.0]])
    # pairs: (0,1) π/2, (0,2) π, (1,2) π/2
    assert rep.mean_angle(features=x) == pytest.approx(2 * np.pi / 3, rel=1e-12)


@pytest.mark.parametrize("budget", [8, 8 * 50, 8 * 7 * 50, 2**30])
def test_chunking_does_not_change_pair_means(blobs, budget):
    x, _ = blobs
    assert mean_pairwise_distance(x, budget) == pytest.approx(pdist(x).mean(), rel=1e-10)
    assert mean_pairwise_angle(x, budget) == pytest.approx(np.arccos(1 - pdist(x, "cosine")).mean(), rel=1e-9)


def test_zero_rows_make_angles_undefined():
    x = np.array([[0.0, 0.0], [1.0, 0.0], [0.0, 1.0]])
    with pytest.raises(MarkerUndefined, match="1 row"):
        rep.mean_angle(features=x)


def test_constant_features():
    x = np.full((30, 4), 0.1)
    labels = np.repeat(np.arange(3), 10)
    with pytest.raises(MarkerUndefined, match="zero variance"):
        rep.participation_ratio(features=x)
    assert rep.numerical_rank(features=x) == 0
    assert rep.nc1(features=x, labels=labels) == 0.0
    assert rep.mean_abs_covariance(features=x) == pytest.approx(0.0, abs=1e-30)
    assert rep.mean_distance(features=x) == pytest.approx(0.0, abs=1e-12)
    assert rep.mean_angle(features=x) == pytest.approx(0.0, abs=1e-6)


def test_one_feature():
    rng = np.random.default_rng(8)
    x = rng.standard_normal((20, 1)) + 5.0
    labels = np.repeat([0, 1], 10)
    assert rep.participation_ratio(features=x) == pytest.approx(1.0)
    assert rep.numerical_rank(features=x) == 1
    assert rep.mean_distance(features=x) == pytest.approx(pdist(x).mean(), rel=1e-10)
    assert rep.nc1(features=x, labels=labels) == pytest.approx(_nc1_explicit(x, labels), rel=1e-9)
    with pytest.raises(MarkerUndefined, match="2 features"):
        rep.mean_abs_covariance(features=x)


def test_duplicate_rows_have_zero_distance_and_angle():
    rng = np.random.default_rng(9)
    x = np.repeat(rng.standard_normal((3, 8)) * 100 + 50, 2, axis=0)  # every row twice
    assert rep.mean_distance(features=x) == pytest.approx(pdist(x).mean(), rel=1e-9)
    assert rep.mean_angle(features=x) == pytest.approx(
        np.arccos(np.clip(1 - pdist(x, "cosine"), -1, 1)).mean(), abs=1e-7
    )


@pytest.mark.gpu
def test_chunked_markers_on_cuda_match_the_cpu_and_stay_within_the_block():
    # As test_pairwise_memory_on_the_cpu_is_bounded_by_the_block, for the device: with a 2 MB block the peak
    # stays a few MB above the 0.5 MB input, where a full n×n matrix would take 128 MB.
    x = np.random.default_rng(7).standard_normal((4000, 16))
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    base = torch.cuda.memory_allocated()
    gpu = [
        f(x, max_block_bytes=2 * 2**20, device="cuda") for f in (mean_pairwise_distance, mean_pairwise_angle)
    ]
    torch.cuda.synchronize()
    assert torch.cuda.max_memory_allocated() - base < 12 * 2**20
    cpu = [
        f(x, max_block_bytes=2 * 2**20, device="cpu") for f in (mean_pairwise_distance, mean_pairwise_angle)
    ]
    assert gpu == pytest.approx(cpu, rel=1e-9)
    assert rep.mean_abs_covariance(features=x, max_block_bytes=8 * 16 * 3, device="cuda") == pytest.approx(
        rep.mean_abs_covariance(features=x, device="cpu"), rel=1e-9
    )


_PEAK_RSS_SCRIPT = """
import re
from pathlib import Path

import numpy as np

from zootriage.core.markers.pairwise import mean_pairwise_angle, mean_pairwise_distance


def mib(field):
    return int(re.search(field + r":\\s+(\\d+) kB", Path("/proc/self/status").read_text()).group(1)) / 1024


def peak(x, budget):
    Path("/proc/self/clear_refs").write_text("5")  # the peak resident set restarts from the current one
    base = mib("VmRSS")
    mean_pairwise_distance(x, budget, device="cpu")
    mean_pairwise_angle(x, budget, device="cpu")
    return mib("VmHWM") - base


x = np.random.default_rng(7).standard_normal((4000, 16))
peak(x, 2 * 2**20)  # once for torch's lazy initialisation
print(peak(x, 2 * 2**20), peak(x, 2**30))
"""


@pytest.mark.skipif(not Path("/proc/self/clear_refs").exists(), reason="needs Linux's /proc/self/clear_refs")
def test_pairwise_memory_on_the_cpu_is_bounded_by_the_block():
    # tracemalloc does not see torch's allocations: measure the peak resident set of a fresh process,
    # with glibc returning every allocation above 128 KiB to the system when it is freed.
    env = {
        **os.environ,
        "MALLOC_MMAP_THRESHOLD_": "131072",
        "MALLOC_TRIM_THRESHOLD_": "0",
        "MALLOC_TOP_PAD_": "0",
    }
    out = subprocess.run(
        [sys.executable, "-c", _PEAK_RSS_SCRIPT],
        cwd=Path(__file__).resolve().parents[2],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    chunked, whole = map(float, out.stdout.split())
    assert chunked < 12  # MiB, with a 2 MiB block
    assert whole > 100  # one block of all 4000 rows: 128 MB, so the measurement does see torch's memory
