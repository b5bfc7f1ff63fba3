"""Which extra brings the packages a command needs, so that a client-only install answers a heavy
command with what to install instead of a traceback."""

from __future__ import annotations

# Top-level import names the base install (httpx, typer, rich, pydantic) leaves out, by extra.
SERVER_ONLY = {
    "fastapi", "starlette", "uvicorn", "multipart", "jinja2", "fastapi_offline", "prometheus_client"
}
WORKER = {"numpy", "scipy", "torch", "torchvision", "timm", "safetensors", "sklearn", "PIL", "threadpoolctl",
          "matplotlib", "pydantic_settings", "sqlalchemy", "alembic", "psycopg", "celery", "redis", "kombu",
          "huggingface_hub", "boto3", "botocore"}


def extra_for(module: str | None) -> str | None:
    """``worker`` or ``server`` when ``module`` (or its package) comes with that extra, else None."""
    top = (module or "").partition(".")[0]
    if top in WORKER:
        return "worker"
    if top in SERVER_ONLY:
        return "server"
    return None
