"""The ``solver`` agent: plays a cached equilibrium strategy."""

from __future__ import annotations

import numpy as np

from liars_env.observation import PlayerView
from liars_env.rules import RuleSet
from liars_env.solver.cache import cached_solution
from liars_env.solver.graph import RoundState, check_supported, round_state_of
from liars_env.solver.solution import Solution


class SolverAgent:
    """Plays the equilibrium of the solver: ``solver`` in agent specs.

    The solution is loaded from the cache or computed on construction. A view does not
    say who has had a palifico round; where that matters, the agent remembers the
    palifico rounds it has seen this game (both players act in every round).

    Args:
        rules: A 2-player rule set small enough to solve.
        seed: Seeds the sampling.
        solution: Use this solution instead of the cache.
        tolerance: Exploitability a cached or new solution must reach.
        name: Display name.

    Raises:
        ValueError: for unsupported rules (more than 2 players, a round too large).

    Example:
        >>> from liars_env.observation import ObservationLayout, view_of
        >>> from liars_env.engine import LiarsDiceGame
        >>> from liars_env.solver import solve
        >>> rules = RuleSet(num_players=2, dice_per_player=1, faces=2, ones="wild")
        >>> agent = SolverAgent(rules, solution=solve(rules))
        >>> game = LiarsDiceGame(rules)
        >>> state = game.new_game(np.random.default_rng(0), first_player=0)
        >>> game.codec.describe(agent.act(view_of(game, ObservationLayout(rules), state)))
        'two 2s'
    """

    def __init__(
        self,
        rules: RuleSet,
        seed: int | None = None,
        solution: Solution | None = None,
        tolerance: float = 1e-3,
        name: str = "solver",
    ) -> None:
        check_supported(rules)
        self.rules = rules
        self.name = name
        self.solution = solution if solution is not None else cached_solution(rules, tolerance)
        self.rng = np.random.default_rng(seed)
        self._had: set[int] = set()

    def reset(self, seed: int | None = None) -> None:
        """Starts a new game (forgets palifico rounds) and reseeds the sampling."""
        self._had = set()
        if seed is not None:
            self.rng = np.random.default_rng(seed)

    def round_state(self, view: PlayerView) -> RoundState:
        """The round state of ``view`` (palifico history from this game's rounds)."""
        return round_state_of(self.solution.strategies, view, self._had)

    def action_probabilities(self, view: PlayerView) -> np.ndarray:
        """The equilibrium's probability of every action at ``view``."""
        key = self.round_state(view)
        role = 0 if view.seat == view.opener else 1
        codec = view.codec
        bids = [codec.encode_bid(q, f) for _, q, f in view.bids]
        return self.solution.probabilities(key, role, bids, view.dice)

    def act(self, view: PlayerView) -> int:
        """Samples an action from the equilibrium."""
        if view.palifico:
            self._had.add(view.opener)
        probs = self.action_probabilities(view)
        return int(self.rng.choice(len(probs), p=probs / probs.sum()))
