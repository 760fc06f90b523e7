"""A one-round game as a small tree for tabular CFR, and a table of probabilities as an agent.

Lab (b) of the course implements regret matching by hand; these two classes are what it
builds on. :class:`OneRoundGame` turns a 2-player game with one die each (every call
ends the game) into the three things a textbook CFR needs: the deals with their chance
probabilities, the legal actions after a bid sequence, and the payoff of a call.
:class:`TabularAgent` turns the resulting table ``(die, bids) → probabilities`` back
into an agent, so that :func:`liars_env.solver.exploit` measures it exactly.

The rules are the engine's: legality comes from the solver's round tree (built from
:meth:`LiarsDiceGame.legal_mask`) and every call is settled by :meth:`LiarsDiceGame.apply`.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from liars_env.observation import PlayerView
from liars_env.rules import RuleSet
from liars_env.solver import RoundTree, round_states

InfoSet = tuple[int, tuple[int, ...]]
"""What the player to act knows: its die and the bid ids so far."""


class OneRoundGame:
    """A 2-player game whose first call ends it, as a tree over bid sequences.

    Role 0 opens the round and role 1 responds; they alternate, role ``len(bids) % 2``
    acts. Actions are the engine's ids (:class:`~liars_env.actions.ActionCodec`): bids
    below ``num_bids``, then the challenge (and the exact call, where the rules have
    one).

    Args:
        rules: A 2-player rule set with one die each.

    Raises:
        ValueError: if the rules are not 2 players with one die each, or a call can be
            followed by another round.

    Example:
        >>> game = OneRoundGame(RuleSet.preset("perudo", num_players=2, dice_per_player=1, faces=4))
        >>> len(game.deals()), game.legal_actions(()), game.describe(8)
        (16, (1, 2, 3, 5, 6, 7), 'challenge')
        >>> game.payoff(2, 3, (5,), 8)  # "two 2s" challenged: one 2 on the table
        -1.0
    """

    def __init__(self, rules: RuleSet) -> None:
        if not isinstance(rules, RuleSet) or rules.num_players != 2 or rules.dice_per_player != 1:
            raise ValueError(
                f"OneRoundGame needs a 2-player RuleSet with one die each, got {rules!r}"
            )
        start, trees = round_states(rules)
        self.tree: RoundTree = trees[start]
        self.tree.resolve_outcomes()
        if len(trees) != 1 or any(kind != "end" for kind, _ in self.tree.outcomes):
            raise ValueError(
                f"OneRoundGame needs a game that ends at the first call; with these rules "
                f"a call can lead to another round: {rules!r}"
            )
        self.rules = rules
        self.codec = self.tree.game.codec
        self.num_bids = self.codec.num_bids
        self.num_actions = self.codec.num_actions
        self.faces = tuple(range(1, rules.faces + 1))
        self._legal: dict[tuple[int, ...], tuple[int, ...]] = {}
        self._payoff: dict[tuple[int, int, int, int, int], float] = {}
        self._rng = np.random.default_rng(0)

    def deals(self) -> list[tuple[int, int, float]]:
        """Every ``(opener's die, responder's die, chance probability)``."""
        p = 1.0 / len(self.faces) ** 2
        return [(a, b, p) for a in self.faces for b in self.faces]

    def actor(self, bids: tuple[int, ...]) -> int:
        """The role to act after ``bids``: 0 (the opener) or 1."""
        return len(bids) % 2

    def legal_actions(self, bids: tuple[int, ...]) -> tuple[int, ...]:
        """The legal action ids after the bid ids ``bids``, ascending."""
        if bids not in self._legal:
            last = bids[-1] if bids else -1
            row = self.tree.legal[self.actor(bids)][last + 1]
            self._legal[bids] = tuple(int(a) for a in np.flatnonzero(row))
        return self._legal[bids]

    def is_bid(self, action: int) -> bool:
        """Whether ``action`` is a bid (the round goes on) rather than a call."""
        return action < self.num_bids

    def payoff(self, die0: int, die1: int, bids: tuple[int, ...], call: int) -> float:
        """The opener's payoff (+1 won, −1 lost) when ``call`` answers ``bids``.

        Raises:
            ValueError: if ``call`` is a bid or there is no bid to call.
        """
        if self.is_bid(call) or not bids:
            raise ValueError(f"payoff needs a call after at least one bid, got {call} after {bids}")
        caller = self.actor(bids)
        key = (die0, die1, bids[-1], call, caller)
        if key not in self._payoff:
            quantity, face = self.codec.decode_bid(bids[-1])
            state = self.tree.state([(1 - caller, quantity, face)], dice=((die0,), (die1,)))
            state.current_player = caller
            self.tree.game.apply(state, call, self._rng)
            self._payoff[key] = 1.0 if state.winner == 0 else -1.0
        return self._payoff[key]

    def describe(self, action: int) -> str:
        """An action in words: ``"two 3s"``, ``"challenge"``."""
        return self.codec.describe(action)


class TabularAgent:
    """Plays a table of action probabilities indexed by information set.

    Args:
        game: The game the table is for.
        table: ``(die, bids) → probabilities``, one number per action of
            ``game.legal_actions(bids)`` in that order. Missing information sets are
            played uniformly.
        name: Display name.

    Raises:
        ValueError: if a row has the wrong length, a negative entry or does not sum to 1.
    """

    def __init__(
        self, game: OneRoundGame, table: Mapping[InfoSet, np.ndarray], name: str = "tabular"
    ) -> None:
        self.game = game
        self.name = name
        self.rng = np.random.default_rng()
        self.table: dict[InfoSet, np.ndarray] = {}
        for (die, bids), row in table.items():
            row = np.asarray(row, dtype=np.float64)
            legal = game.legal_actions(tuple(bids))
            if row.shape != (len(legal),) or (row < -1e-12).any() or abs(row.sum() - 1) > 1e-6:
                raise ValueError(
                    f"table row of information set {(die, bids)} is {row.tolist()}; expected "
                    f"{len(legal)} non-negative probabilities summing to 1 (one per legal action)"
                )
            self.table[die, tuple(bids)] = row

    def reset(self, seed: int | None = None) -> None:
        """Reseeds the sampling."""
        self.rng = np.random.default_rng(seed)

    def action_probabilities(self, view: PlayerView) -> np.ndarray:
        """The table's row of ``view``'s information set, over every action id."""
        bids = tuple(view.codec.encode_bid(q, f) for _, q, f in view.bids)
        legal = self.game.legal_actions(bids)
        row = self.table.get((view.dice[0], bids))
        probs = np.zeros(self.game.num_actions)
        probs[list(legal)] = np.full(len(legal), 1 / len(legal)) if row is None else row
        return probs

    def act(self, view: PlayerView) -> int:
        """Samples an action from the table's row."""
        probs = self.action_probabilities(view)
        return int(self.rng.choice(len(probs), p=probs))
