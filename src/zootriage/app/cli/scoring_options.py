"""The scoring options, declared once: what data a command scores on and how (``--dataset``,
``--classes``, ``--per-class``, ``--split``, ``--seed``, ``--n-t``, ``--points-per-class``,
``--repeats``), for every command that scores or asks the service to (``submit``, ``recommend``,
``rank``, ``gate``, ``sweep start`` and the local ``score``). ``tests/unit/test_cli_scoring_options.py``
checks that each of them exposes exactly these options, declared alike.

Every option but ``--dataset`` defaults to None, "not given": the service then applies the defaults of
``core.protocol.Protocol`` and ``core.data.refs.Sampling`` (the help names them), the local ``score``
the same ones, and a gate against a stored run (``run:ID``) that run's own. ``Scoring`` holds the given
values and writes them as a request body or a query. Light: typer only (the dataset reference is
parsed with ``core.data.refs``, pydantic only, when a body is written).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any

import typer

OPTIONS = ("dataset", "classes", "per_class", "split", "seed", "n_t", "points_per_class", "repeats")
DATASET_HELP = (
    "builtin:NAME (mnist, animal-mnist, digits, foolbox-imagenet), folder:PATH, torchvision:CLASS:PATH or "
    "archive:PATH, paths under the data roots (the server's; --data-root for score), or a JSON object"
)
STORED = "; a gate's run:ID side: its own"

Dataset = Annotated[str, typer.Option(help=DATASET_HELP)]
Classes = Annotated[int | None, typer.Option(help="classes to sample (default: all)")]
PerClass = Annotated[
    int | None,
    typer.Option(
        help="images per class (default: points per class × repeats, up to each class; 0: every image)"
    ),
]
Split = Annotated[str | None, typer.Option(help="dataset split (default: the dataset's own)")]
Seed = Annotated[
    int | None, typer.Option(help=f"seed of the sampling and of the markers (default: 0{STORED})")
]
NT = Annotated[int | None, typer.Option("--n-t", help=f"GLUE draws (default: 1000{STORED})")]
PointsPerClass = Annotated[int | None, typer.Option(help=f"GLUE points per class (default: 50{STORED})")]
Repeats = Annotated[
    int | None,
    typer.Option(
        min=1,
        help="GLUE repeats (default: 5): markers get a std and decisions must beat it; 1 gives no noise "
        "estimate, so geometry never decides",
    ),
]


@dataclass(frozen=True)
class Scoring:
    """The scoring options of one command, None where not given."""

    dataset: str
    classes: int | None = None
    per_class: int | None = None
    split: str | None = None
    seed: int | None = None
    n_t: int | None = None
    points_per_class: int | None = None
    repeats: int | None = None

    def sampling(self) -> dict[str, Any]:
        """``core.data.refs.Sampling``'s fields as given; ``--per-class 0`` is an explicit null (every
        image), an absent one lets the service size the sample for the repeats."""
        given: dict[str, Any] = {"classes": self.classes, "seed": self.seed, "split": self.split}
        sampling = {k: v for k, v in given.items() if v is not None}
        if self.per_class is not None:
            sampling["per_class"] = self.per_class or None
        return sampling

    def protocol(self) -> dict[str, Any]:
        """``core.protocol.Protocol``'s fields as given (the seed is the sampling's too)."""
        given = {"n_t": self.n_t, "seed": self.seed, "points_per_class": self.points_per_class}
        given["repeats"] = self.repeats
        return {k: v for k, v in given.items() if v is not None}

    def body(self) -> dict[str, Any]:
        """The ``dataset``, ``sampling`` and ``protocol`` of a JSON request body."""
        from zootriage.core.data.refs import parse_dataset_ref

        dataset = parse_dataset_ref(self.dataset).model_dump(mode="json")
        return {"dataset": dataset, "sampling": self.sampling(), "protocol": self.protocol()}

    def query(self) -> dict[str, Any]:
        """The same as query parameters (``/v1/recommendations``), which cannot ask for every image."""
        if self.per_class == 0:
            raise ValueError("--per-class 0 (every image) is not available here; give a number of images")
        query = {"dataset": self.dataset, **self.sampling(), **self.protocol()}
        return {k: v for k, v in query.items() if v is not None}
