"""``/v1/api-keys``: create, list and revoke keys; every route needs a key with the admin scope."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path, Query

from zootriage.app.api.deps import AdminAccess, SessionDep, SettingsDep
from zootriage.app.api.errors import ApiError, responses
from zootriage.app.api_keys import UnknownApiKey, create_api_key, list_api_keys, revoke_api_key
from zootriage.app.db.paging import split_page
from zootriage.app.schemas.api_keys import ApiKeyCreated, ApiKeyOut, ApiKeyPage, ApiKeyRequest
from zootriage.app.services.projects import check_projects_exist

router = APIRouter(prefix="/v1/api-keys", tags=["api-keys"])
KeyId = Annotated[int, Path(ge=1, le=2**62)]


@router.post("", status_code=201, response_model=ApiKeyCreated, responses=responses(401, 403, 422))
def create_key(body: ApiKeyRequest, session: SessionDep, _: AdminAccess) -> ApiKeyCreated:
    """A new key with the given scopes (limited to ``projects`` when given: 404 ``project_not_found``
    for one that does not exist); the response is the only place its secret ever appears."""
    projects = None if body.projects is None else frozenset(body.projects)
    if projects is not None:
        check_projects_exist(session, projects)
    issued = create_api_key(session, body.name, frozenset(body.scopes), projects)
    session.commit()
    return ApiKeyCreated(**ApiKeyOut.model_validate(issued.row).model_dump(), key=issued.key)


@router.get("", response_model=ApiKeyPage, responses=responses(401, 403, 422))
def list_keys(
    session: SessionDep,
    settings: SettingsDep,
    _: AdminAccess,
    limit: Annotated[int, Query(ge=1, description="page size, capped by the server")] = 50,
    cursor: Annotated[str | None, Query(pattern=r"^[0-9]{1,19}$", description="next_cursor")] = None,
) -> ApiKeyPage:
    """Keys oldest first, revoked ones included (their ``revoked_at`` is set)."""
    size = min(limit, settings.page_size_max)
    rows, end = split_page(list_api_keys(session, after_id=int(cursor or 0), limit=size + 1), size)
    items = [ApiKeyOut.model_validate(row) for row in rows]
    return ApiKeyPage(items=items, next_cursor=str(end.id) if end is not None else None)


@router.delete("/{key_id}", response_model=ApiKeyOut, responses=responses(401, 403, 404, 422))
def revoke_key(key_id: KeyId, session: SessionDep, _: AdminAccess) -> ApiKeyOut:
    """Revoke a key: it is refused from now on; repeating the call changes nothing."""
    try:
        row = revoke_api_key(session, key_id)
    except UnknownApiKey as exc:
        raise ApiError(404, exc.code, exc.message) from exc
    session.commit()
    return ApiKeyOut.model_validate(row)
