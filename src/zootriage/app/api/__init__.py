"""HTTP layer: one router per resource, shared dependencies in ``deps``, errors in ``errors``."""
