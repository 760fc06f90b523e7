"""Settings from YAML files and ``key=value`` command-line items, checked before work.

Example:
    >>> parse_key_values(["total_steps=1000", "league=[bayes, belief]", "run_name="])
    {'total_steps': 1000, 'league': ['bayes', 'belief'], 'run_name': None}
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any


def parse_key_values(items: Iterable[str], what: str = "--set") -> dict[str, Any]:
    """``key=value`` items, each value parsed as YAML (numbers, booleans, lists, ...).

    Raises:
        ValueError: for an item without ``=``, naming ``what`` it was given as.
    """
    import yaml

    out: dict[str, Any] = {}
    for item in items:
        key, eq, raw = item.partition("=")
        if not eq or not key.strip():
            raise ValueError(f"{what} {item!r} must look like key=value")
        try:
            out[key.strip()] = yaml.safe_load(raw)
        except yaml.YAMLError as exc:
            raise ValueError(f"{what} {item!r}: the value is not valid YAML ({exc})") from None
    return out


def require_positive(args: Any, names: tuple[str, ...]) -> None:
    """Raises ``ValueError`` for the first of the fields ``names`` of ``args`` below 1."""
    for name in names:
        if getattr(args, name) < 1:
            raise ValueError(f"{name} must be at least 1, got {getattr(args, name)}")
