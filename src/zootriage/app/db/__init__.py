"""Persistence: typed SQLAlchemy models, sessions and queries; importable without FastAPI."""
