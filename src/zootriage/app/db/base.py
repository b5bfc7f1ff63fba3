"""Declarative base with a naming convention, so Alembic autogenerate and the models agree on names."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any, ClassVar

from sqlalchemy import JSON, BigInteger, DateTime, Dialect, Integer, MetaData, TypeDecorator
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.orm import DeclarativeBase

from zootriage.core.protocol import Protocol

NAMING_CONVENTION = {
    "ix": "ix_%(column_0_label)s",
    "uq": "uq_%(table_name)s_%(column_0_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}

# JSONB on PostgreSQL (indexable, compact), plain JSON text on SQLite for the embedded default.
JsonDoc = JSON().with_variant(JSONB(), "postgresql")
# SQLite only auto-increments INTEGER PRIMARY KEY, PostgreSQL needs BIGINT for a large markers table.
BigId = BigInteger().with_variant(Integer(), "sqlite")


class UtcDateTime(TypeDecorator[datetime]):
    """Timezone-aware UTC timestamps on every backend: SQLite stores no zone, so it is put back on read."""

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_result_value(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is not None and value.tzinfo is None:
            return value.replace(tzinfo=UTC)
        return value


class ProtocolJson(TypeDecorator[Protocol]):
    """A ``core.protocol.Protocol`` kept as its ``to_dict`` JSON, the form every run has always stored,
    so old rows read back as protocols and new rows are the same JSON. A mapping is accepted on write
    and checked (``Protocol.from_dict``): nothing that is no protocol reaches the column."""

    impl = JsonDoc
    cache_ok = True

    def process_bind_param(self, value: Protocol | dict[str, Any] | None, dialect: Dialect) -> Any:
        if value is None:
            return None
        return (value if isinstance(value, Protocol) else Protocol.from_dict(dict(value))).to_dict()

    def process_result_value(self, value: Any, dialect: Dialect) -> Protocol | None:
        return None if value is None else Protocol.from_dict(value)


class Base(DeclarativeBase):
    metadata = MetaData(naming_convention=NAMING_CONVENTION)
    type_annotation_map: ClassVar[dict[Any, Any]] = {dict[str, Any]: JsonDoc, Protocol: ProtocolJson}
