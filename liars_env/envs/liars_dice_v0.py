"""The old id ``liars_dice_v0``, kept as an alias of :mod:`liars_env.liars_dice_v1`.

v1 changed how eliminations, infos and the engine state are exposed (see the version
history in :mod:`liars_env.envs.aec`); there is one implementation, the current one.

Example:
    >>> from liars_env import liars_dice_v0
    >>> liars_dice_v0.env(rules="sanford").metadata["name"]
    'liars_dice_v1'
"""

from liars_env.envs.aec import env, raw_env

__all__ = ["env", "raw_env"]
