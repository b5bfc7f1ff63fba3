"""Start-up time of the command-line client against a bare Python interpreter, in one run.

    .venv/bin/python benchmarks/client_startup.py                            # `zootriage gate --help`
    .venv/bin/python benchmarks/client_startup.py --url http://127.0.0.1:8000 --job ID   # + `status`

Each command is started ``--repeats`` times as a fresh process (alternating with the baseline, so
machine load hits both alike); the median wall time of each is printed, and its ratio to
``python -c pass``. The client is started as its console script does it (``app.cli.main``) with this
interpreter and this checkout on ``PYTHONPATH``. It also reports which heavy packages the command
imported (none is the point: the client needs httpx, typer, rich and pydantic only).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
HEAVY = ("torch", "numpy", "timm", "scipy", "sqlalchemy", "fastapi", "celery")
# Runs the client's entry point, then names any heavy package it imported (on stderr, after the command).
CLIENT = (
    "import atexit, sys\n"
    "atexit.register(lambda: print('heavy:', [m for m in {heavy!r} if m in sys.modules], file=sys.stderr))\n"
    "sys.argv[0] = 'zootriage'\n"
    "from zootriage.app.cli import main\n"
    "main()\n"
)


def wall(argv: list[str], env: dict[str, str]) -> tuple[float, subprocess.CompletedProcess[str]]:
    start = time.perf_counter()
    done = subprocess.run(argv, env=env, cwd=ROOT, capture_output=True, text=True, check=False)
    return time.perf_counter() - start, done


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--url", help="a running service: also time `zootriage status JOB --no-watch`")
    parser.add_argument("--job", help="a job id on that service")
    args = parser.parse_args()
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    script = CLIENT.format(heavy=HEAVY)
    commands = {"python -c pass": [sys.executable, "-c", "pass"]}
    commands["zootriage gate --help"] = [sys.executable, "-c", script, "gate", "--help"]
    if args.url and args.job:
        commands["zootriage status --no-watch"] = [
            sys.executable, "-c", script, "status", args.job, "--no-watch", "--url", args.url,
        ]
    times: dict[str, list[float]] = {name: [] for name in commands}
    heavy: dict[str, str] = {}
    for _ in range(args.repeats):
        for name, argv in commands.items():
            seconds, done = wall(argv, env)
            if name != "python -c pass" and done.returncode != 0:
                sys.exit(f"{name} exited {done.returncode}: {done.stderr.strip()[-500:]}")
            times[name].append(seconds)
            heavy[name] = next((ln for ln in done.stderr.splitlines() if ln.startswith("heavy:")), "")
    base = statistics.median(times["python -c pass"])
    print(f"{'command':<30} {'median s':>9} {'ratio':>7}  heavy packages imported")
    for name, samples in times.items():
        median = statistics.median(samples)
        print(f"{name:<30} {median:9.3f} {median / base:7.1f}  {heavy.get(name, '').removeprefix('heavy: ')}")


if __name__ == "__main__":
    main()
