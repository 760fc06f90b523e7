"""What the benchmarks share: the ratio table, and the busy-core mode with its table."""

from __future__ import annotations

import contextlib
import multiprocessing
import statistics
import time
from collections.abc import Iterator


def print_ratio_table(runs: dict[str, list[float]], peer: str, label: str) -> dict[str, float]:
    """Prints ``label``, median decisions/s and the ratio to ``runs[peer]``; returns medians."""
    medians = {name: statistics.median(values) for name, values in runs.items()}
    base = medians.get(peer)
    width = max(len(label), *(len(name) for name in medians)) + 2
    print(f"{label:<{width}}{'decisions/s (median)':>22}{'vs ' + peer.split(' ')[0]:>14}")
    for name, value in medians.items():
        ratio = f"{value / base:.2f}x" if base else "-"
        print(f"{name:<{width}}{value:>22,.0f}{ratio:>14}")
    return medians


def _spin() -> None:  # pragma: no cover - runs in the busy process
    while True:
        pass


@contextlib.contextmanager
def busy_core(busy: bool = True) -> Iterator[None]:
    """Keeps one core busy with a separate spinning process while the block runs.

    This is what a user's machine looks like with ``liars-eval`` beside ``liars-train``,
    or on a shared box: the case in which OpenMP thread teams collapse.
    """
    if not busy:
        yield
        return
    proc = multiprocessing.get_context("spawn").Process(target=_spin, daemon=True)
    proc.start()
    time.sleep(0.5)  # let it take its core
    try:
        yield
    finally:
        proc.terminate()
        proc.join()


def print_idle_busy_table(idle: dict[str, float], busy: dict[str, float], label: str) -> None:
    """Prints the idle and busy medians of each configuration and the share kept."""
    width = max(len(label), *(len(name) for name in idle)) + 2
    print(f"{label:<{width}}{'idle (median)':>16}{'one core busy':>16}{'kept':>8}")
    for name, value in idle.items():
        other = busy.get(name)
        kept = f"{other / value:.0%}" if other is not None and value else "-"
        shown = f"{other:>16,.0f}" if other is not None else f"{'-':>16}"
        print(f"{name:<{width}}{value:>16,.0f}{shown}{kept:>8}")
