"""The C allocator's settings on Linux (glibc), in one place.

A batched step hands out fresh observation tensors (16384 games of 3-player perudo:
24.6 MB a step), and training allocates and frees tensors of a few MB all the time.
glibc's ``malloc`` serves a block above its *mmap threshold* (128 KiB at first, rising
to the largest block freed so far, at most 32 MiB) with a fresh ``mmap``, and gives
the top of its heap back to the system once more than its *trim threshold* (twice the
mmap threshold) is free there. Memory given back comes again as fresh pages, and the
first write to each is a page fault (the kernel zeroes 4 KiB). Which blocks those are
depends on the order of a process's earlier allocations, so one process paid a page
fault every 15 KB written and the next none: on a 2-core machine, the batched engine at
batch 16384 ran 1,680 page faults and 6.7 ms a step (2.4M decisions/s) in one process,
48 and 3.3 ms in the next, and with the thresholds below none and 2.9–3.0 ms every time.

:func:`retain_freed_memory` raises both thresholds (the mmap threshold to its maximum,
32 MiB; the trim threshold to 256 MiB), so that blocks up to 32 MiB come from the heap
and freed ones are reused instead of returned. The cost: a process keeps up to 256 MiB
of freed memory it could have given back. :class:`~liars_env.batched.BatchedEnv` on the
CPU calls it (and so ``liars-train``, ``liars-eval`` and every other user of the batched
engine). It changes nothing where the thresholds are the user's already
(``GLIBC_TUNABLES`` naming them, ``MALLOC_MMAP_THRESHOLD_``, ``MALLOC_TRIM_THRESHOLD_``),
where the C library is not glibc, or with ``LIARS_ENV_TUNE_MALLOC=0`` in the
environment. Nothing here changes what a program computes, only where its memory comes
from.
"""

from __future__ import annotations

import ctypes
import os
import sys

MMAP_THRESHOLD = 32 * 1024 * 1024
"""Blocks below this come from the heap (glibc's largest allowed value on 64-bit)."""
TRIM_THRESHOLD = 256 * 1024 * 1024
"""Free memory at the top of the heap kept for reuse rather than given back."""
OPT_OUT = "LIARS_ENV_TUNE_MALLOC"
"""Environment variable: ``0`` leaves the allocator as it is."""

_M_TRIM_THRESHOLD = -1  # glibc's <malloc.h> parameter numbers
_M_MMAP_THRESHOLD = -3
_USER_SETTINGS = ("MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_")

_applied: bool | None = None  # None: not tried yet in this process


def _glibc() -> ctypes.CDLL | None:
    """The process's glibc, or ``None`` (another OS or C library)."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL("libc.so.6")
        libc.gnu_get_libc_version  # noqa: B018  (only glibc has it; musl does not)
    except (OSError, AttributeError):
        return None
    return libc


def _user_owns_thresholds() -> bool:
    """Whether the environment sets the thresholds or opts out."""
    if os.environ.get(OPT_OUT, "").strip() == "0":
        return True
    if any(name in os.environ for name in _USER_SETTINGS):
        return True
    tunables = os.environ.get("GLIBC_TUNABLES", "")
    return "malloc.mmap_threshold" in tunables or "malloc.trim_threshold" in tunables


def retain_freed_memory() -> bool:
    """Makes glibc keep and reuse freed blocks up to 32 MiB (see the module docstring).

    Takes effect once per process (later calls return the first answer) and only on
    glibc, unless the environment owns the thresholds or sets
    ``LIARS_ENV_TUNE_MALLOC=0``.

    Returns:
        Whether the thresholds are this module's now.
    """
    global _applied
    if _applied is None:
        libc = None if _user_owns_thresholds() else _glibc()
        _applied = bool(
            libc is not None
            and libc.mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD)
            and libc.mallopt(_M_TRIM_THRESHOLD, TRIM_THRESHOLD)
        )
    return _applied
