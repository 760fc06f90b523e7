"""One interface for every kind of player: bots, checkpoints, humans.

An agent gets a :class:`PlayerView` (what the acting player knows: own dice, the public
round state, the observation vector and the action mask) and returns a legal action id.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import Protocol, runtime_checkable

import numpy as np

from liars_env.actions import ActionCodec
from liars_env.engine import GameState, LiarsDiceGame
from liars_env.observation import ObservationLayout
from liars_env.rules import RuleSet


@dataclass(frozen=True)
class PlayerView:
    """What the acting player knows when it must act.

    Attributes:
        rules: The variant.
        codec: Action ids of this rule set.
        seat: The acting seat.
        dice: The acting player's own faces.
        dice_left: Dice per seat (public).
        bids: This round's bids as ``(seat, quantity, face)`` (public).
        opener: Seat that opened the round.
        palifico: Whether the round is palifico.
        mask: Legal actions (int8 0/1).
    """

    rules: RuleSet
    codec: ActionCodec
    seat: int
    dice: tuple[int, ...]
    dice_left: tuple[int, ...]
    bids: tuple[tuple[int, int, int], ...]
    opener: int
    palifico: bool
    mask: np.ndarray
    _layout: ObservationLayout = field(repr=False, compare=False)

    @cached_property
    def observation(self) -> np.ndarray:
        """The env's observation vector for this seat (computed on first use).

        Encoded from the view's own fields, not the live game: the game goes on after the
        view is made, and an agent may read the observation of a view it kept.
        """
        public = GameState(
            dice=[list(self.dice) if s == self.seat else [] for s in range(len(self.dice_left))],
            dice_left=list(self.dice_left),
            current_player=self.seat,  # not encoded; the view is of its own seat
            opener=self.opener,
            bids=list(self.bids),
            palifico=self.palifico,
        )
        return self._layout.encode(public, self.seat)

    @property
    def current_bid(self) -> tuple[int, int] | None:
        """The latest ``(quantity, face)`` of the round, or ``None``."""
        return (self.bids[-1][1], self.bids[-1][2]) if self.bids else None

    @property
    def legal_actions(self) -> np.ndarray:
        """Legal action ids, ascending."""
        return np.flatnonzero(self.mask)


def view_of(
    game: LiarsDiceGame, layout: ObservationLayout, state: GameState, seat: int | None = None
) -> PlayerView:
    """The :class:`PlayerView` of ``seat`` (default: the player to act)."""
    seat = state.current_player if seat is None else seat
    mask = (
        game.legal_mask(state)
        if seat == state.current_player
        else np.zeros(game.codec.num_actions, np.int8)
    )
    return PlayerView(
        rules=game.rules,
        codec=game.codec,
        seat=seat,
        dice=tuple(state.dice[seat]),
        dice_left=tuple(state.dice_left),
        bids=tuple(state.bids),
        opener=state.opener,
        palifico=state.palifico,
        mask=mask,
        _layout=layout,
    )


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
