"""Old import paths of modules that moved, kept working with a ``DeprecationWarning``.

The package was reorganised by role (0.3.0): ``liars_env.aec`` became
``liars_env.envs.aec``, ``liars_env.policy`` became ``liars_env.agents.policy``, and so on
(the whole table is :data:`MOVED` here and ``MOVED`` in :mod:`liars_train`). Rather than a
file per old path, one import hook answers for every old name: ``import liars_env.aec``
warns once and hands back the module object of the new path itself, so classes and module
state are shared (``liars_env.aec.raw_env is liars_env.envs.aec.raw_env``), and
``monkeypatch``-style changes made through either name are seen through both.

Example:
    >>> import sys, warnings
    >>> _ = sys.modules.pop("liars_env.gym_env", None)  # as in a fresh interpreter
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     import liars_env.gym_env as old
    >>> import liars_env.envs.gym_env as new
    >>> old is new, str(caught[0].message)
    (True, 'liars_env.gym_env moved to liars_env.envs.gym_env; import it from there')
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import sys
import warnings
from collections.abc import Mapping
from types import ModuleType

MOVED: dict[str, str] = {
    "liars_env.aec": "liars_env.envs.aec",
    "liars_env.gym_env": "liars_env.envs.gym_env",
    "liars_env.render": "liars_env.envs.render",
    "liars_env.drawing": "liars_env.envs.drawing",
    "liars_env.array_rules": "liars_env.batched.kernels",
    "liars_env.fused": "liars_env.batched.fused",
    "liars_env.fused_belief": "liars_env.batched.fused_belief",
    "liars_env.memory": "liars_env.batched.memory",
    "liars_env.threads": "liars_env.batched.threads",
    "liars_env.batched_bots": "liars_env.agents.batched",
    "liars_env.belief": "liars_env.agents.belief",
    "liars_env.policy": "liars_env.agents.policy",
    "liars_env.agents.probability": "liars_env.probability",
    "liars_env.agents.human": "liars_env.text.moves",
    "liars_env.typed_moves": "liars_env.text.moves",
    "liars_env.play.moves": "liars_env.text.moves",
    "liars_env.openspiel": "liars_env.solver.openspiel",
    "liars_env.web": "liars_env.play.web",
    "liars_env.play.web.recording": "liars_env.play.recording",
}
"""Old module path → new module path, for :mod:`liars_env` (a package moves with its
submodules: ``liars_env.web.server`` → ``liars_env.play.web.server``)."""

STABLE: dict[str, str] = {
    "liars_env.liars_dice_v1": "liars_env.envs.liars_dice_v1",
    "liars_env.liars_dice_v0": "liars_env.envs.liars_dice_v0",
}
"""Public names that live elsewhere and stay valid without a warning: the versioned
PettingZoo modules, imported as ``from liars_env import liars_dice_v1``."""


def new_path(name: str, table: Mapping[str, str]) -> str | None:
    """The new path of module ``name`` under ``table``, or ``None`` if it did not move.

    Example:
        >>> new_path("liars_env.web.server", MOVED)
        'liars_env.play.web.server'
        >>> new_path("liars_env.rules", MOVED) is None
        True
    """
    for old, new in table.items():
        if name == old or name.startswith(old + "."):
            return new + name[len(old) :]
    return None


class _Alias(importlib.abc.Loader):
    """Loads an old name as the module object of its new path."""

    def __init__(self, target: str, warn: bool) -> None:
        self.target = target
        self.warn = warn
        self.spec: importlib.machinery.ModuleSpec | None = None

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType:
        module = importlib.import_module(self.target)
        self.spec = module.__spec__
        if self.warn:
            warnings.warn(
                f"{spec.name} moved to {self.target}; import it from there",
                DeprecationWarning,
                stacklevel=2,
            )
        return module

    def exec_module(self, module: ModuleType) -> None:
        # The import system stamped the old name's spec on the shared module object;
        # give it back its own so reloads and pickling see the real path.
        module.__spec__ = self.spec


class AliasFinder(importlib.abc.MetaPathFinder):
    """Answers imports of old paths (``moved``, with a warning; ``stable``, silently)."""

    def __init__(self, moved: Mapping[str, str], stable: Mapping[str, str] | None = None):
        self.moved = dict(moved)
        self.stable = dict(stable or {})

    def find_spec(self, fullname, path=None, target=None):  # noqa: D102 - the finder protocol
        for table, warn in ((self.stable, False), (self.moved, True)):
            new = new_path(fullname, table)
            if new is not None:
                return importlib.util.spec_from_loader(fullname, _Alias(new, warn))
        return None


def install(moved: Mapping[str, str], stable: Mapping[str, str] | None = None) -> None:
    """Puts an :class:`AliasFinder` for these tables first on ``sys.meta_path`` (once).

    First, so that a submodule of a moved package (``liars_env.web.server``) is never
    found a second time on disk under its old name, as a second module object.
    """
    if not any(isinstance(f, AliasFinder) and f.moved == dict(moved) for f in sys.meta_path):
        sys.meta_path.insert(0, AliasFinder(moved, stable))
