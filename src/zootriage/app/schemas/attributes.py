"""Reading a core result into a response model by attribute, with the fields only a service knows.

``Model.model_validate(Attributes(result, rule=used), from_attributes=True)`` reads every field of
``Model`` from ``result`` by name (its properties included), except those given here: one pass, no
field copied by hand, and a field the core result renames or drops fails validation instead of
silently going missing.
"""

from __future__ import annotations

from typing import Any


class Attributes:
    """``obj``'s attributes, with ``given`` ones in front of them."""

    def __init__(self, obj: object, **given: Any) -> None:
        self._obj = obj
        self._given = given

    def __getattr__(self, name: str) -> Any:
        given = self.__dict__["_given"]
        return given[name] if name in given else getattr(self.__dict__["_obj"], name)
