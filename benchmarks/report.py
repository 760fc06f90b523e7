"""The table both benchmarks print: median of each configuration and its ratio to a peer."""

from __future__ import annotations

import statistics


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
