"""Recording a tournament's games: one recorder per game, and each move's probabilities.

``liars-eval --record DIR`` writes every game as JSON lines through
:class:`liars_env.play.recording.GameRecorder` (open one with ``liars-replay``); the
header names every seat's spec, the game's seed and the agents' seeds, so a game can be
replayed and audited from its file alone.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from liars_env.engine import LiarsDiceGame


def game_recorder(
    game: LiarsDiceGame,
    specs: Sequence[str],
    seats: list[int],
    seed: int,
    g: int,
    probabilities: bool = True,
) -> Any:
    """A :class:`~liars_env.play.recording.GameRecorder` for game ``g`` of a tournament."""
    from liars_env.play.recording import GameRecorder
    from liars_train.evaluation.play import agent_seed
    from liars_train.evaluation.results import display_names

    names = display_names(specs)
    return GameRecorder(
        game,
        seed=[seed, g],
        seats=[specs[a] for a in seats],
        names=[f"player_{s} ({names[a]})" for s, a in enumerate(seats)],
        source="liars-eval",
        extra={
            "game_index": g,
            "agent_seeds": [agent_seed(seed, g, a) for a in seats],
            "probabilities": probabilities,
        },
    )


def move_probabilities(agent: Any, view: Any) -> list[list[float]] | None:
    """The acting agent's action probabilities to record with its move (if it has them)."""
    from liars_env.play.recording import action_probabilities

    return action_probabilities(agent, view)
