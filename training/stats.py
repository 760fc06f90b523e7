"""Statistics of match results shared by the league and the evaluation tools."""

from __future__ import annotations

import math


def wilson_interval(wins: int, games: int, z: float = 1.959963984540054) -> tuple[float, float]:
    """The Wilson score interval of a win rate (95% by default).

    Example:
        >>> [round(x, 4) for x in wilson_interval(50, 100)]
        [0.4038, 0.5962]
        >>> wilson_interval(0, 0)
        (0.0, 1.0)
    """
    if games == 0:
        return (0.0, 1.0)
    p = wins / games
    denom = 1 + z * z / games
    centre = (p + z * z / (2 * games)) / denom
    half = z * math.sqrt(p * (1 - p) / games + z * z / (4 * games * games)) / denom
    lo = 0.0 if wins == 0 else max(0.0, centre - half)
    hi = 1.0 if wins == games else min(1.0, centre + half)
    return (lo, hi)
