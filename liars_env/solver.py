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
* The first opener of a real game is a uniformly random seat (``shared/RULES.md``). The
  reported :attr:`Solution.value` is the expected return of the player who opens the
  first round; the other player gets its negative, and a seat's value before the
  opener is drawn is 0.
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

Example:
    >>> from liars_env.rules import RuleSet
    >>> solution = solve(RuleSet(num_players=2, dice_per_player=1, faces=2, ones="natural"))
    >>> abs(solution.value) < 1e-9, solution.exploitability < 1e-9
    (True, True)
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import json
import math
import os
import tempfile
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from itertools import combinations_with_replacement
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from liars_env.agents.base import PlayerView, RandomAgent, view_of
from liars_env.engine import GameState, LiarsDiceGame
from liars_env.observation import ObservationLayout
from liars_env.rules import RuleSet

MAX_PUBLIC_NODES = 400_000
"""Most decision nodes one round's public tree (its bid sequences) may hold."""
MAX_TREE_CELLS = 6_000_000
"""Most ``edges × hands`` one round's tree may hold (each solver array has this size)."""
METHODS = ("auto", "lp", "cfr+")
"""Ways to solve a round: the exact sequence-form LP, CFR+ iterations, or ``auto``: the
LP for rounds of at most :data:`LP_MAX_CELLS` edge-hand cells, CFR+ for larger ones."""
LP_MAX_CELLS = 200_000
"""Largest round (edges × hands) that ``method="auto"`` gives to the LP (measured: 1 die
each with 6 faces, 49k cells, takes 1 s by LP; 2 dice each with 4 faces, 1.3M cells in
its first round, did not finish in 5 minutes by LP but does by CFR+)."""
SOLVER_VERSION = 1
"""Bumped when a change makes cached solutions stale."""

Strategy = list[np.ndarray]
"""A role's strategy in one round: per depth where it acts, ``prob[edge, hand]``."""


class RoundState(NamedTuple):
    """The public state at the start of a round, seats relabelled by role.

    Attributes:
        opener_dice: Dice of the player who opens the round.
        responder_dice: Dice of the other player.
        opener_had_palifico: Whether the opener has opened a palifico round (this one
            included).
        responder_had_palifico: Whether the responder has.
        palifico: Whether this round is palifico.
    """

    opener_dice: int
    responder_dice: int
    opener_had_palifico: bool
    responder_had_palifico: bool
    palifico: bool

    def label(self) -> str:
        """A short text label, e.g. ``"2v1"`` or ``"1v2 palifico had 10"``."""
        flags = []
        if self.palifico:
            flags.append("palifico")
        if self.opener_had_palifico or self.responder_had_palifico:
            flags.append(f"had {int(self.opener_had_palifico)}{int(self.responder_had_palifico)}")
        return " ".join([f"{self.opener_dice}v{self.responder_dice}", *flags])


# ------------------------------------------------------------------------ hands
def hands_of(dice: int, faces: int) -> tuple[list[tuple[int, ...]], np.ndarray]:
    """Every hand of ``dice`` dice as a sorted tuple, with its chance probability.

    Example:
        >>> hands, probs = hands_of(2, 2)
        >>> hands, probs.tolist()
        ([(1, 1), (1, 2), (2, 2)], [0.25, 0.5, 0.25])
    """
    hands = list(combinations_with_replacement(range(1, faces + 1), dice))
    probs = np.array(
        [
            math.factorial(dice)
            / math.prod(math.factorial(h.count(f)) for f in set(h))
            / faces**dice
            for h in hands
        ]
    )
    return hands, probs


def check_supported(rules: RuleSet) -> None:
    """Raises ``ValueError`` unless ``rules`` has two players (see the module docstring)."""
    if not isinstance(rules, RuleSet):
        raise ValueError(f"rules must be a RuleSet, got {rules!r}")
    if rules.num_players != 2:
        raise ValueError(
            f"the exact solver handles 2 players only, got num_players={rules.num_players}"
        )


# ------------------------------------------------------------------------ public trees
@dataclass
class _Depth:
    """The decision nodes of one depth of a round's public tree and their edges.

    Edges are sorted by parent node; ``starts[n]`` is the first edge of node ``n``.
    """

    actor: int
    last: np.ndarray
    parent: np.ndarray
    action: np.ndarray
    starts: np.ndarray
    num_actions: np.ndarray
    child_edges: np.ndarray
    term_edges: np.ndarray
    term_type: np.ndarray
    edge_child: np.ndarray
    term_groups: list[tuple[int, np.ndarray]] = field(default_factory=list)

    def __post_init__(self) -> None:
        order = np.argsort(self.term_type, kind="stable")
        types, first = np.unique(self.term_type[order], return_index=True)
        bounds = [*first[1:], len(order)][: len(first)]
        self.term_groups = [
            (int(t), order[lo:hi]) for t, lo, hi in zip(types, first, bounds, strict=True)
        ]

    @property
    def num_nodes(self) -> int:
        """Decision nodes at this depth."""
        return len(self.last)

    @property
    def num_edges(self) -> int:
        """Edges (legal actions) out of this depth's nodes."""
        return len(self.action)


class RoundTree:
    """One round's public tree, its hands and the outcome of every call.

    Legality comes from :meth:`LiarsDiceGame.legal_mask` and every call is settled by
    :meth:`LiarsDiceGame.apply` on a :class:`GameState` holding the round state, so the
    rules are the engine's, not restated here.

    Args:
        game: The engine of a 2-player rule set.
        key: The round state.

    Raises:
        ValueError: if the tree is over :data:`MAX_PUBLIC_NODES` or
            :data:`MAX_TREE_CELLS`.
    """

    def __init__(self, game: LiarsDiceGame, key: RoundState) -> None:
        self.game = game
        self.key = key
        faces = game.rules.faces
        hands0, probs0 = hands_of(key.opener_dice, faces)
        hands1, probs1 = hands_of(key.responder_dice, faces)
        self.hands = (hands0, hands1)
        self.probs = (probs0, probs1)
        self.hand_index = (
            {h: i for i, h in enumerate(hands0)},
            {h: i for i, h in enumerate(hands1)},
        )
        self.num_bids = game.codec.num_bids
        self.legal = (self._legal_table(0), self._legal_table(1))
        self._check_size()
        self.depths = self._build()
        self._types: list[tuple[int, int, int]] = []
        self.outcomes: list[tuple[str, Any]] | None = None
        self.type_outcome: np.ndarray | None = None

    # -------------------------------------------------------------- construction
    def state(self, bids: Iterable[tuple[int, int, int]] = (), dice=None) -> GameState:
        """An engine state of this round (seat 0 opens) with the given bids and dice."""
        key = self.key
        bids = list(bids)
        if dice is None:
            dice = [[1] * key.opener_dice, [1] * key.responder_dice]
        return GameState(
            dice=[list(dice[0]), list(dice[1])],
            dice_left=[key.opener_dice, key.responder_dice],
            current_player=len(bids) % 2,
            opener=0,
            bids=bids,
            palifico=key.palifico,
            had_palifico=[key.opener_had_palifico, key.responder_had_palifico],
        )

    def _legal_table(self, actor: int) -> np.ndarray:
        """``legal[last + 1, action]`` for ``actor`` (row 0: the opening bid)."""
        codec = self.game.codec
        table = np.zeros((self.num_bids + 1, codec.num_actions), dtype=bool)
        for row in range(self.num_bids + 1):
            bids = []
            if row:
                quantity, face = codec.decode_bid(row - 1)
                bids = [(1 - actor, quantity, face)]
            state = self.state(bids)
            state.current_player = actor
            table[row] = self.game.legal_mask(state) > 0
        return table

    def _check_size(self) -> None:
        width = max(len(self.hands[0]), len(self.hands[1]))
        count = np.zeros(self.num_bids + 1)
        count[0] = 1.0
        nodes = edges = 0.0
        actor = 0
        while count.sum() > 0:
            nodes += count.sum()
            legal = self.legal[actor]
            edges += float(count @ legal.sum(axis=1))
            nxt = np.zeros_like(count)
            nxt[1:] = count @ legal[:, : self.num_bids]
            count, actor = nxt, 1 - actor
            if nodes > MAX_PUBLIC_NODES or edges * width > MAX_TREE_CELLS:
                raise ValueError(
                    f"round {self.key.label()} of {describe_rules(self.game.rules)} is too "
                    f"large to solve exactly: its public tree has over {int(nodes):,} bid "
                    f"sequences ({int(edges):,} edges × {width} hands); the limits are "
                    f"{MAX_PUBLIC_NODES:,} nodes and {MAX_TREE_CELLS:,} edge-hand cells "
                    "(1 die each fits with any faces, 2 dice each with up to 4 faces)"
                )
        self.size = (int(nodes), int(edges))

    def _build(self) -> list[_Depth]:
        depths = []
        last = np.array([-1])
        actor = 0
        type_ids: dict[tuple[int, int, int], int] = {}
        while len(last):
            mask = self.legal[actor][last + 1]
            parent, action = np.nonzero(mask)
            counts = mask.sum(axis=1)
            starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
            is_bid = action < self.num_bids
            child_edges = np.flatnonzero(is_bid)
            term_edges = np.flatnonzero(~is_bid)
            term_type = np.empty(len(term_edges), dtype=np.int64)
            for i, e in enumerate(term_edges):
                t = (int(action[e]), int(last[parent[e]]), actor)
                term_type[i] = type_ids.setdefault(t, len(type_ids))
            edge_child = np.full(len(action), -1)
            edge_child[child_edges] = np.arange(len(child_edges))
            depths.append(
                _Depth(
                    actor=actor,
                    last=last,
                    parent=parent,
                    action=action,
                    starts=starts,
                    num_actions=counts,
                    child_edges=child_edges,
                    term_edges=term_edges,
                    term_type=term_type,
                    edge_child=edge_child,
                )
            )
            last = action[child_edges]
            actor = 1 - actor
        self._type_keys = sorted(type_ids, key=type_ids.get)
        return depths

    # -------------------------------------------------------------- outcomes
    def resolve_outcomes(self) -> None:
        """Settles every call type for every pair of hands with the engine (once)."""
        if self.outcomes is not None:
            return
        codec = self.game.codec
        rng = np.random.default_rng(0)
        outcomes: dict[tuple[str, Any], int] = {}
        table = np.zeros(
            (len(self._type_keys), len(self.hands[0]), len(self.hands[1])), dtype=np.int64
        )
        for t, (action, last, caller) in enumerate(self._type_keys):
            quantity, face = codec.decode_bid(last)
            for i, h0 in enumerate(self.hands[0]):
                for j, h1 in enumerate(self.hands[1]):
                    state = self.state([(1 - caller, quantity, face)], dice=(h0, h1))
                    state.current_player = caller
                    self.game.apply(state, action, rng)
                    outcome = _outcome_of(state)
                    table[t, i, j] = outcomes.setdefault(outcome, len(outcomes))
        self.outcomes = sorted(outcomes, key=outcomes.get)
        self.type_outcome = table

    def successors(self) -> list[RoundState]:
        """Round states that can follow this round."""
        self.resolve_outcomes()
        return [k for kind, k in self.outcomes if kind in ("same", "swap")]

    def payoffs(self, values: Callable[[str, Any], float]) -> np.ndarray:
        """``M[type, hand0, hand1]``: a player's payoff for each call outcome.

        Args:
            values: Maps an outcome (``("end", winner_role)``, ``("same", key)`` when
                role 0 opens next, ``("swap", key)`` when role 1 does) to the payoff.
        """
        self.resolve_outcomes()
        per_outcome = np.array([values(kind, k) for kind, k in self.outcomes])
        return per_outcome[self.type_outcome]

    # -------------------------------------------------------------- look-ups
    def node_of(self, actions: Iterable[int]) -> tuple[int, int]:
        """``(depth, node)`` reached by the given bid ids from the root."""
        node = 0
        d = 0
        for action in actions:
            depth = self.depths[d]
            lo = depth.starts[node]
            hi = lo + depth.num_actions[node]
            e = lo + int(np.searchsorted(depth.action[lo:hi], action))
            if e >= hi or depth.action[e] != action or depth.edge_child[e] < 0:
                raise ValueError(f"bid sequence {list(actions)} is not in round {self.key}")
            node = int(depth.edge_child[e])
            d += 1
        return d, node

    def node_bids(self, d: int) -> list[list[int]]:
        """The bid ids leading to every node of depth ``d`` (in node order)."""
        paths: list[list[int]] = [[]]
        for k in range(d):
            depth = self.depths[k]
            edges = depth.child_edges
            paths = [paths[depth.parent[e]] + [int(depth.action[e])] for e in edges]
        return paths


def _outcome_of(state: GameState) -> tuple[str, Any]:
    """What follows a settled round (engine state after the call), by role."""
    if state.winner is not None:
        return ("end", state.winner)
    o = state.opener
    key = RoundState(
        state.dice_left[o],
        state.dice_left[1 - o],
        bool(state.had_palifico[o]),
        bool(state.had_palifico[1 - o]),
        bool(state.palifico),
    )
    return ("same" if o == 0 else "swap", key)


def start_state(rules: RuleSet) -> RoundState:
    """The round state of a game's first round (seat 0 taken as the first opener)."""
    game = LiarsDiceGame(rules)
    state = game.new_game(np.random.default_rng(0), first_player=0)
    return _outcome_of(state)[1]


def describe_rules(rules: RuleSet) -> str:
    """A compact description: ``2p 1d6 wild_convertible quantity_or_face cap``."""
    parts = [
        f"{rules.num_players}p {rules.dice_per_player}d{rules.faces}",
        rules.ones,
        rules.raise_rule,
        "cap" if rules.bid_cap else "no cap",
    ]
    if rules.palifico:
        parts.append("palifico")
    if rules.exact_call != "none":
        parts.append(rules.exact_call)
    if rules.hand != "common":
        parts.append("individual")
    return " ".join(parts)


# ------------------------------------------------------------------------ traversals
def _normalize(weights: np.ndarray, depth: _Depth) -> np.ndarray:
    """Per node, weights → probabilities over its edges (uniform where all are 0)."""
    sums = np.add.reduceat(weights, depth.starts, axis=0)
    zero = sums <= 0
    inv = 1.0 / np.where(zero, 1.0, sums)
    inv[zero] = 0.0
    uniform = zero / depth.num_actions[:, None]
    return weights * inv[depth.parent] + uniform[depth.parent]


def _traverse(
    tree: RoundTree,
    sigma: list[np.ndarray],
    payoff: tuple[np.ndarray, np.ndarray],
    best: tuple[bool, bool] = (False, False),
    update: Callable[[int, np.ndarray, np.ndarray, np.ndarray], None] | None = None,
    roles: tuple[int, ...] = (0, 1),
) -> list[np.ndarray | None]:
    """One forward (reach) and backward (value) pass over a round's public tree.

    Args:
        tree: The round.
        sigma: Per depth, the acting role's ``prob[edge, hand]``.
        payoff: ``(M0, M1)``: each role's payoff per call type and hand pair.
        best: Per role, whether it best-responds (max over its actions) instead of
            following ``sigma``.
        update: Called per depth where a role of ``roles`` acts, as
            ``update(d, edge_values, node_values, node_reach)`` with that role's
            counterfactual values (for regret updates).
        roles: The roles whose values to compute.

    Returns:
        Per role (``None`` for roles not computed), its counterfactual value per own
        hand at the root (the opponent's chance probabilities included, its own not).
    """
    depths = tree.depths
    reach = [[tree.probs[0][None, :], tree.probs[1][None, :]]]
    edge_reach = []
    for d, depth in enumerate(depths):
        a = depth.actor
        actor = reach[d][a][depth.parent] * sigma[d]
        other = reach[d][1 - a][depth.parent]
        edge_reach.append((actor, other))
        nxt = [None, None]
        nxt[a] = actor[depth.child_edges]
        nxt[1 - a] = other[depth.child_edges]
        reach.append(nxt)
    below: list[np.ndarray | None] = [None, None]
    for d in range(len(depths) - 1, -1, -1):
        depth = depths[d]
        a = depth.actor
        node: list[np.ndarray | None] = [None, None]
        for role in roles:
            # the opponent's reach at the calls (the actor's includes its call)
            opp = edge_reach[d][0 if role != a else 1][depth.term_edges]
            v = np.empty((depth.num_edges, len(tree.hands[role])))
            if len(depth.child_edges):
                v[depth.child_edges] = below[role]
            v[depth.term_edges] = _call_values(depth, payoff[role], opp, role)
            if role != a:
                node[role] = np.add.reduceat(v, depth.starts, axis=0)
                continue
            if best[a]:
                node[a] = np.maximum.reduceat(v, depth.starts, axis=0)
            else:
                node[a] = np.add.reduceat(v * sigma[d], depth.starts, axis=0)
            if update is not None:
                update(d, v, node[a], reach[d][a])
        below = node
    return [None if b is None else b[0] for b in below]


def _call_values(depth: _Depth, m: np.ndarray, opp: np.ndarray, role: int) -> np.ndarray:
    """A role's counterfactual values at a depth's calls, one matrix product per type."""
    out = np.empty((len(depth.term_edges), m.shape[1 + role]))
    for t, idx in depth.term_groups:
        out[idx] = opp[idx] @ (m[t].T if role == 0 else m[t])
    return out


def _zero_sum(m0: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    return m0, -m0


# ------------------------------------------------------------------------ CFR+
class RoundSolver:
    """CFR+ on one round with fixed terminal payoffs (role 0's payoff ``m0``).

    Args:
        tree: The round.
        m0: Role 0's payoff per call type and hand pair (role 1 gets its negative).
    """

    def __init__(self, tree: RoundTree, m0: np.ndarray) -> None:
        self.tree = tree
        self.payoff = _zero_sum(m0)
        self.regret = [np.zeros((d.num_edges, len(tree.hands[d.actor]))) for d in tree.depths]
        self.total = [np.zeros_like(r) for r in self.regret]
        self.iterations = 0

    def set_payoff(self, m0: np.ndarray, keep_regrets: bool = True) -> None:
        """Changes the payoffs (for fixed-point sweeps); restarts the average."""
        self.payoff = _zero_sum(m0)
        self.total = [np.zeros_like(r) for r in self.regret]
        if not keep_regrets:
            self.regret = [np.zeros_like(r) for r in self.regret]
        self.iterations = 0

    def current(self) -> list[np.ndarray]:
        """The current (regret-matching) strategy."""
        return [_normalize(r, d) for r, d in zip(self.regret, self.tree.depths, strict=True)]

    def average(self) -> list[np.ndarray]:
        """The average strategy: the one that converges to an equilibrium."""
        return [_normalize(t, d) for t, d in zip(self.total, self.tree.depths, strict=True)]

    def iterate(self, n: int = 1) -> None:
        """Runs ``n`` CFR+ iterations (one pass per role each, alternating)."""
        depths = self.tree.depths
        sigma = self.current()
        for _ in range(n):
            self.iterations += 1
            weight = float(self.iterations)
            for role in (0, 1):

                def update(d, edge_v, node_v, node_reach, sigma=sigma, weight=weight):
                    depth = depths[d]
                    regret = self.regret[d]
                    regret += edge_v
                    regret -= node_v[depth.parent]
                    np.maximum(regret, 0.0, out=regret)
                    self.total[d] += weight * node_reach[depth.parent] * sigma[d]

                _traverse(self.tree, sigma, self.payoff, update=update, roles=(role,))
                for d, depth in enumerate(depths):
                    if depth.actor == role:
                        sigma[d] = _normalize(self.regret[d], depth)

    def value(self, sigma: list[np.ndarray] | None = None) -> float:
        """Role 0's expected payoff under ``sigma`` (default: the average strategy)."""
        sigma = self.average() if sigma is None else sigma
        v0 = _traverse(self.tree, sigma, self.payoff, roles=(0,))[0]
        return float(self.tree.probs[0] @ v0)

    def exploitability(self, sigma: list[np.ndarray] | None = None) -> float:
        """NashConv / 2 of ``sigma`` in this round alone (its payoffs held fixed)."""
        sigma = self.average() if sigma is None else sigma
        v0, v1 = _traverse(self.tree, sigma, self.payoff, best=(True, True))
        return 0.5 * float(self.tree.probs[0] @ v0 + self.tree.probs[1] @ v1)


# ------------------------------------------------------------------------ sequence-form LP
def solve_round_lp(tree: RoundTree, m0: np.ndarray) -> tuple[list[np.ndarray], float]:
    """Solves one round exactly as a sequence-form linear program (scipy's HiGHS).

    Role 0's realization plan ``x`` maximizes ``f·q`` subject to ``Fᵀq ≤ Aᵀx``,
    ``Ex = e``, ``x ≥ 0`` (Koller, Megiddo and von Stengel); role 1's plan is the dual.
    Sequences are (edge, hand) pairs of the public tree.

    Args:
        tree: The round.
        m0: Role 0's payoff per call type and hand pair (role 1 gets its negative).

    Returns:
        The equilibrium as per-depth ``prob[edge, hand]``, and role 0's value.

    Raises:
        RuntimeError: if the LP solver fails.
    """
    from scipy import optimize, sparse

    depths = tree.depths
    sizes = (len(tree.hands[0]), len(tree.hands[1]))
    offset, count = [], [1, 1]  # sequence 0 of each role is the empty sequence
    for depth in depths:
        offset.append(count[depth.actor])
        count[depth.actor] += depth.num_edges * sizes[depth.actor]

    def seqs(d: int, edges: np.ndarray) -> np.ndarray:
        h = sizes[depths[d].actor]
        return offset[d] + edges[:, None] * h + np.arange(h)[None, :]

    # E x = e and F y = f: one row per information set (node, hand), plus the root row.
    rows: list[list[np.ndarray]] = [[np.array([0])], [np.array([0])]]
    cols: list[list[np.ndarray]] = [[np.array([0])], [np.array([0])]]
    vals: list[list[np.ndarray]] = [[np.array([1.0])], [np.array([1.0])]]
    nrows = [1, 1]
    for d, depth in enumerate(depths):
        a, h = depth.actor, sizes[depth.actor]
        info = nrows[a] + depth.parent[:, None] * h + np.arange(h)[None, :]
        rows[a].append(info.ravel())
        cols[a].append(seqs(d, np.arange(depth.num_edges)).ravel())
        vals[a].append(np.ones(info.size))
        node_info = nrows[a] + np.arange(depth.num_nodes * h)
        if d >= 2:
            grand = depths[d - 2].child_edges[depths[d - 1].parent[depths[d - 1].child_edges]]
            parent_seq = seqs(d - 2, grand).ravel()
        else:
            parent_seq = np.zeros(node_info.size, dtype=np.int64)
        rows[a].append(node_info)
        cols[a].append(parent_seq)
        vals[a].append(-np.ones(node_info.size))
        nrows[a] += depth.num_nodes * h
    e_mat, f_mat = (
        sparse.csr_matrix(
            (np.concatenate(vals[r]), (np.concatenate(rows[r]), np.concatenate(cols[r]))),
            shape=(nrows[r], count[r]),
        )
        for r in (0, 1)
    )
    # A[x sequence, y sequence]: role 0's payoff, chance included.
    a_rows, a_cols, a_vals = [], [], []
    chance = tree.probs[0][:, None] * tree.probs[1][None, :]
    for d, depth in enumerate(depths):
        if not len(depth.term_edges):
            continue
        a = depth.actor
        mine = seqs(d, depth.term_edges)
        theirs = seqs(d - 1, depths[d - 1].child_edges[depth.parent[depth.term_edges]])
        s0, s1 = (mine, theirs) if a == 0 else (theirs, mine)
        a_rows.append(np.broadcast_to(s0[:, :, None], (len(mine), *chance.shape)).ravel())
        a_cols.append(np.broadcast_to(s1[:, None, :], (len(mine), *chance.shape)).ravel())
        a_vals.append((m0[depth.term_type] * chance).ravel())
    a_mat = sparse.csr_matrix(
        (np.concatenate(a_vals), (np.concatenate(a_rows), np.concatenate(a_cols))),
        shape=(count[0], count[1]),
    )
    n0, n1 = count[0], nrows[1]
    objective = np.zeros(n0 + n1)
    objective[n0] = -1.0  # maximize q_root
    result = optimize.linprog(
        objective,
        A_ub=sparse.hstack([-a_mat.T, f_mat.T]).tocsc(),
        b_ub=np.zeros(count[1]),
        A_eq=sparse.hstack([e_mat, sparse.csr_matrix((nrows[0], n1))]).tocsc(),
        b_eq=np.eye(1, nrows[0]).ravel(),
        bounds=[(0, None)] * n0 + [(None, None)] * n1,
        method="highs",
    )
    if result.status != 0:
        raise RuntimeError(f"sequence-form LP of round {tree.key} failed: {result.message}")
    plans = (result.x[:n0], -result.ineqlin.marginals)
    strategies = []
    for d, depth in enumerate(depths):
        plan = np.maximum(plans[depth.actor][seqs(d, np.arange(depth.num_edges))], 0.0)
        strategies.append(_normalize(plan, depth))
    return strategies, float(-result.fun)


# ------------------------------------------------------------------------ solutions
@dataclass
class Solution:
    """An equilibrium of a whole 2-player game and its exact exploitability.

    Attributes:
        rules: The variant.
        value: Expected return of the first round's opener at the equilibrium.
        exploitability: NashConv / 2 of the strategy, by an exact best response.
        iterations: CFR+ iterations run, summed over the round states.
        seconds: Wall time of the solve (exploitability included).
        start: The first round's state.
        strategies: Per round state, per depth, the actor's ``prob[edge, hand]``.
        values: Per round state, the opener's expected return.
        trace: ``(iterations, seconds, round exploitability)`` points of the first
            round's solve, for convergence plots.
    """

    rules: RuleSet
    value: float
    exploitability: float
    iterations: int
    seconds: float
    start: RoundState
    strategies: dict[RoundState, list[np.ndarray]]
    values: dict[RoundState, float]
    trace: list[tuple[int, float, float]] = field(default_factory=list)
    _trees: dict[RoundState, RoundTree] = field(default_factory=dict, repr=False)

    def tree(self, key: RoundState) -> RoundTree:
        """The public tree of a round state (rebuilt on first use after loading)."""
        if key not in self._trees:
            self._trees[key] = RoundTree(LiarsDiceGame(self.rules), key)
        return self._trees[key]

    def trees(self) -> dict[RoundState, RoundTree]:
        """The public tree of every round state."""
        return {k: self.tree(k) for k in self.strategies}

    def to_dict(self) -> dict[str, Any]:
        """The summary as a JSON-able dict (no strategies)."""
        return {
            "rules": self.rules.to_dict(),
            "value": self.value,
            "exploitability": self.exploitability,
            "iterations": self.iterations,
            "seconds": self.seconds,
            "round_states": len(self.strategies),
            "round_values": {k.label(): v for k, v in self.values.items()},
        }

    # -------------------------------------------------------------- files
    def save(self, path: str | Path) -> Path:
        """Writes the solution as ``.npz`` (no pickles), atomically (temp file, rename)."""
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        keys = list(self.strategies)
        meta = {
            "version": SOLVER_VERSION,
            "rules": self.rules.to_dict(),
            "value": self.value,
            "exploitability": self.exploitability,
            "iterations": self.iterations,
            "seconds": self.seconds,
            "start": list(self.start),
            "keys": [list(k) for k in keys],
            "values": [self.values[k] for k in keys],
            "depths": [len(self.strategies[k]) for k in keys],
        }
        arrays = {"meta": np.array(json.dumps(meta))}
        for i, key in enumerate(keys):
            for d, probs in enumerate(self.strategies[key]):
                arrays[f"s{i}_{d}"] = probs
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name, suffix=".tmp")
        try:
            with os.fdopen(fd, "wb") as fh:
                np.savez_compressed(fh, **arrays)
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        return path

    @classmethod
    def load(cls, path: str | Path, rules: RuleSet | None = None) -> Solution:
        """Reads :meth:`save` output; ``rules``, if given, must match the file's.

        Raises:
            ValueError: if the file is from another solver version or other rules.
        """
        with np.load(path, allow_pickle=False) as data:
            meta = json.loads(str(data["meta"]))
            if meta.get("version") != SOLVER_VERSION:
                raise ValueError(
                    f"{path}: solver version {meta.get('version')}, expected {SOLVER_VERSION}"
                )
            saved = RuleSet.from_dict(meta["rules"])
            if rules is not None and saved != rules:
                raise ValueError(f"{path} solves {saved}, not {rules}")
            keys = [RoundState(*k) for k in meta["keys"]]
            strategies = {
                k: [data[f"s{i}_{d}"] for d in range(meta["depths"][i])] for i, k in enumerate(keys)
            }
        return cls(
            rules=saved,
            value=meta["value"],
            exploitability=meta["exploitability"],
            iterations=meta["iterations"],
            seconds=meta["seconds"],
            start=RoundState(*meta["start"]),
            strategies=strategies,
            values=dict(zip(keys, meta["values"], strict=True)),
        )

    # -------------------------------------------------------------- play
    def probabilities(self, key: RoundState, role: int, bids: Iterable[int], hand) -> np.ndarray:
        """The equilibrium's action probabilities (length ``num_actions``).

        Args:
            key: The round state.
            role: 0 for the opener, 1 for the responder.
            bids: This round's bid ids so far.
            hand: The acting player's dice.
        """
        tree = self.tree(key)
        d, node = tree.node_of(bids)
        depth = tree.depths[d]
        if depth.actor != role:
            raise ValueError(f"role {role} does not act after bids {list(bids)}")
        h = tree.hand_index[role][tuple(sorted(hand))]
        lo = depth.starts[node]
        hi = lo + depth.num_actions[node]
        out = np.zeros(tree.game.codec.num_actions)
        out[depth.action[lo:hi]] = self.strategies[key][d][lo:hi, h]
        return out


def round_states(rules: RuleSet) -> tuple[RoundState, dict[RoundState, RoundTree]]:
    """The first round's state and the tree of every round state reachable from it.

    Raises:
        ValueError: for unsupported rules or a round too large (see the module docstring).
    """
    check_supported(rules)
    game = LiarsDiceGame(rules)
    start = start_state(rules)
    trees: dict[RoundState, RoundTree] = {}
    todo = [start]
    while todo:
        key = todo.pop()
        if key in trees:
            continue
        trees[key] = RoundTree(game, key)
        todo += [k for k in trees[key].successors() if k not in trees]
    return start, trees


def _components(trees: dict[RoundState, RoundTree]) -> list[list[RoundState]]:
    """Strongly connected components, successors before predecessors (Tarjan)."""
    index: dict[RoundState, int] = {}
    low: dict[RoundState, int] = {}
    stack: list[RoundState] = []
    on_stack: set[RoundState] = set()
    out: list[list[RoundState]] = []

    def visit(v: RoundState) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in trees[v].successors():
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            out.append(comp)

    for v in trees:
        if v not in index:
            visit(v)
    return out


def _value_payoff(values: dict[RoundState, float]) -> Callable[[str, Any], float]:
    """Role 0's payoff of an outcome when both play on at the given values."""

    def payoff(kind: str, key: Any) -> float:
        if kind == "end":
            return 1.0 if key == 0 else -1.0
        v = values.get(key, 0.0)
        return v if kind == "same" else -v

    return payoff


def _longest_path(trees: dict[RoundState, RoundTree], start: RoundState) -> int:
    memo: dict[RoundState, int] = {}

    def walk(k: RoundState, seen: frozenset) -> int:
        if k in memo:
            return memo[k]
        nxt = [walk(s, seen | {k}) for s in trees[k].successors() if s not in seen | {k}]
        memo[k] = 1 + max(nxt, default=0)
        return memo[k]

    return walk(start, frozenset())


def solve(
    rules: RuleSet,
    *,
    iterations: int = 2000,
    tolerance: float = 1e-4,
    check_every: int = 25,
    max_sweeps: int = 200,
    method: str = "auto",
    progress: Callable[[str], None] | None = None,
) -> Solution:
    """Computes an equilibrium of the whole game by CFR+ on each round state.

    Args:
        rules: A 2-player rule set small enough (see the module docstring).
        iterations: Most CFR+ iterations per round state (per sweep when states repeat).
        tolerance: Stop a round once its own exploitability is below ``tolerance``
            divided by the most rounds a game can take.
        check_every: Iterations between those checks (grows by half each check).
        max_sweeps: Most fixed-point sweeps over repeating round states (calza).
        method: ``"lp"`` (exact sequence-form LP per round, :func:`solve_round_lp`),
            ``"cfr+"`` (iterative, :class:`RoundSolver`) or ``"auto"`` (see
            :data:`METHODS`).
        progress: Called with a line of text after each round state is solved.

    Returns:
        The :class:`Solution`, its exploitability computed by an exact best response.

    Raises:
        ValueError: for unsupported rules, a round too large, or bad arguments.

    Example:
        >>> rules = RuleSet(num_players=2, dice_per_player=1, faces=3, ones="natural")
        >>> s = solve(rules)  # the exact LP
        >>> s.exploitability < 1e-9, round(s.value * 9, 6)
        (True, -1.0)
    """
    if type(iterations) is not int or iterations < 1:
        raise ValueError(f"iterations must be a positive int, got {iterations!r}")
    if not isinstance(tolerance, (int, float)) or not tolerance > 0:
        raise ValueError(f"tolerance must be a positive number, got {tolerance!r}")
    if method not in METHODS:
        raise ValueError(f"method must be one of {', '.join(METHODS)}, got {method!r}")
    t0 = time.perf_counter()
    start, trees = round_states(rules)
    per_round = tolerance / _longest_path(trees, start)
    values: dict[RoundState, float] = {}
    solvers: dict[RoundState, RoundSolver] = {}
    strategies: dict[RoundState, list[np.ndarray]] = {}
    trace: list[tuple[int, float, float]] = []
    total_iterations = 0
    for comp in _components(trees):
        repeats = len(comp) > 1 or comp[0] in trees[comp[0]].successors()
        for _sweep in range(max_sweeps if repeats else 1):
            change = 0.0
            for key in comp:
                m0 = trees[key].payoffs(_value_payoff(values))
                if _use_lp(method, trees[key]):
                    strategies[key], new = solve_round_lp(trees[key], m0)
                    how = "LP"
                else:
                    if key in solvers:
                        solvers[key].set_payoff(m0)
                    else:
                        solvers[key] = RoundSolver(trees[key], m0)
                    rec = trace if key == start else None
                    n = _run(solvers[key], iterations, per_round, check_every, rec, t0)
                    total_iterations += n
                    new = solvers[key].value()
                    how = f"{n} CFR+ iterations"
                change = max(change, abs(new - values.get(key, 0.0)))
                values[key] = new
                if progress:
                    progress(f"{key.label()}: value {new:+.6f} ({how})")
            if change < per_round / 10:
                break
    strategies.update({k: s.average() for k, s in solvers.items()})
    sol = Solution(
        rules=rules,
        value=values[start],
        exploitability=float("nan"),
        iterations=total_iterations,
        seconds=0.0,
        start=start,
        strategies=strategies,
        values=values,
        trace=trace,
        _trees=trees,
    )
    br = best_response_values(trees, lambda key, role: strategies[key])
    sol.exploitability = 0.5 * (br[start][0] + br[start][1])
    sol.seconds = time.perf_counter() - t0
    return sol


def _use_lp(method: str, tree: RoundTree) -> bool:
    if method != "auto":
        return method == "lp"
    if importlib.util.find_spec("scipy") is None:  # the LP needs scipy; CFR+ does not
        return False
    return tree.size[1] * max(len(h) for h in tree.hands) <= LP_MAX_CELLS


def _run(
    solver: RoundSolver,
    iterations: int,
    tolerance: float,
    check_every: int,
    trace: list | None,
    t0: float,
) -> int:
    """Iterates one round until its exploitability is below ``tolerance``."""
    done = 0
    step = check_every
    while done < iterations:
        n = min(step, iterations - done)
        solver.iterate(n)
        done += n
        expl = solver.exploitability()
        if trace is not None:
            trace.append((solver.iterations, time.perf_counter() - t0, expl))
        if expl < tolerance:
            break
        step = max(check_every, int(step * 1.5))
    return done


# ------------------------------------------------------------------------ best responses
def best_response_values(
    trees: dict[RoundState, RoundTree],
    policy: Callable[[RoundState, int], list[np.ndarray]],
    *,
    max_sweeps: int = 10_000,
) -> dict[RoundState, tuple[float, float]]:
    """Exact best-response values against a fixed strategy, for every round state.

    Args:
        trees: Every round state of the game and its tree (see :func:`round_states`).
        policy: ``policy(key, role)`` gives the fixed player's strategy when it holds
            ``role`` in round ``key`` (per depth ``prob[edge, hand]``; entries for the
            other role's depths are ignored).
        max_sweeps: Most value-iteration sweeps over repeating round states.

    Returns:
        Per round state ``(as_opener, as_responder)``: the best responder's expected
        return when it opens that round, and when the fixed player opens it.
    """
    br: dict[RoundState, tuple[float, float]] = {}

    def outcome_value(as_role: int) -> Callable[[str, Any], float]:
        def payoff(kind: str, key: Any) -> float:
            if kind == "end":
                return 1.0 if key == as_role else -1.0
            opens_next = (kind == "same") == (as_role == 0)
            return br.get(key, (0.0, 0.0))[0 if opens_next else 1]

        return payoff

    for comp in _components(trees):
        repeats = len(comp) > 1 or comp[0] in trees[comp[0]].successors()
        for _ in range(max_sweeps if repeats else 1):
            change = 0.0
            for key in comp:
                tree = trees[key]
                out = []
                for role in (0, 1):  # role of the best responder
                    sigma = policy(key, 1 - role)
                    m = tree.payoffs(outcome_value(role))
                    payoff = (m, m)
                    best = (role == 0, role == 1)
                    v = _traverse(tree, sigma, payoff, best=best, roles=(role,))[role]
                    out.append(float(tree.probs[role] @ v))
                old = br.get(key, (0.0, 0.0))
                change = max(change, abs(out[0] - old[0]), abs(out[1] - old[1]))
                br[key] = (out[0], out[1])
            if change < 1e-13:
                break
    return br


# ------------------------------------------------------------------------ agents
def agent_probabilities(agent: Any, view: PlayerView) -> np.ndarray:
    """An agent's action distribution at ``view`` (length ``num_actions``).

    Agents that expose ``action_probabilities(view)`` (bots, checkpoints, the solver)
    are asked for it; :class:`~liars_env.agents.base.RandomAgent` is uniform over the
    legal actions; any other agent is taken to be deterministic given the view and its
    :meth:`act` answer becomes a one-hot distribution.

    Raises:
        ValueError: if the distribution has the wrong length, negative entries, mass
            on an illegal action or does not sum to 1.
    """
    mask = view.mask > 0
    if hasattr(agent, "action_probabilities"):
        probs = np.asarray(agent.action_probabilities(view), dtype=np.float64).reshape(-1)
    elif isinstance(agent, RandomAgent):
        probs = mask / mask.sum()
    else:
        probs = np.zeros(len(mask))
        probs[int(agent.act(view))] = 1.0
    return _checked(agent, probs, mask)


def _checked(agent: Any, probs: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """``probs`` as a distribution over the legal actions, or a ``ValueError``."""
    name = getattr(agent, "name", type(agent).__name__)
    if probs.shape != mask.shape or (probs < -1e-9).any():
        raise ValueError(
            f"agent {name!r} gave action probabilities of shape {probs.shape} with minimum "
            f"{probs.min():.3g}; expected {mask.shape[0]} non-negative numbers"
        )
    illegal = float(probs[~mask].sum())
    total = float(probs.sum())
    if illegal > 1e-6 or abs(total - 1.0) > 1e-4:
        raise ValueError(
            f"agent {name!r} gave probabilities summing to {total:.6f} with {illegal:.3g} "
            "on illegal actions; expected a distribution over the legal actions"
        )
    probs = np.where(mask, np.maximum(probs, 0.0), 0.0)
    return probs / probs.sum()


def _batch_probabilities(agent: Any, views: list[PlayerView]) -> list[np.ndarray]:
    """:func:`agent_probabilities` of many views; one call if the agent can batch."""
    if not hasattr(agent, "action_probabilities_batch"):
        return [agent_probabilities(agent, view) for view in views]
    probs = np.asarray(agent.action_probabilities_batch(views), dtype=np.float64)
    return [_checked(agent, p, view.mask > 0) for p, view in zip(probs, views, strict=True)]


class AgentTables:
    """An agent's strategy in every round, read by querying it at every information state.

    Args:
        trees: The round states and their trees.
        agent: The agent (see :func:`agent_probabilities`).
        seat: The seat it plays; the strategy may depend on it.
    """

    def __init__(self, trees: dict[RoundState, RoundTree], agent: Any, seat: int) -> None:
        self.trees = trees
        self.agent = agent
        self.seat = seat
        self._cache: dict[tuple[RoundState, int], list[np.ndarray]] = {}
        self.queries = 0

    def __call__(self, key: RoundState, role: int) -> list[np.ndarray]:
        """The agent's per-depth ``prob[edge, hand]`` when it holds ``role`` in ``key``."""
        if (key, role) not in self._cache:
            self._cache[key, role] = self._read(key, role)
        return self._cache[key, role]

    def _read(self, key: RoundState, role: int) -> list[np.ndarray]:
        tree = self.trees[key]
        game = tree.game
        layout = ObservationLayout(game.rules)
        codec = game.codec
        opener = self.seat if role == 0 else 1 - self.seat
        seat_of = (opener, 1 - opener)  # role → seat
        out = []
        for d, depth in enumerate(tree.depths):
            hands = tree.hands[depth.actor]
            probs = np.full((depth.num_edges, len(hands)), 1.0)
            if depth.actor != role:
                out.append(probs / depth.num_actions[depth.parent][:, None])
                continue
            views, where = [], []
            for n, path in enumerate(tree.node_bids(d)):
                bids = [(seat_of[k % 2], *codec.decode_bid(b)) for k, b in enumerate(path)]
                lo = depth.starts[n]
                edges = slice(lo, lo + depth.num_actions[n])
                for h, hand in enumerate(hands):
                    state = self._state(tree, seat_of, bids, hand, opener)
                    views.append(view_of(game, layout, state, self.seat))
                    where.append((edges, h))
            for (edges, h), p in zip(where, _batch_probabilities(self.agent, views), strict=True):
                probs[edges, h] = p[depth.action[edges]]
            self.queries += len(views)
            out.append(probs)
        return out

    def _state(self, tree: RoundTree, seat_of, bids, hand, opener: int) -> GameState:
        key = tree.key
        dice_left = [0, 0]
        had = [False, False]
        dice: list[list[int]] = [[], []]
        for role, (n, flag) in enumerate(
            [
                (key.opener_dice, key.opener_had_palifico),
                (key.responder_dice, key.responder_had_palifico),
            ]
        ):
            dice_left[seat_of[role]] = n
            had[seat_of[role]] = flag
            dice[seat_of[role]] = [1] * n
        dice[self.seat] = list(hand)
        return GameState(
            dice=dice,
            dice_left=dice_left,
            current_player=self.seat,
            opener=opener,
            bids=list(bids),
            palifico=key.palifico,
            had_palifico=had,
        )


@dataclass
class Exploitation:
    """How much a best response gains against an agent, exactly.

    Attributes:
        agent: The agent's name.
        best_response: The best responder's expected return against the agent in seat 0
            and in seat 1 (first opener drawn at random, as in real games).
        exploitability: Their mean: NashConv / 2 of the agent playing itself.
        queries: Information states at which the agent was asked.
        seconds: Wall time.
    """

    agent: str
    best_response: tuple[float, float]
    exploitability: float
    queries: int
    seconds: float

    def to_dict(self) -> dict[str, Any]:
        """A JSON-able dict."""
        return {
            "agent": self.agent,
            "best_response": list(self.best_response),
            "exploitability": self.exploitability,
            "queries": self.queries,
            "seconds": self.seconds,
        }


def exploit(
    agent: Any,
    rules: RuleSet,
    *,
    trees: dict[RoundState, RoundTree] | None = None,
    seats: tuple[int, ...] = (0, 1),
) -> Exploitation:
    """Exact best-response values against ``agent`` and its exploitability.

    The agent is queried at every information state of every round (see
    :func:`agent_probabilities`; an agent with ``action_probabilities_batch(views)``,
    returning one row per view, is asked a whole tree depth at once); this is exact for
    agents whose action distribution is a function of the view, which every bot and
    checkpoint of this project is. An agent
    holding a :class:`Solution` for ``rules`` as ``agent.solution`` (the ``solver``
    agent) is read from it directly, since a view does not say which players have had a
    palifico round.

    Args:
        agent: Any agent.
        rules: A 2-player rule set small enough to solve.
        trees: The round states (default: built from ``rules``).
        seats: The agent's seats to evaluate; a single seat reports the same value for
            both (for agents known to play alike in either seat).

    Raises:
        ValueError: for unsupported rules or an agent giving bad distributions.
    """
    t0 = time.perf_counter()
    if trees is None:
        start, trees = round_states(rules)
    else:
        start = start_state(rules)
    solution = getattr(agent, "solution", None)
    values = []
    queries = 0
    for seat in seats:
        if isinstance(solution, Solution) and solution.rules == rules:
            policy: Callable[[RoundState, int], list[np.ndarray]] = _solution_policy(solution)
        else:
            policy = AgentTables(trees, agent, seat)
        br = best_response_values(trees, policy)
        values.append(0.5 * (br[start][0] + br[start][1]))
        queries += getattr(policy, "queries", 0)
    if len(values) == 1:
        values.append(values[0])
    return Exploitation(
        agent=str(getattr(agent, "name", type(agent).__name__)),
        best_response=(values[0], values[1]),
        exploitability=0.5 * (values[0] + values[1]),
        queries=queries,
        seconds=time.perf_counter() - t0,
    )


def _solution_policy(solution: Solution) -> Callable[[RoundState, int], list[np.ndarray]]:
    def policy(key: RoundState, role: int) -> list[np.ndarray]:
        return solution.strategies[key]

    return policy


def cache_dir() -> Path:
    """Folder of cached solutions: ``$LIARS_DICE_CACHE``, else ``~/.cache/liars-dice``."""
    if os.environ.get("LIARS_DICE_CACHE"):
        return Path(os.environ["LIARS_DICE_CACHE"])
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "liars-dice"


def cache_path(rules: RuleSet) -> Path:
    """Where the solution of ``rules`` is cached (named by a hash of the rules)."""
    text = json.dumps(rules.to_dict(), sort_keys=True)
    digest = hashlib.sha256(f"{SOLVER_VERSION}:{text}".encode()).hexdigest()[:16]
    return cache_dir() / f"solution-{digest}.npz"


def cached_solution(rules: RuleSet, tolerance: float = 1e-3, **options: Any) -> Solution:
    """The cached solution of ``rules`` if one is at least as exact, else a new one.

    New solutions are written to :func:`cache_path` (atomically). ``options`` go to
    :func:`solve`.
    """
    check_supported(rules)
    path = cache_path(rules)
    if path.exists():
        try:
            solution = Solution.load(path, rules)
        except Exception:  # noqa: BLE001 - any stale or damaged file: solve again
            solution = None
        if solution is not None and solution.exploitability <= tolerance:
            return solution
    solution = solve(rules, tolerance=tolerance, **options)
    with contextlib.suppress(OSError):  # a read-only cache only costs time
        solution.save(path)
    return solution


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
        >>> from liars_env.agents.base import view_of
        >>> from liars_env.observation import ObservationLayout
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
        o = view.opener
        dice = (view.dice_left[o], view.dice_left[1 - o])
        found = [
            k
            for k in self.solution.strategies
            if (k.opener_dice, k.responder_dice) == dice and k.palifico == view.palifico
        ]
        if len(found) > 1:
            had = (o in self._had or view.palifico, (1 - o) in self._had)
            found = [
                k for k in found if (k.opener_had_palifico, k.responder_had_palifico) == had
            ] or found
        if not found:
            raise ValueError(f"no round state with dice {view.dice_left} in the solution")
        return found[0]

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
