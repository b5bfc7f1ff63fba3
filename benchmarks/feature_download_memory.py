"""Memory and time of a features download as safetensors: streamed from the npz (what the API does,
``core.feature_formats.as_safetensors``) against loading the arrays and saving them whole.

    .venv/bin/python benchmarks/feature_download_memory.py [--n 20000] [--dim 2048] [--classes 1000]

Writes a feature-cache-shaped ``.npz`` (features (n, dim) float32, logits (n, classes) float32, labels,
described) in a temporary folder, then, each in a fresh process, encodes it both ways, counts the
bytes (in place of a socket) and prints the peak of Python-tracked allocations (numpy registers its
buffers with tracemalloc) and the wall time. The streamed tensors are checked against the npz arrays.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

CHILD = r"""
import sys, time, tracemalloc, numpy as np
from safetensors.numpy import save
from zootriage.core.feature_formats import as_safetensors, open_npz
path, mode = sys.argv[1], sys.argv[2]
tracemalloc.start()
start = time.perf_counter()
if mode == "stream":
    with open(path, "rb") as handle:
        archive, members = open_npz(handle)
        size = 0
        for piece in as_safetensors(archive, members, {}).pieces:
            size += len(piece)
else:
    with np.load(path) as entry:
        size = len(save({k: entry[k] for k in ("features", "logits", "labels")}))
took = time.perf_counter() - start
peak = tracemalloc.get_traced_memory()[1] / 2**20
print(f"{mode}: {size / 2**20:.1f} MiB out, peak allocations {peak:.1f} MiB, {took:.2f} s")
"""

CHECK = r"""
import sys, numpy as np
from safetensors.numpy import load
from zootriage.core.feature_formats import as_safetensors, open_npz
with open(sys.argv[1], "rb") as handle:
    archive, members = open_npz(handle)
    streamed = load(b"".join(as_safetensors(archive, members, {}).pieces))
with np.load(sys.argv[1]) as entry:
    assert all(np.array_equal(streamed[k], entry[k]) for k in ("features", "logits", "labels"))
print("streamed tensors equal the npz arrays")
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=20000)
    parser.add_argument("--dim", type=int, default=2048)
    parser.add_argument("--classes", type=int, default=1000)
    args = parser.parse_args()
    import numpy as np

    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "entry.npz"
        rng = np.random.default_rng(0)
        np.savez(
            path,
            features=rng.standard_normal((args.n, args.dim), dtype=np.float32),
            logits=rng.standard_normal((args.n, args.classes), dtype=np.float32),
            labels=rng.integers(0, args.classes, args.n),
            described=np.frombuffer(json.dumps({"info": {}}).encode(), np.uint8),
        )
        print(f"entry: {path.stat().st_size / 2**20:.1f} MiB")
        for mode in ("stream", "load-and-save"):
            subprocess.run([sys.executable, "-c", CHILD, str(path), mode], check=True)
        if path.stat().st_size < 2**31:
            subprocess.run([sys.executable, "-c", CHECK, str(path)], check=True)


if __name__ == "__main__":
    main()
