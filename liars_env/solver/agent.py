"""The ``solver`` agent (a cached equilibrium) and ``blueprint`` (a last-bid blueprint)."""

from __future__ import annotations

import numpy as np

from liars_env.observation import PlayerView
from liars_env.rules import RuleSet
from liars_env.solver.cache import cached_solution
from liars_env.solver.graph import RoundState, check_supported, round_state_of, state_round
from liars_env.solver.last_bid import Blueprint
from liars_env.solver.solution import Solution


class _TablePlayer:
    """What the table-playing agents share: sampling, and the palifico rounds seen.

    A view does not say who has had a palifico round; where that matters, the agent
    remembers the palifico rounds it has seen this game (both players act in every
    round). Subclasses give ``action_probabilities(view)``.
    """

    def __init__(self, seed: int | None, name: str) -> None:
        self.name = name
        self.rng = np.random.default_rng(seed)
        self._had: set[int] = set()

    def reset(self, seed: int | None = None) -> None:
        """Starts a new game (forgets palifico rounds) and reseeds the sampling."""
        self._had = set()
        if seed is not None:
            self.rng = np.random.default_rng(seed)

    def act(self, view: PlayerView) -> int:
        """Samples an action from :meth:`action_probabilities`."""
        if view.palifico:
            self._had.add(view.opener)
        probs = self.action_probabilities(view)
        return int(self.rng.choice(len(probs), p=probs / probs.sum()))


class SolverAgent(_TablePlayer):
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
        super().__init__(seed, name)
        self.rules = rules
        self.solution = solution if solution is not None else cached_solution(rules, tolerance)

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


class BlueprintAgent(_TablePlayer):
    """Plays a last-bid blueprint (:mod:`liars_env.solver.last_bid`): ``blueprint`` in specs.

    At each decision it plays the blueprint of its round for its hand and the bid
    standing. Any dice count of a 2-player, common-hand rule set; a table look-up per
    decision.

    Args:
        blueprint: The blueprint; by default the cached one of ``rules`` (solved on
            first use, minutes at 5 dice each: :func:`~liars_env.solver.cache.cached_blueprint`).
        rules: The rule set (checked against the blueprint's).
        seed: Seeds the sampling.
        name: Display name.

    Raises:
        ValueError: for rules the blueprint cannot solve, or a blueprint of other rules.
    """

    def __init__(
        self,
        blueprint: Blueprint | None = None,
        rules: RuleSet | None = None,
        seed: int | None = None,
        name: str = "blueprint",
    ) -> None:
        if blueprint is None:
            if rules is None:
                raise ValueError("BlueprintAgent needs a blueprint or the rules to solve")
            from liars_env.solver.cache import cached_blueprint

            blueprint = cached_blueprint(rules)
        if rules is not None and blueprint.rules != rules:
            raise ValueError(f"the blueprint is of {blueprint.rules}, not of {rules}")
        super().__init__(seed, name)
        self.blueprint = blueprint
        self.rules = blueprint.rules

    def round_state(self, view: PlayerView, state=None) -> RoundState:
        """The round state of ``view``.

        Read from the engine's ``state`` where given, else with the palifico history of
        the rounds this agent has seen.
        """
        if state is not None:
            return state_round(state)
        return round_state_of(self.blueprint.strategies, view, self._had)

    def action_probabilities(self, view: PlayerView, state=None) -> np.ndarray:
        """The blueprint's probability of every action at ``view``.

        Args:
            view: The acting player's view.
            state: The engine's state, where the caller has it (a batched table): it
                says who has had a palifico round, which a view does not.
        """
        role = 0 if view.seat == view.opener else 1
        bids = [view.codec.encode_bid(q, f) for _, q, f in view.bids]
        return self.blueprint.probabilities(
            self.round_state(view, state), role, bids, view.dice, view.codec.num_actions
        )
