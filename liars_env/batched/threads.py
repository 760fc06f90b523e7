"""Torch thread settings on the CPU, in one place.

The batched engine, the batched bots and rollout inference run many small tensor ops
(a few microseconds each). With more than one intra-op thread, OpenMP's workers meet at
a barrier after every op: harmless while every core is free, but when another process
holds a core the waiting worker is descheduled and every op waits for a time slice.
Measured on a 2-core machine with one core busy: the batched engine fell from 1.6M to
14k–29k decisions/s with torch's default of 2 threads, and stayed at 1.2M with one.

So every phase made of small ops runs on :data:`DEFAULT_THREADS` (one) thread by default,
whatever the machine, and only phases made of large matmuls (the PPO update) may be
given more, by asking for them (``learn_threads`` in ``liars-train``). Everything goes
through :func:`using_threads`, so the setting of the surrounding program is restored
afterwards (``torch.set_num_threads`` costs well under a microsecond).

Example:
    >>> import torch
    >>> before = torch.get_num_threads()
    >>> with using_threads(1):
    ...     torch.get_num_threads()
    1
    >>> torch.get_num_threads() == before
    True
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator

DEFAULT_THREADS = 1
"""Intra-op threads of the small-op phases (engine, bots, rollouts, evaluation)."""


def check_threads(threads: int | None, name: str = "threads") -> int | None:
    """Validates a thread count: ``None`` (leave torch's setting) or an int ≥ 1.

    Raises:
        ValueError: naming ``name`` and the bad value.
    """
    if threads is None:
        return None
    if type(threads) is not int or threads < 1:
        raise ValueError(f"{name} must be None or an int >= 1, got {threads!r}")
    return threads


@contextlib.contextmanager
def using_threads(threads: int | None) -> Iterator[None]:
    """Runs the block with ``threads`` intra-op torch threads (``None``: unchanged)."""
    if threads is None:
        yield
        return
    import torch

    before = torch.get_num_threads()
    if before == threads:
        yield
        return
    torch.set_num_threads(threads)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def available_cores() -> int:
    """Cores this process may run on (its CPU affinity where the OS tells it)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1
