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
from liars_env.solver.last_bid import (
    BLUEPRINT_VERSION,
    MAX_BYTES,
    Blueprint,
    solve_blueprint,
)
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


def blueprint_path(
    rules: RuleSet,
    iterations: int,
    memory: int,
    faces: int,
    max_memory: int | None = None,
    max_bytes: int = MAX_BYTES,
    tremble: float = 0.0,
) -> Path:
    """Where a blueprint of ``rules`` is cached (named by a hash of rules and settings)."""
    settings: list = [rules.to_dict(), iterations, memory, faces]
    if max_memory is not None and max_memory != memory:
        settings += [max_memory, max_bytes]
    if tremble:
        settings.append({"tremble": tremble})
    text = json.dumps(settings, sort_keys=True)
    digest = hashlib.sha256(f"{BLUEPRINT_VERSION}:{text}".encode()).hexdigest()[:16]
    return cache_dir() / f"blueprint-{digest}.npz"


RECIPE: dict[str, Any] = {
    "iterations": 100,
    "memory": 2,
    "faces": 0,
    "max_memory": 4,
    "max_bytes": 500_000_000,
}
"""The shipped blueprint's recipe (``configs/blueprints/perudo_2p.yaml``): 100 CFR+
iterations a round, the last 2 bids remembered, and up to 4 where a round's solver fits
0.5 GB (at 2 × 5 dice: 3 bids in the rounds of 5 dice, 4 in those of 4 or fewer; every
round of the 1- and 2-dice games)."""


def cached_blueprint(
    rules: RuleSet,
    iterations: int = RECIPE["iterations"],
    memory: int = RECIPE["memory"],
    faces: int = RECIPE["faces"],
    log=None,
    max_memory: int | None = RECIPE["max_memory"],
    max_bytes: int = RECIPE["max_bytes"],
    tremble: float = 0.0,
) -> Blueprint:
    """The cached blueprint of ``rules``, else a new one (then cached, atomically).

    The defaults are the shipped blueprint's recipe (:data:`RECIPE`); ``tremble`` solves
    the perturbed game (:func:`~liars_env.solver.last_bid.solve_blueprint`). A new one
    keeps each solved round under the cache folder as it goes, so an interrupted solve
    resumes.
    """
    path = blueprint_path(rules, iterations, memory, faces, max_memory, max_bytes, tremble)
    if path.exists():
        with contextlib.suppress(ValueError):  # a stale or damaged file: solve again
            return Blueprint.load(path, rules)
    rounds = path.with_suffix(".rounds")
    blueprint = solve_blueprint(
        rules, iterations, log, rounds, memory, faces, max_memory=max_memory,
        max_bytes=max_bytes, tremble=tremble,
    )  # fmt: skip
    with contextlib.suppress(OSError):  # a read-only cache only costs time
        blueprint.save(path)
    return blueprint
