"""Names and tags that users give checkpoints, jobs and runs, and the label a candidate is shown by.

A name is free text for people (bounded, printable, no leading or trailing space). A tag is
``key=value`` in a small grammar, so that ``tag=key=value`` in a query string and ``k=v,k=v`` in a
form field parse one way only: keys are lower-case identifiers, values have no ``=``, ``,`` or spaces.
The label of a candidate is its name, else its uploaded file's name, else its short reference, and a
content hash is never shown longer than ``SHORT_HASH`` characters: people tell models apart by names.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Annotated, Any

from pydantic import AfterValidator, Field

if TYPE_CHECKING:  # app.db.models imports this module's bounds: it must not pull in core.zoo (torch)
    from zootriage.app.db.models import Run
    from zootriage.core.zoo.refs import AnyModelRef

NAME_CHARS = 128
TAG_KEY_CHARS = 32
TAG_VALUE_CHARS = 64
MAX_TAGS = 16
DESCRIPTION_CHARS = 2000
SHORT_HASH = 12
TAG_KEY = re.compile(rf"^[a-z][a-z0-9_.\-]{{0,{TAG_KEY_CHARS - 1}}}$")
TAG_VALUE = re.compile(rf"^[A-Za-z0-9_.:/+@\-]{{1,{TAG_VALUE_CHARS}}}$")
_HASH = re.compile(r"[0-9a-f]{64}")


class BadLabel(ValueError):
    """A name or tag outside the grammar above; the message says which rule it broke."""


def check_name(name: str) -> str:
    if not 1 <= len(name) <= NAME_CHARS:
        raise BadLabel(f"a name has 1 to {NAME_CHARS} characters")
    if not name.isprintable() or name != name.strip():
        raise BadLabel("a name is printable text without leading or trailing spaces")
    return name


def check_description(text: str) -> str:
    """A run's free-text description: 1 to ``DESCRIPTION_CHARS`` characters, printable apart from line
    breaks and tabs, not blank (``null`` removes a description)."""
    if not 1 <= len(text) <= DESCRIPTION_CHARS:
        raise BadLabel(f"a description has 1 to {DESCRIPTION_CHARS} characters")
    if not text.strip():
        raise BadLabel("a description is not blank (null removes it)")
    if not all(char.isprintable() or char in "\n\r\t" for char in text):
        raise BadLabel("a description is printable text (line breaks and tabs allowed)")
    return text


def check_tags(tags: dict[str, str]) -> dict[str, str]:
    if len(tags) > MAX_TAGS:
        raise BadLabel(f"at most {MAX_TAGS} tags")
    for key, value in tags.items():
        if not TAG_KEY.match(key):
            raise BadLabel(
                f"tag key {key[:40]!r}: a lower-case letter, then up to {TAG_KEY_CHARS - 1} of a-z 0-9 _ . -"
            )
        if not TAG_VALUE.match(value):
            raise BadLabel(
                f"tag {key}: the value has 1 to {TAG_VALUE_CHARS} of A-Z a-z 0-9 _ . : / + @ -"
            )
    return tags


def parse_tag(text: str) -> tuple[str, str]:
    """``key=value`` (one tag, as in a ``tag=`` query parameter)."""
    key, sep, value = text.partition("=")
    if not sep:
        raise BadLabel(f"tag {text[:40]!r} is not key=value")
    check_tags({key: value})
    return key, value


def parse_tags(text: str) -> dict[str, str]:
    """``k=v,k2=v2`` (a form field); a key given twice is refused rather than one silently kept."""
    tags: dict[str, str] = {}
    for item in filter(None, (part.strip() for part in text.split(","))):
        key, value = parse_tag(item)
        if key in tags:
            raise BadLabel(f"tag key {key!r} is given twice")
        tags[key] = value
    return check_tags(tags)


Name = Annotated[str, Field(max_length=NAME_CHARS), AfterValidator(check_name)]
Tags = Annotated[dict[str, str], Field(max_length=MAX_TAGS), AfterValidator(check_tags)]
Description = Annotated[str, Field(max_length=DESCRIPTION_CHARS), AfterValidator(check_description)]


def short_hashes(text: str) -> str:
    """Every 64-character hex hash in ``text`` cut to its first ``SHORT_HASH`` characters."""
    return _HASH.sub(lambda m: m.group(0)[:SHORT_HASH], text)


def reference_of(ref: AnyModelRef) -> str:
    """The short string a user would type for ``ref`` (see ``core.zoo.refs``), hashes shortened."""
    from zootriage.core.zoo.refs import TimmRef, TorchvisionRef

    if isinstance(ref, TorchvisionRef):
        return f"tv:{ref.arch}.{ref.weights}"
    if isinstance(ref, TimmRef):
        return f"timm:{ref.name}"
    if ref.library is None:
        return short_hashes(f"ckpt:{ref.path}")
    return short_hashes(f"{'tv' if ref.library == 'torchvision' else 'timm'}:{ref.architecture}@{ref.path}")


def stored_reference(model_ref: Mapping[str, Any]) -> str:
    """The short reference of a stored run's model; a record older than today's reference grammar is
    named by its source and path or name as stored."""
    from zootriage.core.errors import BadReference
    from zootriage.core.zoo.refs import validate_model_ref

    try:
        return reference_of(validate_model_ref(dict(model_ref)))
    except BadReference:
        what = model_ref.get("path") or model_ref.get("name") or model_ref.get("arch") or "?"
        return short_hashes(f"{model_ref.get('source', 'model')}:{what}")


def run_label(run: Run, filenames: Mapping[str, str | None], name: str | None = None) -> str:
    """A stored run's label (``name``, when given, wins over the run's own); ``filenames`` maps upload
    ids (sha256) to the client's file names."""
    return name or run.name or filenames.get(run.weights_sha256) or stored_reference(run.model_ref)


def warnings_of(model_meta: Mapping[str, Any]) -> list[str]:
    return [str(w) for w in model_meta.get("warnings", [])]
