"""Dependencies shared by the routers, as ``Annotated`` aliases so signatures stay short."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Annotated

from fastapi import Depends, Request, Security
from fastapi.security import APIKeyHeader
from sqlalchemy.orm import Session

from app.api.errors import ApiError
from app.api_keys import hash_key, key_is_valid, keys_configured
from app.db.session import get_sessionmaker
from app.settings import Settings


def get_settings(request: Request) -> Settings:
    settings: Settings = request.app.state.settings
    return settings


SettingsDep = Annotated[Settings, Depends(get_settings)]


def get_session(settings: SettingsDep) -> Iterator[Session]:
    """A session per request; routes commit explicitly, anything left open is rolled back."""
    with get_sessionmaker(settings.effective_database_url)() as session:
        yield session


SessionDep = Annotated[Session, Depends(get_session)]

_api_key_header = APIKeyHeader(name="X-API-Key", auto_error=False)


def require_write_access(
    session: SessionDep, settings: SettingsDep, key: Annotated[str | None, Security(_api_key_header)]
) -> None:
    """Writes are open until a key is configured (in settings or created by the command); from then
    on they need a valid ``X-API-Key``."""
    if key is not None and (hash_key(key) in settings.api_key_hashes or key_is_valid(session, key)):
        return
    if not settings.api_key_hashes and not keys_configured(session):
        return
    raise ApiError(401, "unauthorized", "a valid X-API-Key header is required for this endpoint")


WriteAccess = Annotated[None, Depends(require_write_access)]
