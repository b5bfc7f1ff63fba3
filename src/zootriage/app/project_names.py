"""Project and alias names: short slugs (lower-case letters, digits, ``_ . -``) so that they read the
same in a URL path (``/v1/projects/{project}/aliases/{name}``), a query string, a CLI argument and a
``--baseline alias:NAME`` reference. Plain Python: the models and the CLI import it without the API."""

from __future__ import annotations

import re
from typing import Annotated

from pydantic import AfterValidator, Field

SLUG_CHARS = 64
DEFAULT_PROJECT = "default"
_SLUG = re.compile(rf"^[a-z0-9][a-z0-9_.\-]{{0,{SLUG_CHARS - 1}}}$")


class BadSlug(ValueError):
    """A project or alias name outside the grammar above."""


def check_slug(name: str, what: str = "a name") -> str:
    if not _SLUG.match(name):
        raise BadSlug(
            f"{what} {name[:40]!r}: a lower-case letter or digit, "
            f"then up to {SLUG_CHARS - 1} of a-z 0-9 _ . -"
        )
    return name


def check_project_name(name: str) -> str:
    return check_slug(name, "project")


def check_alias_name(name: str) -> str:
    return check_slug(name, "alias")


ProjectName = Annotated[str, Field(max_length=SLUG_CHARS), AfterValidator(check_project_name)]
AliasName = Annotated[str, Field(max_length=SLUG_CHARS), AfterValidator(check_alias_name)]
