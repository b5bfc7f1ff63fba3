"""Dependencies shared by the routers, as ``Annotated`` aliases so signatures stay short."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from typing import Annotated

from fastapi import Depends, Request, Security
from fastapi.security import APIKeyHeader
from sqlalchemy.orm import Session

from zootriage.app.access import Rule, metrics_rule, read_rule, write_rule
from zootriage.app.api.capacity import DbSlots
from zootriage.app.api.errors import ApiError
from zootriage.app.api_keys import Caller, Scope, authenticate, keys_configured
from zootriage.app.db.session import get_sessionmaker
from zootriage.app.settings import Settings


async def app_settings(request: Request) -> Settings:
    """The settings this app was created with (``create_app``), not the environment's
    (``app.settings.get_settings``): tests and the embedded default build apps with their own."""
    settings: Settings = request.app.state.settings
    return settings


SettingsDep = Annotated[Settings, Depends(app_settings)]


async def db_slot(request: Request) -> AsyncIterator[None]:
    """Wait (briefly) for a database slot before any thread or connection is taken; see capacity."""
    slots: DbSlots = request.app.state.db_slots
    async with slots.hold():
        yield


def get_session(settings: SettingsDep, _: Annotated[None, Depends(db_slot)]) -> Iterator[Session]:
    """A session per request; routes commit explicitly, anything left open is rolled back."""
    with get_sessionmaker(settings.effective_database_url)() as session:
        yield session


SessionDep = Annotated[Session, Depends(get_session)]

_api_key_header = APIKeyHeader(name="X-API-Key", auto_error=False)


def get_caller(
    session: SessionDep, settings: SettingsDep, key: Annotated[str | None, Security(_api_key_header)]
) -> Caller | None:
    """The key's owner, or None without a key. A key that is presented must be valid, even where
    none is needed: a stale or revoked key is a mistake its user wants to hear about."""
    if key is None:
        return None
    caller = authenticate(session, key, settings.api_key_hashes)
    if caller is None:
        raise ApiError(401, "unauthorized", "the X-API-Key is not valid (unknown or revoked)")
    return caller


CallerDep = Annotated[Caller | None, Depends(get_caller)]


def _check(rule: Rule, needed: Scope, caller: Caller | None, session: Session, settings: Settings) -> None:
    if rule is Rule.open:
        return
    if caller is not None:
        if caller.may(needed):
            return
        raise ApiError(403, "forbidden", f"the API key {caller.name!r} lacks the {needed} scope")
    if rule is Rule.until_first_key and not keys_configured(session, settings.api_key_hashes):
        return
    raise ApiError(401, "unauthorized", f"an X-API-Key with the {needed} scope is required")


def require_read(caller: CallerDep, session: SessionDep, settings: SettingsDep) -> None:
    _check(read_rule(settings), Scope.read, caller, session, settings)


def require_write(caller: CallerDep, session: SessionDep, settings: SettingsDep) -> None:
    _check(write_rule(settings), Scope.write, caller, session, settings)


def require_admin(caller: CallerDep, session: SessionDep, settings: SettingsDep) -> None:
    _check(Rule.key, Scope.admin, caller, session, settings)


def require_metrics(caller: CallerDep, session: SessionDep, settings: SettingsDep) -> None:
    _check(metrics_rule(settings), Scope.read, caller, session, settings)


# A plain ``Depends`` (not an alias): every /v1 router is included with it, so no read route can miss it.
ReadAccess = Depends(require_read)
WriteAccess = Annotated[None, Depends(require_write)]
AdminAccess = Annotated[None, Depends(require_admin)]
MetricsAccess = Annotated[None, Depends(require_metrics)]
