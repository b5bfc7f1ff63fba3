"""GLUE cost at scale on the CPU: the table of docs/glue_cost.md.

Synthetic ReLU-like data, M = 50 points per class, N = 2048, one-vs-rest; P = 10, 100, 1000 by
default. Each row runs in its own process, so its peak RSS ("peak", the high-water mark restarted
once the input is loaded and the libraries warmed up: Linux's /proc/self/clear_refs) is the
analysis's own, with the process's libraries and input; "RSS+" is its growth over that process.
With ``--n-t`` below 1000 neither includes the (n_t, n) signs and solutions beyond the measured
draws: "model MB" (core.glue_cost.peak_bytes at n_t = 1000) does.
A row runs a whole analysis of ``--n-t`` draws on the CPU: the solver (core.nnls, "solve s") and
the rest ("rest s": N(t), the regime check and the geometry). The default measures n_t = 1000
itself (about 7 minutes on the 2-core build machine, 5.5 of them for P = 1000); with a smaller
``--n-t`` the time for 1000 draws is extrapolated linearly (an upper bound: blocks of draws are
independent, and the regime's certificates cost one product per distinct dichotomy, at most
min(n_t, P)). Printed next to the model estimate of core.glue_cost (single-core seconds).

    .venv/bin/python benchmarks/glue_cost.py [--classes 10 100 1000] [--n-t 1000]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys

import torch

from zootriage.core.glue_cost import glue_seconds, peak_bytes

_ROW = """
import json, resource, sys, time
import numpy as np, torch
from zootriage.core.examples import relu_like
from zootriage.core.glue import solve_draws, glue_inputs, _summarize

def status(field):  # kB fields of /proc/self/status, in bytes
    for line in open("/proc/self/status"):
        if line.startswith(field + ":"):
            return int(line.split()[1]) * 1024

p, m, dim, n_t = (int(a) for a in sys.argv[1:])
feats, classes, n_classes = glue_inputs(*relu_like(seed=0, n_classes=p, per_class=m, dim=dim))
args = (np.random.SeedSequence(0), n_t, "none", "one_vs_rest", "fast", torch.device("cpu"))
workers = torch.get_num_threads()
_summarize(solve_draws(feats[: 2 * m], classes[: 2 * m], 2, *args), workers)  # warm up: libraries, pools
before = status("VmRSS")
try:  # the high-water mark restarts here: making the data peaked higher than holding it
    with open("/proc/self/clear_refs", "w") as handle:
        handle.write("5")
    high = lambda: status("VmHWM")
except OSError:
    high = lambda: resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
start = time.perf_counter()
d = solve_draws(feats, classes, n_classes, *args)
solved = time.perf_counter()
result = _summarize(d, workers)
done = time.perf_counter()
peak = high()
print(json.dumps({"solve": solved - start, "rest": done - solved, "before": before, "peak": peak,
                  "fallback": d.n_fallback, "rank": int(d.points.shape[1]),
                  "active": float((d.lam > 0).sum(dim=1).double().mean()), "n_crit": result.n_crit,
                  "degenerate": result.degenerate}))
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--classes", type=int, nargs="+", default=[10, 100, 1000])
    parser.add_argument("--per-class", type=int, default=50)
    parser.add_argument("--dim", type=int, default=2048)
    parser.add_argument("--n-t", type=int, default=1000, help="draws measured per row (time scaled to 1000)")
    args = parser.parse_args()
    if args.n_t < 1 or args.per_class < 2 or args.dim < 1 or min(args.classes) < 2:
        parser.error("--n-t and --dim must be at least 1, --per-class and every --classes at least 2")
    print(f"CPU, {torch.get_num_threads()} torch threads, load average {os.getloadavg()[0]:.2f}")
    print(f"M={args.per_class} N={args.dim}, measured at n_t={args.n_t}, time scaled to n_t=1000")
    head: tuple[str, ...] = ("P", "n", "r", "|S|", "N_crit", "solve s", "rest s", "s@1000", "model s")
    head += ("RSS+ MB", "peak MB", "model MB")
    print("".join(f"{h:>10}" for h in head))
    for p in args.classes:
        cmd = [sys.executable, "-c", _ROW, str(p), str(args.per_class), str(args.dim), str(args.n_t)]
        out = subprocess.run(cmd, capture_output=True, text=True, check=True)
        row = json.loads(out.stdout.strip().splitlines()[-1])
        if row["fallback"]:
            print(f"  ({row['fallback']} draws fell back to the reference solver)")
        scale = 1000 / args.n_t
        model = glue_seconds(p, args.per_class, 1000, dim=args.dim)
        model_mb = peak_bytes(p, args.per_class, 1000, dim=args.dim) / 2**20
        cells = (
            f"{p}",
            f"{p * args.per_class}",
            f"{row['rank']}",
            f"{row['active']:.0f}",
            f"{row['n_crit']:.1f}",
            f"{row['solve']:.2f}",
            f"{row['rest']:.2f}",
            f"{(row['solve'] + row['rest']) * scale:.0f}",
            f"{model:.0f}",
            f"{(row['peak'] - row['before']) / 2**20:.0f}",
            f"{row['peak'] / 2**20:.0f}",
            f"{model_mb:.0f}",
        )
        print("".join(f"{c:>10}" for c in cells), flush=True)


if __name__ == "__main__":
    main()
