"""Where each environment lives, by name, so that naming one loads nothing until it is made.

:data:`ENVIRONMENTS` maps the names :mod:`liars_env` offers (``liars_env.env``,
``liars_env.raw_env``, ``liars_env.liars_dice_v1`` ...) to ``"module:attribute"`` entry
points, and :data:`GYMNASIUM_ENVS` the Gymnasium ids to theirs, as Gymnasium's own
``register(id, entry_point="module:Class")`` does: the module is imported by whoever asks
for the environment, not by ``import liars_env``. This module needs the standard library
only; it never imports gymnasium itself (:func:`register_when_imported` waits for it).

Example:
    >>> ENVIRONMENTS["env"]
    'liars_env.envs.aec:env'
    >>> load("liars_dice_v1").__name__
    'liars_env.envs.liars_dice_v1'
"""

from __future__ import annotations

import importlib
import importlib.abc
import sys
from typing import Any

ENV_ID = "LiarsDice-v0"
"""The Gymnasium id of :class:`~liars_env.envs.gym_env.LiarsDiceEnv`."""

GYMNASIUM_ENVS: dict[str, str] = {ENV_ID: "liars_env.envs.gym_env:LiarsDiceEnv"}
"""Gymnasium id → entry point, registered by :func:`register_gymnasium_envs`."""

ENVIRONMENTS: dict[str, str] = {
    "env": "liars_env.envs.aec:env",
    "raw_env": "liars_env.envs.aec:raw_env",
    "LiarsDiceEnv": "liars_env.envs.gym_env:LiarsDiceEnv",
    "register_envs": "liars_env.envs.gym_env:register_envs",
    "liars_dice_v1": "liars_env.envs.liars_dice_v1",
    "liars_dice_v0": "liars_env.envs.liars_dice_v0",
}
"""Name in :mod:`liars_env` → ``"module:attribute"`` (or a module path)."""


def load(name: str) -> Any:
    """The object behind ``liars_env.<name>`` (:data:`ENVIRONMENTS`), importing its module.

    Raises:
        AttributeError: for a name :data:`ENVIRONMENTS` does not have.
    """
    try:
        target = ENVIRONMENTS[name]
    except KeyError:
        raise AttributeError(f"module 'liars_env' has no attribute {name!r}") from None
    module_name, _, attribute = target.partition(":")
    module = importlib.import_module(module_name)
    return getattr(module, attribute) if attribute else module


def register_gymnasium_envs(gymnasium: Any) -> None:
    """Registers every id of :data:`GYMNASIUM_ENVS` with ``gymnasium``, the module (idempotent)."""
    for env_id, entry_point in GYMNASIUM_ENVS.items():
        if env_id not in gymnasium.registry:
            gymnasium.register(id=env_id, entry_point=entry_point)


class _AfterImport(importlib.abc.Loader):
    """Runs a module's own loader, then a callback with the module."""

    def __init__(self, loader: importlib.abc.Loader, then: Any) -> None:
        self.loader = loader
        self.then = then

    def create_module(self, spec):  # noqa: D102 - the loader protocol
        return self.loader.create_module(spec)

    def exec_module(self, module: Any) -> None:  # noqa: D102 - the loader protocol
        self.loader.exec_module(module)
        self.then(module)


class _GymnasiumHook(importlib.abc.MetaPathFinder):
    """Registers :data:`GYMNASIUM_ENVS` once gymnasium is imported, then removes itself."""

    def find_spec(self, fullname, path=None, target=None):  # noqa: D102 - the finder protocol
        if fullname != "gymnasium":
            return None
        _remove_hooks()
        for finder in list(sys.meta_path):  # the finders after this one, as Python would
            find = getattr(finder, "find_spec", None)
            spec = None if find is None else find(fullname, path, target)
            if spec is not None:
                break
        else:
            return None
        if spec.loader is None:
            return spec
        spec.loader = _AfterImport(spec.loader, register_gymnasium_envs)
        return spec


def _remove_hooks() -> None:
    sys.meta_path[:] = [f for f in sys.meta_path if not isinstance(f, _GymnasiumHook)]


def register_when_imported() -> None:
    """Makes ``gymnasium.make("LiarsDice-v0")`` work without importing gymnasium now.

    Registers the ids at once if gymnasium is already imported; otherwise as soon as it is
    (an import hook that removes itself). Either way no environment module is loaded.
    """
    gymnasium = sys.modules.get("gymnasium")
    if gymnasium is not None and hasattr(gymnasium, "registry"):
        register_gymnasium_envs(gymnasium)
    elif not any(isinstance(f, _GymnasiumHook) for f in sys.meta_path):
        sys.meta_path.insert(0, _GymnasiumHook())
