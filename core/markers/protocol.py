"""The scoring protocol: every knob that changes a marker's value, stored with every run."""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields
from typing import Any, Literal, get_args

Centering = Literal["none", "global"]
Dichotomy = Literal["one_vs_rest", "first_vs_rest", "random"]
CENTERINGS: tuple[str, ...] = get_args(Centering)
# Five repeats: the smallest count whose Welch test resolves differences of a few percent in D_eff and
# Ψ_eff on real features; see docs/noise.md for the measurements (benchmarks/repeats_convergence.py).
DEFAULT_REPEATS = 5
DICHOTOMIES: tuple[str, ...] = get_args(Dichotomy)


def _check_int(name: str, value: object, minimum: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ValueError(f"protocol field {name!r} must be an int >= {minimum}, got {value!r}")


@dataclass(frozen=True)
class Protocol:
    """How markers are computed; two runs are comparable only under equal protocols.

    - ``points_per_class``: GLUE subsamples each class to at most this many points (paper: 50);
      ``None`` keeps every point.
    - ``n_t``: number of Gaussian samples t_k in GLUE's Monte-Carlo average.
    - ``seed``: seeds the per-class subsampling and the t_k draws.
    - ``centering``: ``"none"`` (raw features, the paper's default) or ``"global"`` (subtract the
      mean of all rows) before GLUE.
    - ``dichotomy``: GLUE's label draws, ``"one_vs_rest"`` (default), ``"first_vs_rest"`` (two
      classes) or ``"random"`` (i.i.d. signs; not a default, see docs/method.md).
    - ``repeats``: independent GLUE repeats (default ``DEFAULT_REPEATS``), on disjoint per-class
      subsets when the sample has repeats × points_per_class images per class
      (``core.glue_subsets``); geometry markers carry their standard deviation over them (inflated
      when the subsets overlap, not decidable when every repeat saw the same points). ``repeats=1``
      gives no noise estimate: its geometry markers never decide a verdict, a ranking or a gate.

    Fields are validated on construction; ``to_dict``/``from_dict`` round-trip through JSON.
    """

    points_per_class: int | None = 50
    n_t: int = 1000
    seed: int = 0
    centering: Centering = "none"
    dichotomy: Dichotomy = "one_vs_rest"
    repeats: int = DEFAULT_REPEATS

    def __post_init__(self) -> None:
        if self.points_per_class is not None:
            _check_int("points_per_class", self.points_per_class, 2)
        _check_int("n_t", self.n_t, 1)
        _check_int("seed", self.seed, 0)
        _check_int("repeats", self.repeats, 1)
        if self.centering not in CENTERINGS:
            raise ValueError(
                f"protocol field 'centering' must be one of {CENTERINGS}, got {self.centering!r}"
            )
        if self.dichotomy not in DICHOTOMIES:
            raise ValueError(
                f"protocol field 'dichotomy' must be one of {DICHOTOMIES}, got {self.dichotomy!r}"
            )

    def to_dict(self) -> dict[str, Any]:
        """Every field, JSON-serialisable."""
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Protocol:
        """Build a protocol from a mapping; missing fields take their defaults.

        Unknown keys raise ``ValueError`` naming them, so a stored protocol from another code
        version is never half-read.
        """
        if not isinstance(data, dict):
            raise ValueError(f"a protocol must be a dict, got {type(data).__name__}")
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise ValueError(f"unknown protocol field(s) {unknown}; known fields are {sorted(known)}")
        return cls(**data)
