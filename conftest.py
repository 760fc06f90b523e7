"""pytest collection: modules that need an optional extra are skipped when it is absent.

``--doctest-modules`` imports every module of the package; without these lines a
``pip install -e ".[dev]"`` (no ``rllib``/``compat`` extras) would fail at collection.
"""

from __future__ import annotations

import importlib.util

OPTIONAL_MODULES = {
    "training/rllib.py": "ray",
    "liars_env/solver/openspiel.py": "pyspiel",
}

collect_ignore = [
    path for path, needs in OPTIONAL_MODULES.items() if importlib.util.find_spec(needs) is None
]
