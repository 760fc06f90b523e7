"""Subgame resolving: solve the rest of the round at every decision, on top of any agent.

At each decision, :class:`SubgameResolver` solves the part of the round's public tree
below the current bids with CFR+, both players' strategies free, from the ranges the
bids so far imply: each player's hand weighted by its chance and by the probability
that the strategies solved at the earlier nodes of this round made its bids with it.
Every round starts from fresh dice, so at a round's first bid the ranges are the
chance of each hand, and each later solve refines the one before it (continual
re-solving, safe as in CFR-D and DeepStack): the actor's range is carried from its own
moves, and the opponent sits behind the re-solving gadget, held per hand to its
counterfactual best-response value against the actor's previous strategy
(:func:`gadget_values` says why its values under its own average strategy are unsafe).
The play follows an equilibrium of the round, not a model of the opponent, so a best
responder gains no more than the solves' remaining error.

A round's calls end the game or lead to the next round. A new round re-rolls every
die, so what it is worth depends only on public facts (the dice counts, who opens, the
palifico flags): the search is depth-limited to the round, with one value per round
state at its leaves. By default (``values="solver"``) each later round is worth the
value of its own solve from its first bid, the rounds after it valued the same way,
from the game's last rounds back: the values of the play the resolver itself will
follow there. ``values="base"`` values them by the **base** agent playing itself
(exactly, by a sweep over the round states), so the play inherits the base's mistakes
in later rounds; a mapping or callable gives them from elsewhere (a value network).
On a game of one round (one die each) the leaves are the game's end and the play is the
game's equilibrium, whatever the base and the values.

Depth-limited re-solving (``depth=N``): each solve keeps only the next ``N`` bids
below the decision, and a leaf function (:class:`LeafFunction`;
:mod:`liars_env.solver.leaves`) values the nodes cut off from both players' ranges
there, asked again at every CFR iteration. The gadget, the ranges carried between
decisions and the settling of calls are the same code as at full depth (``depth=None``,
which is a depth beyond the round's end); where a decision's node is a leaf of the
previous solve, the opponent's stopping values are the leaf function's there.

Only 2-player games whose round trees the solver builds (:func:`round_states`) can be
resolved; the trees are built once per resolver.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, NamedTuple

import numpy as np

from liars_env.observation import PlayerView
from liars_env.rules import RuleSet
from liars_env.solver.best_response import _sweep, opener_payoff, policy_values
from liars_env.solver.cfr import RoundSolver, _traverse
from liars_env.solver.exploitability import AgentTables
from liars_env.solver.graph import RoundState, _Depth, round_state_of, round_states
from liars_env.solver.leaves import LEAVES, make_leaf
from liars_env.solver.subtree import LeafFunction, Leaves, SubTree, subtree


def gadget_values(sub: SubTree, carried: list[np.ndarray], m0: np.ndarray, role: int) -> np.ndarray:
    """``role``'s stopping values at the re-solving gadget, per hand.

    They are its counterfactual best-response values at ``sub``'s root against the other
    role's ``carried`` strategy. ``sub`` is cut from the previous solve's tree with the
    other role's reach at its root; ``carried`` holds the previous solve's strategies
    there (``role``'s are ignored: it best-responds). These are the values of safe
    re-solving (CFR-D, Burch, Johanson & Bowling 2014; DeepStack): whatever ``role`` does
    with any hand, the previous strategy never gives it more, so a re-solve that keeps
    every hand at or below them is no more exploitable than the strategy it refines.

    The values ``role`` gets by *following* its own average strategy of the previous
    solve are unsafe: with a hand that strategy never plays into the node, the strategy
    below the node is CFR's uniform default (no regret was ever weighted there), so the
    hand is valued far below what it can get. Stopping then looks worthless to it, the
    gadget lets it enter at full chance weight, and the new solve believes the node is
    reached with hands that never reach it, giving up the bound on those that do (on
    perudo 1x6 that made re-solving 50x as exploitable as one solve at the first bid).

    Args:
        sub: The tree below the node (see :func:`subtree`).
        carried: Per depth of ``sub``, the previous solve's ``prob[edge, hand]``.
        m0: Role 0's payoff per call type and hand pair.
        role: The role whose values to compute (the opponent of the re-solving actor).

    Returns:
        ``role``'s counterfactual value per own hand (the other's reach included, its own
        not).
    """
    best = (role == 0, role == 1)
    return _traverse(sub, carried, (m0, -m0), best=best, roles=(role,))[role]


def with_gadget(
    sub: SubTree, role: int, values: np.ndarray, chance: np.ndarray, m0: np.ndarray
) -> tuple[SubTree, np.ndarray]:
    """``sub`` behind the re-solving gadget of ``role``, and the payoffs it needs.

    At the gadget ``role`` chooses, per hand, to enter ``sub`` or to stop with
    ``values`` (its counterfactual best-response value per hand against the strategy
    solved before, :func:`gadget_values`); its reach there is the chance of each hand, so
    the solve cannot give ``role`` more with any hand than it could get before. Stopping
    is a call of a new type whose payoff gives ``role`` its value whatever the other's
    hand.
    """
    total = float(sub.probs[1 - role].sum()) or 1.0
    size = (len(sub.hands[0]), len(sub.hands[1]))
    if role == 0:
        stop0 = np.broadcast_to(values[:, None] / total, size)
    else:
        stop0 = -np.broadcast_to(values[None, :] / total, size)
    m = np.concatenate([m0, stop0[None]], axis=0)
    gadget = _Depth(
        actor=role,
        last=np.array([-1]),
        parent=np.array([0, 0]),
        action=np.array([0, 1]),
        starts=np.array([0]),
        num_actions=np.array([2]),
        child_edges=np.array([1]),
        term_edges=np.array([0]),
        term_type=np.array([len(m0)]),
        edge_child=np.array([-1, 0]),
    )
    probs = list(sub.probs)
    probs[role] = chance
    tree = SubTree(
        [gadget, *sub.depths],
        sub.hands,
        (probs[0], probs[1]),
        [],
        key=sub.key,
        tree=sub.tree,
        leaf=sub.leaf,
        offset=sub.offset + 1,
        cache=sub.cache,
    )
    return tree, m


class Resolved(NamedTuple):
    """One solve of :class:`SubgameResolver`, at the node some bids reach.

    Attributes:
        tree: The tree below the node (its root reach: the actor's range there).
        strategy: Both roles' solved ``prob[edge, hand]`` per depth of ``tree``.
        reach: The actor's reach per hand at the node (by its own earlier moves).
        stop_values: The opponent's stopping values per hand at the gadget
            (:func:`gadget_values`); ``None`` at a round's first bid (no gadget).
        ranges: Each role's range at the node under the solve (the opponent's: its
            chance times its gadget's probability of entering).
    """

    tree: SubTree
    strategy: list[np.ndarray]
    reach: np.ndarray
    stop_values: np.ndarray | None
    ranges: tuple[np.ndarray, np.ndarray]


def _leaf_function(leaf: str | LeafFunction) -> LeafFunction:
    """A leaf value function from its name (:data:`liars_env.solver.leaves.LEAVES`)."""
    if isinstance(leaf, str):
        return make_leaf(leaf)
    if not callable(leaf):
        raise ValueError(
            f"leaf must be one of {', '.join(LEAVES)} or a leaf function, got {type(leaf).__name__}"
        )
    return leaf


VALUES = ("solver", "base")
"""Named ways of valuing the rounds after the one being solved (``values``)."""


class SubgameResolver:
    """Plays by solving the rest of the round at each decision (see the module docstring).

    Args:
        base: The model of how players bid: any agent with ``action_probabilities``
            (a bot, a checkpoint).
        rules: A 2-player rule set whose rounds the solver can build.
        iterations: CFR+ iterations per decision (more: closer to the subgame's
            equilibrium, slower).
        name: Display name.
        values: What a round that follows the one being solved is worth to its opener:
            ``"solver"`` (default): the value of its own solve from its first bid (CFR+
            from the chance of each hand, ``iterations`` iterations, the rounds after it
            valued the same way, from the last rounds back: the solve it plays from when
            the game gets there); ``"base"``: what the base playing itself wins there
            (exactly, by a sweep over the round states); or a mapping or callable giving
            each round state's value for its opener (a learned estimate, e.g. a value
            network's). A game of one round has no later rounds: there it changes
            nothing.

    Raises:
        ValueError: for rules the solver cannot build (more than 2 players, rounds too
            large), a non-positive ``iterations``, an unknown ``values``, a ``depth``
            below 2 or an unknown ``leaf``.
    """

    def __init__(
        self,
        base: Any,
        rules: RuleSet,
        iterations: int = 100,
        name: str = "",
        values: str | Mapping[RoundState, float] | Callable[[RoundState], float] = "solver",
        depth: int | None = None,
        leaf: str | LeafFunction = "call",
    ) -> None:
        if not isinstance(iterations, int) or isinstance(iterations, bool) or iterations < 1:
            raise ValueError(f"iterations must be a positive int, got {iterations!r}")
        if isinstance(values, str) and values not in VALUES:
            raise ValueError(
                f"values must be one of {', '.join(VALUES)}, a mapping or a callable, "
                f"got {values!r}"
            )
        if not isinstance(values, (str, Mapping)) and not callable(values):
            raise ValueError(
                f"values must be one of {', '.join(VALUES)}, a mapping or a callable, "
                f"got {type(values).__name__}"
            )
        self.start, self.trees = round_states(rules)
        self.rules = rules
        self.base = base
        self.iterations = iterations
        self.values = values
        if depth is not None and (type(depth) is not int or depth < 2):
            raise ValueError(
                f"depth must be an int >= 2 (bids ahead: the actor's move and the "
                f"opponent's reply at least) or None (the round's end), got {depth!r}"
            )
        self.depth = depth
        leaf_function = _leaf_function(leaf)  # (checked even where unused)
        self.leaf = leaf_function if depth is not None else None
        self.name = name or f"resolve:{getattr(base, 'name', type(base).__name__)}"
        self._tables: dict[int, AgentTables] = {}
        self._values: dict[RoundState, float] = {}
        self._payoff: dict[RoundState, np.ndarray] = {}
        self._solved: dict[tuple[RoundState, tuple[int, ...]], Resolved] = {}

    # ------------------------------------------------------------ the later rounds' values
    def _table(self, seat: int) -> AgentTables:
        if seat not in self._tables:
            self._tables[seat] = AgentTables(self.trees, self.base, seat)
        return self._tables[seat]

    def round_values(self) -> dict[RoundState, float]:
        """Every round state's value for its opener, as the resolver values later rounds."""
        for key in self.trees:
            self._payoffs(key)
        self._value_rounds(set(self.trees))
        return dict(self._values)

    def _payoffs(self, key: RoundState) -> np.ndarray:
        """Role 0's payoff per call type and hand pair in ``key``.

        The game's end, or the next round at its value (``values``): the rounds that can
        follow ``key`` are valued once, then the payoffs are cached per round.
        """
        if key not in self._payoff:
            later, todo = set(), list(self.trees[key].successors())
            while todo:
                k = todo.pop()
                if k not in later:
                    later.add(k)
                    todo += self.trees[k].successors()
            self._value_rounds(later)
            if key not in self._payoff:  # (a round that can follow itself is set there)
                self._payoff[key] = self.trees[key].payoffs(opener_payoff(self._values))
        return self._payoff[key]

    def _value_rounds(self, keys: set[RoundState]) -> None:
        """Puts the value of every round of ``keys`` (closed under successors) in ``_values``."""
        if keys <= self._values.keys():
            return
        trees = {k: self.trees[k] for k in keys}
        if self.values == "base":  # the base opening in seat 0, responding in 1
            self._values |= policy_values(trees, lambda k, role: self._table(role)(k, role))
        elif self.values == "solver":
            _sweep(trees, self._values, self._root_value, 200, tolerance=1e-5, keep=True)
        else:
            lookup = self.values.get if isinstance(self.values, Mapping) else self.values
            for k in keys - self._values.keys():
                value = lookup(k)
                if value is None:
                    raise ValueError(f"values gives no value for the round {k.label()}")
                self._values[k] = float(value)

    def _root_value(self, key: RoundState) -> float:
        """``values="solver"``: the opener's value of ``key`` under its first-bid solve.

        The solve uses the values of the rounds after ``key`` known now, and is the one
        played from when the game reaches ``key`` (cached with its payoffs).
        """
        self._payoff[key] = self.trees[key].payoffs(opener_payoff(self._values))
        return self._first_bid_solve(key)

    def _first_bid_solve(self, key: RoundState) -> float:
        """Solves ``key`` from its first bid (cached); returns its value for the opener.

        With a ``depth`` the play's solve is depth-limited and the value (for the rounds
        before ``key``) comes from a solve of the whole round, not kept.
        """
        tree = self.trees[key]
        sub = subtree(tree, 0, 0, tree.probs, self.depth, self.leaf)
        solver = RoundSolver(sub, self._payoff[key])
        solver.iterate(self.iterations)
        self._solved[key, ()] = Resolved(sub, solver.average(), tree.probs[0], None, tree.probs)
        if self.depth is None:
            return solver.value()
        whole = RoundSolver(subtree(tree, 0, 0, tree.probs), self._payoff[key])
        whole.iterate(self.iterations)
        return whole.value()

    # ------------------------------------------------------------ playing
    def reset(self, seed: int | None = None) -> None:
        """Nothing to forget between games (a solve depends only on the position)."""

    def act(self, view: PlayerView) -> int:
        """The most likely move of the resolved strategy (ties: the lowest action)."""
        return int(np.argmax(self.action_probabilities(view)))

    def action_probabilities(self, view: PlayerView) -> np.ndarray:
        """The resolved strategy's probability of every action at ``view``."""
        key = self.round_state(view)
        role = 0 if view.seat == view.opener else 1
        bids = tuple(view.codec.encode_bid(q, f) for _, q, f in view.bids)
        tree = self.trees[key]
        d, node = tree.node_of(bids)
        depth = tree.depths[d]
        if depth.actor != role:
            raise ValueError(f"seat {view.seat} does not act after bids {list(bids)}")
        lo = depth.starts[node]
        h = tree.hand_index[role][tuple(sorted(view.dice))]
        out = np.zeros(view.codec.num_actions)
        out[depth.action[lo : lo + depth.num_actions[node]]] = self.solve(key, bids)[:, h]
        return out

    def round_state(self, view: PlayerView) -> RoundState:
        """The round state of ``view`` (its dice counts and palifico flag).

        Raises:
            ValueError: if the rules have no such round (another game's view).
        """
        return round_state_of(self.trees, view)

    def solve(self, key: RoundState, bids: tuple[int, ...]) -> np.ndarray:
        """The acting player's ``prob[edge, hand]`` at the node ``bids`` reach in ``key``.

        Cached: it depends only on the position.
        """
        return self.resolved(key, bids).strategy[0]

    def resolved(self, key: RoundState, bids: tuple[int, ...]) -> Resolved:
        """The solve at the node ``bids`` reach in ``key`` (cached).

        At a round's first bid: the round solved from the chance of each hand. Later:
        the tree below the node, behind the opponent's gadget, with the opponent's
        best-response values against the actor's strategy of its previous solve this
        round (or the round's first one) and the actor's reach by its own earlier moves.
        """
        cache = (key, bids)
        if cache in self._solved:
            return self._solved[cache]
        tree = self.trees[key]
        m = self._payoffs(key)
        role = tree.depths[tree.node_of(bids)[0]].actor
        if not bids:
            if cache not in self._solved:  # (valuing a round that can repeat solves it)
                self._first_bid_solve(key)
            return self._solved[cache]
        # the previous solve: the actor's last decision this round, else the round's first
        start = len(bids) - 2 if len(bids) >= 2 else 0
        prev = self.resolved(key, bids[:start])
        # both roles' ranges at the node under that solve, along the bids since
        ranges = list(prev.ranges)
        d = node = 0
        for k, bid in enumerate(bids[start:]):
            level = prev.tree.depths[k]
            lo = level.starts[node]
            e = lo + int(np.searchsorted(level.action[lo : lo + level.num_actions[node]], bid))
            ranges[level.actor] = ranges[level.actor] * prev.strategy[k][e]
            d, node = k + 1, int(level.edge_child[e])
        reach = ranges[role]
        probs = (ranges[0], ranges[1])
        if node >= 0:  # inside the previous tree: carry its strategies below the node
            before = subtree(prev.tree, d, node, probs)
            carried = [prev.strategy[d + k][edges] for k, edges in enumerate(before.edges)]
            opp_values = gadget_values(before, carried, m, 1 - role)
        else:  # one of its leaves: the leaf function's value there, from those ranges
            opp_values = self._leaf_opponent_values(prev.tree, (d - 1, e), bids, role, probs, m)
        here = subtree(tree, *tree.node_of(bids), probs, self.depth, self.leaf)
        gadget, mg = with_gadget(here, 1 - role, opp_values, tree.probs[1 - role], m)
        solver = RoundSolver(gadget, mg)
        solver.iterate(self.iterations)
        average = solver.average()
        sigma = average[1:]
        ranges[1 - role] = tree.probs[1 - role] * average[0][1]
        result = Resolved(here, sigma, reach, opp_values, (ranges[0], ranges[1]))
        self._solved[cache] = result
        return result

    def _leaf_opponent_values(
        self,
        prev: SubTree,
        where: tuple[int, int],
        bids: tuple[int, ...],
        role: int,
        probs: tuple[np.ndarray, np.ndarray],
        m: np.ndarray,
    ) -> np.ndarray:
        """The opponent's gadget values at a leaf of the previous solve's tree.

        The leaf function's counterfactual best-response values for the opponent there,
        from both roles' ranges under the previous solve (as DeepStack does where its
        lookahead ends), asked in that solve's context (``where``: the leaf's depth and
        edge in ``prev``; a leaf function that keeps a solve per leaf answers from the
        one the previous solve iterated, so the values belong to the same equilibrium
        of the rest of the round as the play that led here: per-hand values differ
        between equilibria, and a fresh solve's would not bound what the previous
        solve's play gives).
        """
        leaves = Leaves(
            key=prev.key,
            tree=prev.tree,
            last=np.array([bids[-1]]),
            actor=role,
            reach=(probs[0][None], probs[1][None]),
            m0=m,
            roles=(1 - role,),
            ids=(where[0], np.array([where[1]])),
            cache=prev.cache,
        )
        return self.leaf(leaves)[1 - role][0]
