"""What a result file says about the run that made it: command, versions, seeds, endpoints.

:func:`run_info` is the ``run`` entry of every ``liars-eval`` and ``liars-solve`` JSON
file, so that a result can be audited, and rerun, from the file alone. An API key never
appears: an ``llm:`` endpoint is described by its spec's settings, which name only the
environment variable that holds the key.
"""

from __future__ import annotations

import platform
import shlex
import sys
import time
from collections.abc import Sequence
from importlib import metadata
from typing import Any

PACKAGES = ("liars-dice", "numpy", "torch", "openai", "textarena")
"""The installed packages whose versions a result file records (when installed)."""


def versions() -> dict[str, str | None]:
    """Python's version and each of :data:`PACKAGES`' (``None`` when not installed)."""
    out: dict[str, str | None] = {"python": platform.python_version()}
    for name in PACKAGES:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = None
    return out


def endpoint_settings(specs: Sequence[str]) -> dict[str, dict[str, Any]]:
    """Per distinct ``llm:`` spec, its model and every setting in force (no key).

    Raises:
        ValueError: for a malformed ``llm:`` spec.
    """
    from liars_env.agents.llm import parse_llm_spec

    out = {}
    for spec in dict.fromkeys(specs):
        if spec.startswith("llm:"):
            model, settings = parse_llm_spec(spec)
            out[spec] = {"model": model, **settings.public()}
    return out


def run_info(
    prog: str,
    argv: Sequence[str] | None,
    *,
    seed: int | None,
    specs: Sequence[str] = (),
    extra: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The ``run`` entry of a result file.

    Args:
        prog: The command's name (``liars-eval``).
        argv: Its arguments (default: ``sys.argv[1:]``).
        seed: The run's seed.
        specs: The agent specs (their ``llm:`` endpoints are described).
        extra: More entries (preflight reports, budgets).

    Example:
        >>> info = run_info("liars-eval", ["--agents", "random", "random"], seed=3)
        >>> info["command"], info["seed"]
        ('liars-eval --agents random random', 3)
    """
    args = list(sys.argv[1:] if argv is None else argv)
    return {
        "command": shlex.join([prog, *args]),
        "argv": args,
        "seed": seed,
        "versions": versions(),
        "platform": platform.platform(),
        "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "endpoints": endpoint_settings(specs),
        **(extra or {}),
    }
