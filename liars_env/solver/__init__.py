"""Exact equilibria of small two-player games, and the exact exploitability of any agent.

The whole game, every round, is solved. Between rounds nothing private survives: every
die is rerolled and only the public dice counts, the next opener and who has opened a
palifico round carry over. So the game is a graph of *round states*
(:class:`RoundState`: the opener's and the responder's dice, their palifico flags and
whether the round is palifico), and each round is a finite imperfect-information game
whose terminal payoffs are the values of the round states that follow (or ±1 when the
game ends: winner +1, loser −1). Solving the rounds from the end backwards, each with the
values of its successors fixed, gives an equilibrium of the whole game, and a best
response computed the same way is an exact best response of the whole game (the best
responder's continuation value does not depend on how a round state was reached).

Each round is solved by CFR+ (alternating updates, linear averaging) on its *public
tree*, the tree of bid sequences, vectorized over the private hands: the strategy of a
public node is an array ``[legal actions, hands]`` and one numpy pass per tree depth
updates every node of that depth at once. Hands are multisets of dice (sorted tuples)
weighted by their chance probability.

Conventions:

* Seats are relabelled by role: role 0 opens the round, role 1 responds. Every rule is
  the same for both seats with two players, so a round state needs no seat.
* The first opener of a real game is a uniformly random seat (``docs/rules.md``). The
  reported ``Solution.value`` is the expected return of the player who opens the
  first round; the other player gets its negative, and a seat's value before the
  opener is drawn is 0. Under ``first_opener="player_0"`` (the ``openspiel_liars_dice``
  preset) ``player_0`` always opens, so ``Solution.value`` is its value.
* ``single_round`` games (``openspiel_liars_dice``) have one round state, whose calls
  end the game: the loser of the call −1, the other player +1, OpenSpiel's returns.
* Exploitability is NashConv / 2: the mean over both seats of what a best response gains
  against the strategy (so 0 at an equilibrium; OpenSpiel's definition).
* With ``exact_call = "calza"`` a correct call can return a die or leave the dice as they
  are, so round states repeat and a game may in principle never end. The solver then
  iterates the values of the repeating states to a fixed point, and an endless game is
  worth 0 to both players.

Size limits (checked before any work, with a ``ValueError`` that names them): exactly two
players; one round's public tree may hold at most :data:`MAX_PUBLIC_NODES` decision nodes,
and its edges times the hands of the larger hand set at most :data:`MAX_TREE_CELLS`
(memory: several float64 arrays of that size are live during a solve). The public tree
holds every sequence of strictly rising bids, about ``2 ** B`` nodes for ``B`` bids
under the cap, so one die each fits with any number of faces (9 faces: ``2 ** 18``
sequences, 4.7M cells), two dice each with up to 4 faces (``2 ** 16``), and two dice
with 5 faces (``2 ** 20`` sequences) do not.

The parts, each a module of this package: :mod:`~liars_env.solver.graph` (round states,
hands, the public tree of a round), :mod:`~liars_env.solver.cfr` (CFR+ on one round),
:mod:`~liars_env.solver.lp` (the exact sequence-form LP of one round),
:mod:`~liars_env.solver.best_response`, :mod:`~liars_env.solver.solution` (the whole game
backwards: :func:`solve` and :class:`Solution`), :mod:`~liars_env.solver.exploitability`
(:func:`exploit`: the exact exploitability of any agent; :func:`head_to_head`: the
exact result of one agent against another), :mod:`~liars_env.solver.sampled`
(:func:`exploit_sampled`: of an agent that can only be sampled, with an error bar),
:mod:`~liars_env.solver.lbr` (:func:`local_best_response`: a played lower
bound on the exploitability of any 2-player agent, at any dice count),
:mod:`~liars_env.solver.last_bid` (:func:`solve_blueprint`: CFR+ on every round with
players remembering part of its bids, at any dice count),
:mod:`~liars_env.solver.cache`
(solutions on disk), :mod:`~liars_env.solver.agent` (the ``solver`` player) and
:mod:`~liars_env.solver.openspiel` (the adapter to OpenSpiel's ``pyspiel``; needs the
``compat`` extra). This package imports only the game (:mod:`liars_env.rules`,
:mod:`~liars_env.engine`, :mod:`~liars_env.observation`) and numpy/scipy.

Example:
    >>> from liars_env.rules import RuleSet
    >>> solution = solve(RuleSet(num_players=2, dice_per_player=1, faces=2, ones="natural"))
    >>> abs(solution.value) < 1e-9, solution.exploitability < 1e-9
    (True, True)
"""

from liars_env.solver.agent import BlueprintAgent, SolverAgent
from liars_env.solver.best_response import best_response_values, match_values
from liars_env.solver.cache import cache_dir, cache_path, cached_solution
from liars_env.solver.cfr import RoundSolver
from liars_env.solver.exploitability import (
    AgentTables,
    Exploitation,
    HeadToHead,
    agent_probabilities,
    exploit,
    head_to_head,
)
from liars_env.solver.graph import (
    MAX_PUBLIC_NODES,
    MAX_TREE_CELLS,
    RoundState,
    RoundTree,
    check_supported,
    describe_rules,
    hands_of,
    round_states,
    start_state,
)
from liars_env.solver.last_bid import Blueprint, solve_blueprint
from liars_env.solver.lbr import (
    LocalBestResponse,
    LocalBestResponseResult,
    exact_lbr_value,
    local_best_response,
)
from liars_env.solver.lp import LP_MAX_CELLS, solve_round_lp
from liars_env.solver.sampled import SampledExploitation, exploit_sampled, information_sets
from liars_env.solver.solution import METHODS, SOLVER_VERSION, Solution, solve

__all__ = [
    "LP_MAX_CELLS",
    "MAX_PUBLIC_NODES",
    "MAX_TREE_CELLS",
    "METHODS",
    "SOLVER_VERSION",
    "AgentTables",
    "Blueprint",
    "BlueprintAgent",
    "Exploitation",
    "HeadToHead",
    "LocalBestResponse",
    "LocalBestResponseResult",
    "RoundSolver",
    "RoundState",
    "RoundTree",
    "SampledExploitation",
    "Solution",
    "SolverAgent",
    "agent_probabilities",
    "best_response_values",
    "cache_dir",
    "cache_path",
    "cached_solution",
    "check_supported",
    "describe_rules",
    "exact_lbr_value",
    "exploit",
    "exploit_sampled",
    "hands_of",
    "head_to_head",
    "information_sets",
    "local_best_response",
    "match_values",
    "round_states",
    "solve",
    "solve_blueprint",
    "solve_round_lp",
    "start_state",
]
