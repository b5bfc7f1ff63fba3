"""glibc malloc thresholds for a process that runs GLUE: freed temporaries stay mapped for reuse.

A GLUE analysis allocates and frees thousands of temporaries of 0.1–30 MB (the solver's (B, n+1)
gradients, the geometry's (chunk, slots, r) anchors), many of them on the shared pool's threads.
glibc's defaults adapt the mmap threshold as blocks are freed and return the top of an arena to the
kernel once it exceeds twice that threshold, so the same sizes are unmapped and faulted back in
page by page over and over: 3,500–17,000 page faults per analysis at P = 10 × M = 50, N = 512,
n_t = 400 (13–23 ms of system time in a 90–100 ms analysis on the 2-core build machine,
docs/glue_cost.md). Fixing the thresholds where the adaptive rule would end up anyway
(``M_MMAP_THRESHOLD`` 32 MiB, glibc's adaptive maximum on 64-bit; ``M_TRIM_THRESHOLD`` twice that)
keeps up to 64 MiB of freed memory per arena for reuse: under 70 faults and 7–9 ms of system time
per analysis, 4–7 % off its wall time. Blocks above 32 MiB (the features of a large analysis) are
still mapped and unmapped one by one.

Process-wide and not undone (glibc has no call that restores the adaptive rule); a no-op off glibc.
"""

from __future__ import annotations

import ctypes
import functools
import os

# mallopt(3) parameters, from glibc's <malloc.h>.
M_TRIM_THRESHOLD = -1
M_MMAP_THRESHOLD = -3
MMAP_THRESHOLD = 32 << 20
TRIM_THRESHOLD = 2 * MMAP_THRESHOLD


def is_glibc() -> bool:
    """Whether this process runs on GNU libc (where ``mallopt`` takes the parameters above)."""
    try:
        return (os.confstr("CS_GNU_LIBC_VERSION") or "").startswith("glibc")
    except (ValueError, OSError):  # not a name this platform knows
        return False


@functools.cache
def keep_freed_memory() -> bool:
    """Set the two thresholds of the module docstring once per process; whether they are set."""
    if not is_glibc():
        return False
    mallopt = ctypes.CDLL(None).mallopt  # the C library this process already runs on
    mallopt.argtypes, mallopt.restype = (ctypes.c_int, ctypes.c_int), ctypes.c_int
    return bool(mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD) and mallopt(M_TRIM_THRESHOLD, TRIM_THRESHOLD))
