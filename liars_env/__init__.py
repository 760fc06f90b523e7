"""liars-dice: Liar's Dice / Perudo for reinforcement learning.

The folder says the role. Each layer imports only the layers above it in this table, never
one below (``tests/test_packaging.py`` checks it on the import graph):

==================  =======================================================  ==============
folder              what lives there                                         may import
==================  =======================================================  ==============
``liars_env/``      the game: :mod:`~liars_env.rules` (RuleSet, presets),    numpy only
                    :mod:`~liars_env.actions` (the bid codec),
                    :mod:`~liars_env.engine` (state, transitions),
                    :mod:`~liars_env.observation` (layout, PlayerView),
                    :mod:`~liars_env.probability` (binomial tails),
                    :mod:`~liars_env.errors`,
                    :mod:`~liars_env.entry_points` (the envs by name),
                    :mod:`~liars_env.cli` (the commands' rule arguments)
``batched/``        many games at once: the batched engine, its torch and    the game
                    numba backends, positions, the rules in array form
                    (``kernels``), numba loops, memory, threads
``solver/``         exact solutions of small 2-player games, exact           the game
                    exploitability of any agent, the OpenSpiel adapter
``text/``           text agents: the prompt of a position, the reader of     the game
                    replies, the move parser, a prompt read back
``agents/``         every player: bots and their batched twins, the belief   the game,
                    model, the policy network and checkpoints, the           batched,
                    ``llm:`` agent, the registry                             solver, text
``envs/``           views for RL clients: PettingZoo AEC env, Gymnasium      the game,
                    env, text and RGB rendering, the versioned modules,      text, agents
                    a TextArena env
``play/``           people at the table: terminal game, web table, replays,  everything
                    a chat-completions test server answering as a bot        above
==================  =======================================================  ==============

Modules that moved in 0.3.0 keep their old import paths with a ``DeprecationWarning``
(:mod:`liars_env.moved`).

``import liars_env`` (or ``import liars_env.rules``) loads the game layer only, with numpy
alone: the environments (``liars_env.env``, ``raw_env``, ``liars_dice_v1``,
``LiarsDiceEnv``) are named by entry point and imported on first use
(:mod:`liars_env.entry_points`), and the Gymnasium id ``LiarsDice-v0`` is registered as soon
as gymnasium is imported.

Example:
    >>> import liars_env
    >>> e = liars_env.env("perudo", num_players=3)
    >>> e.reset(seed=0)
    >>> obs, reward, terminated, truncated, info = e.last()
    >>> obs["action_mask"].shape
    (91,)
"""

from liars_env import moved as _moved

_moved.install(_moved.MOVED, _moved.STABLE)

from liars_env import entry_points as _entry_points  # noqa: E402
from liars_env.actions import ActionCodec  # noqa: E402
from liars_env.engine import GameState, LiarsDiceGame, RoundResult  # noqa: E402
from liars_env.errors import IllegalActionError  # noqa: E402
from liars_env.observation import OBSERVATION_VERSION, ObservationLayout  # noqa: E402
from liars_env.rules import PRESETS, RuleSet  # noqa: E402
from liars_env.version import __version__  # noqa: E402

_entry_points.register_when_imported()  # gymnasium.make("LiarsDice-v0"), once it loads


def __getattr__(name: str):
    """The environments, loaded on first use (:data:`liars_env.entry_points.ENVIRONMENTS`)."""
    value = _entry_points.load(name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})


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
    "__version__",
    "env",
    "liars_dice_v0",
    "liars_dice_v1",
    "raw_env",
    "register_envs",
]
