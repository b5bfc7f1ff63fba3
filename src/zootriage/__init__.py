"""zootriage: model-zoo triage by the geometry of class manifolds.

Three sub-packages, each a layer: ``zootriage.core`` (the science: features, markers, studies; knows no
service), ``zootriage.app`` (API, pages, CLI, database) and ``zootriage.worker`` (the Celery tasks).
docs/architecture.md maps them.
"""
