"""Seeded synthetic manifolds with published GLUE reference values (docs/method.md, "Checks").

Running ``python -m zootriage.core.examples`` analyses both examples under both centerings and prints
them next to the reference table.
"""

from __future__ import annotations

import numpy as np

# (example, centering) → (α, N_crit, N_crit's Monte-Carlo error, D_eff, R_eff, Ψ_eff, center_alignment,
# α_sim), from docs/method.md (n_t = 2000, one-vs-rest).
REFERENCE: dict[tuple[str, str], tuple[float, ...]] = {
    ("A", "none"): (0.666, 6.01, 0.09, 3.39, 0.460, 0.393, 0.121, 0.571),
    ("A", "global"): (0.445, 9.00, 0.11, 3.92, 0.719, 0.593, 0.330, 0.400),
    ("B", "none"): (1.383, 2.89, 0.06, 1.10, 0.284, 0.113, 0.135, 1.333),
    ("B", "global"): (1.217, 3.29, 0.06, 1.15, 0.463, 0.247, 0.330, 1.000),
}
REFERENCE_FIELDS = (
    "capacity",
    "n_crit",
    "n_crit_sem",
    "dimension",
    "radius",
    "utilization",
    "center_alignment",
    "alpha_sim",
)


def gaussian_manifolds(
    seed: int,
    n_classes: int = 4,
    per_class: int = 20,
    dim: int = 50,
    radius: float = 0.5,
    intrinsic: int | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Unit-norm random centres plus isotropic noise of total radius ``radius``; with ``intrinsic``
    = d the noise of each class lies in its own random d-dimensional subspace. Returns
    (features (P·M, N), labels (P·M,)) exactly as GLUE.md's examples A (seed 0) and B (seed 1, d = 2)."""
    rng = np.random.default_rng(seed)
    centers = rng.standard_normal((n_classes, dim))
    centers /= np.linalg.norm(centers, axis=1, keepdims=True)
    if intrinsic is None:
        x = centers[:, None, :] + rng.standard_normal((n_classes, per_class, dim)) * (radius / np.sqrt(dim))
    else:
        x = np.empty((n_classes, per_class, dim))
        for p in range(n_classes):
            basis, _ = np.linalg.qr(rng.standard_normal((dim, intrinsic)))
            noise = rng.standard_normal((per_class, intrinsic)) * (radius / np.sqrt(intrinsic))
            x[p] = centers[p] + noise @ basis.T
    return x.reshape(n_classes * per_class, dim), np.repeat(np.arange(n_classes), per_class)


def example(name: str) -> tuple[np.ndarray, np.ndarray]:
    """Example "A" (seed 0, radius 0.5, full-dimensional) or "B" (seed 1, radius 0.2, 2-dim classes)."""
    if name == "A":
        return gaussian_manifolds(0, radius=0.5)
    if name == "B":
        return gaussian_manifolds(1, radius=0.2, intrinsic=2)
    raise ValueError(f"unknown example {name!r}; known: A, B")


def relu_like(
    seed: int = 0, n_classes: int = 10, per_class: int = 50, dim: int = 512
) -> tuple[np.ndarray, np.ndarray]:
    """Non-negative, sparse class clouds shaped like a ReLU network's penultimate features."""
    rng = np.random.default_rng(seed)
    centers = np.abs(rng.standard_normal((n_classes, dim)))
    x = np.maximum(0.0, centers[:, None, :] + rng.standard_normal((n_classes, per_class, dim)) - 0.5)
    return x.reshape(n_classes * per_class, dim), np.repeat(np.arange(n_classes), per_class)


def main() -> None:
    from zootriage.core.glue import analyze

    print(f"{'example':<8}{'centering':<10}{'marker':<18}{'ours':>10}{'reference':>11}")
    for (name, centering), ref in REFERENCE.items():
        x, y = example(name)
        res = analyze(x, y, n_t=2000, centering=centering).to_dict()  # type: ignore[arg-type]
        for field, value in zip(REFERENCE_FIELDS, ref, strict=True):
            if field in res and field != "n_crit_sem":
                print(f"{name:<8}{centering:<10}{field:<18}{res[field]:>10.3f}{value:>11.3f}")


if __name__ == "__main__":
    main()
