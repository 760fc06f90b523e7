"""Recording a tournament's games: one recorder per game, and each move's probabilities.

``liars-eval --record DIR`` writes every game as JSON lines through
:class:`liars_env.play.recording.GameRecorder` (open one with ``liars-replay``); the
header names every seat's spec, the game's seed and the agents' seeds, and under ``run``
the command line, the versions and every ``llm:`` endpoint's settings in force (never a
key), so a game can be replayed and audited from its file alone.
"""

from __future__ import annotations

import functools
import shlex
import sys
from collections.abc import Sequence
from typing import Any

from liars_env.engine import LiarsDiceGame


def game_recorder(
    game: LiarsDiceGame,
    specs: Sequence[str],
    seats: list[int],
    seed: int,
    g: int,
    agent_seeds: Sequence[int],
    probabilities: bool = True,
) -> Any:
    """A :class:`~liars_env.play.recording.GameRecorder` for game ``g`` of a tournament.

    Args:
        game: The game.
        specs: One spec per agent.
        seats: The agent index per seat.
        seed: The tournament's seed.
        g: The game's index.
        agent_seeds: The seed of the agent in each seat.
        probabilities: Whether moves carry the acting agent's action probabilities.
    """
    from liars_env.play.recording import GameRecorder
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
            "agent_seeds": list(agent_seeds),
            "probabilities": probabilities,
            "run": run_header(tuple(specs)),
        },
    )


@functools.lru_cache(maxsize=8)
def run_header(specs: tuple[str, ...]) -> dict[str, Any]:
    """The ``run`` entry of a recording's header: command line, versions, endpoints.

    The same for every game of a process, so it is built once per set of specs.
    """
    from liars_train.evaluation.provenance import endpoint_settings, versions

    return {
        "command": shlex.join(sys.argv),
        "versions": versions(),
        "endpoints": endpoint_settings(specs),
    }


def move_probabilities(agent: Any, view: Any) -> list[list[float]] | None:
    """The acting agent's action probabilities to record with its move (if it has them)."""
    from liars_env.play.recording import action_probabilities

    return action_probabilities(agent, view)
