"""The pages' read check as a dependency, mirroring ``ReadAccess`` on the /v1 routers."""

from __future__ import annotations

from fastapi import Depends, Request

from zootriage.app.api.deps import SessionDep, SettingsDep
from zootriage.app.ui.session import check_read


def page_read(request: Request, session: SessionDep, settings: SettingsDep) -> None:
    check_read(request, session, settings)


PageRead = Depends(page_read)
