"""Every command that scores exposes the same scoring options, declared once
(``app.cli.scoring_options``), and sends only the ones given."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any, get_type_hints

import pytest
import typer.main

from zootriage.app.cli import app, client, score, sweep
from zootriage.app.cli import scoring_options as declared
from zootriage.app.cli.scoring_options import OPTIONS, Scoring

ALIASES = {
    "dataset": declared.Dataset,
    "classes": declared.Classes,
    "per_class": declared.PerClass,
    "split": declared.Split,
    "seed": declared.Seed,
    "n_t": declared.NT,
    "points_per_class": declared.PointsPerClass,
    "repeats": declared.Repeats,
}

SCORING_COMMANDS = (("submit",), ("recommend",), ("rank",), ("gate",), ("score",), ("sweep", "start"))


def _command(path: tuple[str, ...]) -> Any:
    """The click command behind ``zootriage PATH`` (typer ships its own click: looked up by attribute)."""
    command: Any = typer.main.get_command(app)
    for name in path:
        assert name in command.commands, f"no command {' '.join(path)}"
        command = command.commands[name]
    return command


def _declaration(param: Any) -> tuple[Any, ...]:
    """What a user sees of an option."""
    assert param.param_type_name == "option"
    return (tuple(param.opts), param.help, param.default, param.required, param.min, param.bare_type())


def test_every_scoring_command_declares_the_same_options() -> None:
    declared = {}
    for path in SCORING_COMMANDS:
        params = {p.name: p for p in _command(path).params}
        assert set(OPTIONS) <= set(params), f"{' '.join(path)} lacks {set(OPTIONS) - set(params)}"
        declared[path] = {name: _declaration(params[name]) for name in OPTIONS}
    first = declared[SCORING_COMMANDS[0]]
    for path, options in declared.items():
        assert options == first, f"{' '.join(path)} declares its scoring options differently"
    assert first["n_t"][0] == ("--n-t",) and first["dataset"][3] is True
    assert all(first[name][2] is None for name in OPTIONS if name != "dataset")


@pytest.mark.parametrize(
    "function", [client.submit, client.recommend, client.rank, client.gate, score.score, sweep.start]
)
def test_each_command_takes_the_one_declaration(function: Callable[..., None]) -> None:
    hints = get_type_hints(function, include_extras=True)
    for name in OPTIONS:
        assert hints[name] is ALIASES[name], f"{function.__name__} declares --{name} itself"
    assert all(inspect.signature(function).parameters[name].default is None for name in OPTIONS[1:])


def test_only_the_given_options_are_sent() -> None:
    bare = Scoring("builtin:digits")
    assert bare.body() == {
        "dataset": {"source": "builtin", "name": "digits"}, "sampling": {}, "protocol": {}
    }
    assert bare.query() == {"dataset": "builtin:digits"}
    given = Scoring("builtin:digits", classes=3, per_class=20, seed=7, n_t=30, repeats=2)
    assert given.body()["sampling"] == {"classes": 3, "seed": 7, "per_class": 20}
    assert given.body()["protocol"] == {"n_t": 30, "seed": 7, "repeats": 2}
    assert given.query() == {
        "dataset": "builtin:digits", "classes": 3, "seed": 7, "per_class": 20, "n_t": 30, "repeats": 2
    }


def test_per_class_zero_means_every_image() -> None:
    every = Scoring("builtin:digits", per_class=0)
    assert every.sampling() == {"per_class": None}
    with pytest.raises(ValueError, match="every image"):
        every.query()
