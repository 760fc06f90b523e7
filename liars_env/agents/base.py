"""One interface for every kind of player: bots, checkpoints, humans.

An agent gets a :class:`~liars_env.observation.PlayerView` (what the acting player knows:
own dice, the public round state, the observation vector and the action mask) and returns
a legal action id.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

import numpy as np

from liars_env.observation import PlayerView, view_of

__all__ = ["Agent", "PlayerView", "RandomAgent", "view_of"]


@runtime_checkable
class Agent(Protocol):
    """A player: anything with ``name``, ``reset(seed)`` and ``act(view) -> action id``."""

    name: str

    def reset(self, seed: int | None = None) -> None:
        """Starts a new game; ``seed`` makes any randomness reproducible."""

    def act(self, view: PlayerView) -> int:
        """Returns a legal action id for ``view``."""


class RandomAgent:
    """Uniform over the legal actions.

    Example:
        >>> import numpy as np
        >>> from liars_env import LiarsDiceGame, RuleSet, ObservationLayout
        >>> rules = RuleSet.preset("perudo")
        >>> game, layout = LiarsDiceGame(rules), ObservationLayout(rules)
        >>> state = game.new_game(np.random.default_rng(0))
        >>> agent = RandomAgent(seed=1)
        >>> bool(game.legal_mask(state)[agent.act(view_of(game, layout, state))])
        True
    """

    name = "random"

    def __init__(self, seed: int | None = None) -> None:
        self.rng = np.random.default_rng(seed)

    def reset(self, seed: int | None = None) -> None:
        """Reseeds the agent."""
        if seed is not None:
            self.rng = np.random.default_rng(seed)

    def act(self, view: PlayerView) -> int:
        """A uniformly random legal action."""
        legal = view.legal_actions
        return int(legal[self.rng.integers(len(legal))])

    def action_probabilities(self, view: PlayerView) -> np.ndarray:
        """Uniform over the legal actions of ``view`` (length ``num_actions``)."""
        mask = view.mask > 0
        return mask / mask.sum()
