"""Views of the game for RL clients: the PettingZoo AEC env, the Gymnasium env, rendering.

:mod:`~liars_env.envs.aec` (``liars_env.env``, the PettingZoo AEC env),
:mod:`~liars_env.envs.gym_env` (``LiarsDice-v0``: one seat against opponent agents),
:mod:`~liars_env.envs.render` (the table as text), :mod:`~liars_env.envs.drawing` (the
table as an RGB image), and the versioned PettingZoo modules
:mod:`~liars_env.envs.liars_dice_v1` (also ``from liars_env import liars_dice_v1``) and
its alias ``liars_dice_v0``; :mod:`~liars_env.envs.textarena_env` (every preset as a
TextArena environment).
"""

from liars_env.envs import liars_dice_v0, liars_dice_v1
from liars_env.envs.aec import env, raw_env
from liars_env.envs.gym_env import LiarsDiceEnv, register_envs

__all__ = ["LiarsDiceEnv", "env", "liars_dice_v0", "liars_dice_v1", "raw_env", "register_envs"]
