"""One pool per database URL: sessions always come from the engine ``get_engine`` returns, even after
more URLs than its cache holds have passed through the process (the test session uses dozens)."""

from __future__ import annotations

from pathlib import Path

from zootriage.app.db.session import get_engine, get_sessionmaker


def test_sessions_use_the_engine_get_engine_returns_after_evictions(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'kept.db'}"
    assert get_sessionmaker(url).kw["bind"] is get_engine(url)
    for i in range(9):  # more than the caches' eight entries: ``url``'s engine is evicted
        get_engine(f"sqlite:///{tmp_path / f'other{i}.db'}")
    assert get_sessionmaker(url).kw["bind"] is get_engine(url)
