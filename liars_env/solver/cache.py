"""Solutions cached on disk, keyed by the rules and the solver's settings."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
from pathlib import Path
from typing import Any

from liars_env.rules import RuleSet
from liars_env.solver.graph import check_supported
from liars_env.solver.solution import SOLVER_VERSION, Solution, solve


def cache_dir() -> Path:
    """Folder of cached solutions: ``$LIARS_DICE_CACHE``, else ``~/.cache/liars-dice``."""
    if os.environ.get("LIARS_DICE_CACHE"):
        return Path(os.environ["LIARS_DICE_CACHE"])
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "liars-dice"


def cache_path(rules: RuleSet) -> Path:
    """Where the solution of ``rules`` is cached (named by a hash of the rules)."""
    text = json.dumps(rules.to_dict(), sort_keys=True)
    digest = hashlib.sha256(f"{SOLVER_VERSION}:{text}".encode()).hexdigest()[:16]
    return cache_dir() / f"solution-{digest}.npz"


def cached_solution(rules: RuleSet, tolerance: float = 1e-3, **options: Any) -> Solution:
    """The cached solution of ``rules`` if one is at least as exact, else a new one.

    New solutions are written to :func:`cache_path` (atomically). ``options`` go to
    :func:`solve`.
    """
    check_supported(rules)
    path = cache_path(rules)
    if path.exists():
        try:
            solution = Solution.load(path, rules)
        except Exception:  # noqa: BLE001 - any stale or damaged file: solve again
            solution = None
        if solution is not None and solution.exploitability <= tolerance:
            return solution
    solution = solve(rules, tolerance=tolerance, **options)
    with contextlib.suppress(OSError):  # a read-only cache only costs time
        solution.save(path)
    return solution
