"""Project and alias names are slugs that read one way in a path, a query and ``alias:NAME``; a gate's
baseline may be an alias, its candidate not."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from zootriage.app.project_names import SLUG_CHARS, BadSlug, check_alias_name, check_project_name
from zootriage.app.schemas.triage import AliasRef, GateRequest

BODY = {"dataset": {"source": "builtin", "name": "digits"}, "rules": ["id_accuracy: max_drop 0.01"]}
RUN = {"source": "run", "id": "6f1c2a3b-0000-4000-8000-000000000000"}


@pytest.mark.parametrize("name", ["default", "vision", "team-a.v2", "0day", "a_b", "x" * SLUG_CHARS])
def test_slugs_are_accepted(name: str) -> None:
    assert check_project_name(name) == name and check_alias_name(name) == name


@pytest.mark.parametrize(
    "name", ["", "Vision", "has space", "-lead", ".hidden", "a/b", "é", "x" * (SLUG_CHARS + 1)]
)
def test_other_names_are_refused_with_the_grammar(name: str) -> None:
    with pytest.raises(BadSlug, match="a lower-case letter or digit"):
        check_project_name(name)


def test_a_gate_baseline_may_be_an_alias_and_a_candidate_may_not() -> None:
    body = GateRequest.model_validate(
        {**BODY, "candidate": RUN, "baseline": {"source": "alias", "name": "prod"}}
    )
    assert body.baseline == AliasRef(name="prod")
    with pytest.raises(ValidationError, match="an alias names a baseline"):
        GateRequest.model_validate(
            {**BODY, "candidate": {"source": "alias", "name": "prod"}, "baseline": RUN}
        )
    with pytest.raises(ValidationError):
        GateRequest.model_validate(
            {**BODY, "candidate": RUN, "baseline": {"source": "alias", "name": "Bad Name"}}
        )
