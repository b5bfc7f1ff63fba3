"""The run-history page under load and the weight of the pages' own assets, measured in one run.

1. ``GET /runs`` (newest first, sorted by a marker, filtered by a marker range) with N stored runs
   (every registered marker each; ``_stack.load_runs``) against ``GET /healthz``, at the same client
   count in the same run. Time to first byte (response headers) of each 200. Goal: p99 of each /runs
   variant <= 10 x p99 of /healthz; only 200, or 503 (at capacity, with Retry-After).
2. Bytes of the JS and CSS each page loads (as served, uncompressed): goal under 1 MB for every page
   (plots are inline SVG drawn by the server, so a plot page loads no charting library); the HTML's
   own bytes (with any inline SVG) are printed beside it.

    .venv/bin/python benchmarks/ui_load.py [--runs 100000] [--clients 50] [--seconds 5]
"""

from __future__ import annotations

import argparse
import asyncio
import re
import shutil
import sys
import time
from collections import Counter
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks._stack import client_pool, percentile, running_service

PAGES = {
    "healthz": "/healthz",
    "runs newest": "/runs",
    "runs by capacity": "/runs?sort=capacity&order=desc",
    "runs dimension in [0.3, 0.6]": "/runs?marker=dimension&min=0.3&max=0.6",
}


async def first_bytes(
    base_url: str, path: str, clients: int, seconds: float
) -> tuple[list[float], Counter[int]]:
    """``clients`` loops requesting ``path`` for ``seconds``: times to the headers of each 200, and the
    statuses. A 503 (the service at capacity) is waited out for its ``Retry-After``, as a browser
    user retrying would; it is counted, not timed."""
    times: list[float] = []
    statuses: Counter[int] = Counter()
    async with client_pool(base_url, clients) as client:
        deadline = time.perf_counter() + seconds

        async def loop() -> None:
            while time.perf_counter() < deadline:
                start = time.perf_counter()
                async with client.stream("GET", path) as response:
                    took = time.perf_counter() - start
                    await response.aread()
                statuses[response.status_code] += 1
                if response.status_code == 200:
                    times.append(took)
                elif response.status_code == 503:
                    await asyncio.sleep(float(response.headers.get("retry-after", "1")))

        await asyncio.gather(*(loop() for _ in range(clients)))
    return times, statuses


def asset_bytes(base_url: str, page: str) -> tuple[int, int, list[str]]:
    """Sum of the scripts and stylesheets a page references, fetched as the browser would; the HTML's
    own size; the assets' paths."""
    html = httpx.get(base_url + page, timeout=60).text
    assets = re.findall(r'<script[^>]+src="([^"]+)"', html) + re.findall(
        r'<link[^>]+rel="stylesheet"[^>]+href="([^"]+)"', html
    )
    return sum(len(httpx.get(base_url + a, timeout=60).content) for a in assets), len(html), assets


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=100_000, help="stored runs")
    parser.add_argument("--clients", type=int, default=50, help="concurrent clients")
    parser.add_argument("--seconds", type=float, default=5.0, help="load per page")
    args = parser.parse_args()

    failed = False
    with running_service(args.runs, port=8766) as service:
        base_url, work = service.base_url, service.work
        p99 = {}
        for path in PAGES.values():  # warm up: templates compiled, connections pooled
            httpx.get(base_url + path, timeout=60)
        for label, path in PAGES.items():
            times, statuses = asyncio.run(first_bytes(base_url, path, args.clients, args.seconds))
            p99[label] = percentile(times, 0.99)
            failed |= bool(set(statuses) - {200, 503})
            shown = " ".join(f"{status}:{n}" for status, n in sorted(statuses.items()))
            print(f"{label:30s} p50 {percentile(times, 0.5) * 1000:7.1f} ms  "
                  f"p99 {p99[label] * 1000:7.1f} ms  statuses {shown}")  # fmt: skip
        for label in PAGES:
            if label != "healthz":
                ratio = p99[label] / p99["healthz"]
                failed |= ratio > 10
                print(f"p99 TTFB {label} / healthz at {args.clients} clients: {ratio:.2f}x (goal <= 10x)")
        print()
        some = re.findall(r'href="/runs/([0-9a-f-]{36})"', httpx.get(f"{base_url}/runs", timeout=60).text)
        for page in ("/", "/runs", "/login", f"/runs/{some[0]}", f"/compare?runs={','.join(some[:3])}"):
            size, html, assets = asset_bytes(base_url, page)
            failed |= size > 1e6
            print(
                f"JS+CSS of {page.split('?')[0][:14]:14s} {size / 1e6:5.2f} MB (goal < 1 MB), "
                f"HTML {html / 1e3:6.1f} kB  ({', '.join(assets)})"
            )
    if failed:
        raise SystemExit(f"a goal was missed or a page failed; the API's log: {work / 'api.log'}")
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
