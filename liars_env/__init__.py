"""liars-dice: Liar's Dice / Perudo for reinforcement learning.

The rule engine (:mod:`liars_env.rules`, :mod:`liars_env.engine`) is pure Python and
numpy; :func:`env` is the PettingZoo AEC environment built on it.

Example:
    >>> import liars_env
    >>> e = liars_env.env("perudo", num_players=3)
    >>> e.reset(seed=0)
    >>> obs, reward, terminated, truncated, info = e.last()
    >>> obs["action_mask"].shape
    (91,)
"""

from liars_env.actions import ActionCodec
from liars_env.aec import env, raw_env
from liars_env.engine import GameState, LiarsDiceGame, RoundResult
from liars_env.errors import IllegalActionError
from liars_env.gym_env import LiarsDiceEnv, register_envs  # importing registers LiarsDice-v0
from liars_env.observation import OBSERVATION_VERSION, ObservationLayout
from liars_env.rules import PRESETS, RuleSet

__version__ = "0.2.0"

__all__ = [
    "OBSERVATION_VERSION",
    "PRESETS",
    "ActionCodec",
    "GameState",
    "IllegalActionError",
    "LiarsDiceEnv",
    "LiarsDiceGame",
    "ObservationLayout",
    "RoundResult",
    "RuleSet",
    "env",
    "raw_env",
    "register_envs",
]
