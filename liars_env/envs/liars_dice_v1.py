"""The versioned PettingZoo id ``liars_dice_v1``: ``from liars_env import liars_dice_v1``.

Example:
    >>> from liars_env import liars_dice_v1
    >>> e = liars_dice_v1.env(rules="sanford", num_players=4)
    >>> e.metadata["name"]
    'liars_dice_v1'
"""

from liars_env.envs.aec import env, raw_env

__all__ = ["env", "raw_env"]
