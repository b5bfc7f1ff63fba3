"""Bring the database to the latest schema, the same Alembic chain whatever the URL.

The migrations are package data of ``app`` (``app/migrations``), so an installed wheel finds them
next to this module; no ``alembic.ini`` is needed (that file is for running ``alembic`` by hand in a
checkout, and points at the same folder).
"""

from __future__ import annotations

from pathlib import Path

from alembic import command
from alembic.config import Config

MIGRATIONS = Path(__file__).resolve().parent / "migrations"


def alembic_config(database_url: str) -> Config:
    """An Alembic configuration for ``database_url`` built in code (no ini file, no logging set-up)."""
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS).replace("%", "%%"))  # ConfigParser syntax
    config.set_main_option("path_separator", "os")
    config.attributes["url"] = database_url
    config.attributes["configure_logger"] = False
    return config


def upgrade_to_head(database_url: str) -> None:
    if database_url.startswith("sqlite:///"):
        Path(database_url.removeprefix("sqlite:///")).parent.mkdir(parents=True, exist_ok=True)
    command.upgrade(alembic_config(database_url), "head")
