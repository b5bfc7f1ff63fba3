#!/usr/bin/env bash
# The one command for a lent GPU machine (issue 26), prepared so that a loan's minutes go to measuring:
#
#     bash benchmarks/device_wheels.sh                 # here, first (makes .whl/)
#     device run: command "bash benchmarks/device_check.sh", carry [".whl"], timeout_s 570
#     PYTHON=.venv/bin/python bash benchmarks/device_check.sh --dry-run   # here: each step, small, on the CPU
#
# It installs the carried wheels beside the machine's own packages, then runs, each under its own
# time limit and logged to $OUT as it goes: benchmarks/gpu_check.py (the CUDA tests, GLUE at P = 10, 100
# and 1000, resnet50 extraction in images per second, one job by stage) and benchmarks/warm_job.py
# --model resnet50 (a warm job against the bare in-process computation: the issue's 1.1x). Record what
# it prints in docs/glue_cost.md. The two limits (330 s and 200 s) and the install fit in a 570 s call.
set -uo pipefail
cd "$(dirname "$0")/.."
python=${PYTHON:-python3}
out=${OUT:-/tmp/device-check}
mkdir -p "$out"
if [ "${1:-}" = "--dry-run" ]; then
    gpu_args=(--small --skip-tests)
    warm_args=(--rounds 1)
else
    if [ -d .whl ]; then
        "$python" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
            --target /tmp/site .whl/*.whl || exit 1
    fi
    gpu_args=()
    warm_args=(--model resnet50 --rounds 2)
    nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv 2>&1 | tee "$out/gpu.txt"
fi
export PYTHONPATH="$PWD/src:$PWD${PYTHONPATH:+:$PYTHONPATH}:/tmp/site" PYTHONUNBUFFERED=1
status=0
timeout 330 "$python" benchmarks/gpu_check.py "${gpu_args[@]}" 2>&1 | tee "$out/gpu_check.log" || status=1
timeout 200 "$python" benchmarks/warm_job.py "${warm_args[@]}" 2>&1 | tee "$out/warm_job.log" || status=1
exit $status
