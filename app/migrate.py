"""Bring the database to the latest schema, the same Alembic chain whatever the URL."""

from __future__ import annotations

from pathlib import Path

from alembic import command
from alembic.config import Config

ALEMBIC_INI = Path(__file__).resolve().parent.parent / "alembic.ini"


def upgrade_to_head(database_url: str) -> None:
    if database_url.startswith("sqlite:///"):
        Path(database_url.removeprefix("sqlite:///")).parent.mkdir(parents=True, exist_ok=True)
    config = Config(str(ALEMBIC_INI))
    config.attributes["url"] = database_url
    config.attributes["configure_logger"] = False
    command.upgrade(config, "head")
