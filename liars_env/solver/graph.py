"""The round graph: round states, hands, and each round's public tree of bid sequences."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from itertools import combinations_with_replacement
from typing import Any, NamedTuple

import numpy as np

from liars_env.engine import GameState, LiarsDiceGame
from liars_env.rules import RuleSet, count_matches

MAX_PUBLIC_NODES = 400_000
"""Most decision nodes one round's public tree (its bid sequences) may hold."""


MAX_TREE_CELLS = 6_000_000
"""Most ``edges × hands`` one round's tree may hold (each solver array has this size)."""


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


@dataclass
class _Depth:
    """The decision nodes of one depth of a round's public tree and their edges.

    Edges are sorted by parent node; ``starts[n]`` is the first edge of node ``n``. Every
    edge is a bid to a node of the next depth (``child_edges``), a call
    (``term_edges``) or, in a depth-limited tree, a bid to a leaf (``leaf_edges``).
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
    leaf_edges: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    """Bids whose node is cut off (a depth-limited tree's leaves): valued by its leaf
    function, neither a child nor a call."""

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

    def _build(self, last0: int = -1, actor0: int = 0, limit: int | None = None) -> list[_Depth]:
        """The public tree below the node where ``actor0`` moves after bid ``last0``.

        With ``limit`` it stops after that many bids: the bids at its last depth lead to
        leaves (``leaf_edges``).
        """
        depths = []
        last = np.array([last0])
        actor = actor0
        type_ids: dict[tuple[int, int, int], int] = {}
        while len(last):
            mask = self.legal[actor][last + 1]
            parent, action = np.nonzero(mask)
            counts = mask.sum(axis=1)
            starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
            is_bid = action < self.num_bids
            cut = limit is not None and len(depths) == limit - 1
            child_edges = np.flatnonzero(is_bid & (not cut))
            leaf_edges = np.flatnonzero(is_bid) if cut else np.zeros(0, dtype=np.int64)
            term_edges = np.flatnonzero(~is_bid)
            term_type = np.empty(len(term_edges), dtype=np.int64)
            for i, e in enumerate(term_edges):
                t = (int(action[e]), int(last[parent[e]]), actor)
                term_type[i] = type_ids.setdefault(t, len(type_ids))
            if cut:  # the leaves' calls: their types, for the leaf function
                for e in leaf_edges:
                    type_ids.setdefault(
                        (self.game.codec.challenge, int(action[e]), 1 - actor), len(type_ids)
                    )
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
                    leaf_edges=leaf_edges,
                )
            )
            last = action[child_edges]
            actor = 1 - actor
        self._type_keys = sorted(type_ids, key=type_ids.get)
        return depths

    @classmethod
    def head(cls, game: LiarsDiceGame, key: RoundState, last: int, actor: int, depth: int):
        """The first ``depth`` bids of a round below one node, for rounds of any size.

        The tree below the node where ``actor`` (0: the opener) moves after bid ``last``
        (``-1``: the round's first bid), cut ``depth`` bids down (its last depth's bids
        lead to leaves; every call within it, and the call of each leaf's bid, has its
        type). No size limit is checked: the caller picks a depth that fits. Calls are
        settled once per count of the bid's face (:meth:`resolve_outcomes`), so large
        hands are cheap; only common-hand rules.

        Raises:
            ValueError: for a ``depth`` below 1 or individual-hand rules.
        """
        if type(depth) is not int or depth < 1:
            raise ValueError(f"depth must be a positive int, got {depth!r}")
        if game.rules.hand != "common":
            raise ValueError("a round's head is built for common-hand rules only")
        tree = cls.__new__(cls)
        tree.game, tree.key = game, key
        faces = game.rules.faces
        hands0, probs0 = hands_of(key.opener_dice, faces)
        hands1, probs1 = hands_of(key.responder_dice, faces)
        tree.hands, tree.probs = (hands0, hands1), (probs0, probs1)
        tree.hand_index = (
            {h: i for i, h in enumerate(hands0)},
            {h: i for i, h in enumerate(hands1)},
        )
        tree.num_bids = game.codec.num_bids
        tree.legal = (tree._legal_table(0), tree._legal_table(1))
        tree.depths = tree._build(last, actor, depth)
        tree.outcomes, tree.type_outcome, tree._by_count = None, None, True
        return tree

    # -------------------------------------------------------------- outcomes
    def resolve_outcomes(self) -> None:
        """Settles every call type for every pair of hands with the engine (once).

        A round's head (:meth:`head`) settles each call type once per count of the
        bid's face among both hands, on a pair of hands with that count, and gives every
        pair the outcome of its count.
        """
        if self.outcomes is not None:
            return
        if getattr(self, "_by_count", False):
            self._resolve_by_count()
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

    def _resolve_by_count(self) -> None:
        codec, rules, palifico = self.game.codec, self.game.rules, self.key.palifico
        rng = np.random.default_rng(0)
        outcomes: dict[tuple[str, Any], int] = {}
        shape = (len(self._type_keys), len(self.hands[0]), len(self.hands[1]))
        table = np.zeros(shape, dtype=np.int64)
        counts: dict[int, np.ndarray] = {}
        for t, (action, last, caller) in enumerate(self._type_keys):
            quantity, face = codec.decode_bid(last)
            if face not in counts:
                c = [
                    np.array([count_matches(rules, [h], face, palifico=palifico) for h in hs])
                    for hs in self.hands
                ]
                counts[face] = c[0][:, None] + c[1][None, :]
            total = counts[face]
            for c in np.unique(total):
                i, j = (int(x[0]) for x in np.nonzero(total == c))
                state = self.state([(1 - caller, quantity, face)], dice=self.hands_pair(i, j))
                state.current_player = caller
                self.game.apply(state, action, rng)
                table[t][total == c] = outcomes.setdefault(_outcome_of(state), len(outcomes))
        self.outcomes = sorted(outcomes, key=outcomes.get)
        self.type_outcome = table

    def hands_pair(self, i: int, j: int) -> tuple[tuple[int, ...], tuple[int, ...]]:
        """Role 0's hand ``i`` and role 1's hand ``j``."""
        return self.hands[0][i], self.hands[1][j]

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
        return node_of(self.depths, actions, where=f"round {self.key}")

    def node_bids(self, d: int) -> list[list[int]]:
        """The bid ids leading to every node of depth ``d`` (in node order)."""
        paths: list[list[int]] = [[]]
        for k in range(d):
            depth = self.depths[k]
            edges = depth.child_edges
            paths = [paths[depth.parent[e]] + [int(depth.action[e])] for e in edges]
        return paths


def node_of(
    depths: list[_Depth], actions: Iterable[int], where: str = "this tree"
) -> tuple[int, int]:
    """``(depth, node)`` reached by the given bid ids from the root of ``depths``.

    Raises:
        ValueError: if a bid is not a move with a node below it there.
    """
    node = d = 0
    for action in actions:
        depth = depths[d]
        lo = depth.starts[node]
        hi = lo + depth.num_actions[node]
        e = lo + int(np.searchsorted(depth.action[lo:hi], action))
        if e >= hi or depth.action[e] != action or depth.edge_child[e] < 0:
            raise ValueError(f"bid sequence {list(actions)} is not in {where}")
        node = int(depth.edge_child[e])
        d += 1
    return d, node


def round_state_of(keys: Iterable[RoundState], view, had: Iterable[int] = ()) -> RoundState:
    """The round state of a player's ``view`` among ``keys``.

    Its dice counts (opener first) and palifico flag pick the state; where the rules
    tell states apart by who has had a palifico round, which a view does not say,
    ``had`` (the seats known to have had one) decides, else the first is taken.

    Raises:
        ValueError: if no state has the view's dice.
    """
    o = view.opener
    dice = (view.dice_left[o], view.dice_left[1 - o])
    found = [
        k for k in keys if (k.opener_dice, k.responder_dice) == dice and k.palifico == view.palifico
    ]
    if len(found) > 1:
        had = set(had)
        flags = (o in had or view.palifico, (1 - o) in had)
        found = [
            k for k in found if (k.opener_had_palifico, k.responder_had_palifico) == flags
        ] or found
    if not found:
        raise ValueError(f"no round state with dice {view.dice_left} in these rules")
    return found[0]


def _outcome_of(state: GameState) -> tuple[str, Any]:
    """What follows a settled round (engine state after the call), by role."""
    if state.winner is not None:
        return ("end", state.winner)
    return ("same" if state.opener == 0 else "swap", state_round(state))


def state_round(state: GameState) -> RoundState:
    """The round state of an engine state (its round's opener as role 0)."""
    o = state.opener
    return RoundState(
        state.dice_left[o],
        state.dice_left[1 - o],
        bool(state.had_palifico[o]),
        bool(state.had_palifico[1 - o]),
        bool(state.palifico),
    )


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
    if rules.wild_face != "one":
        parts.append(f"wild {rules.wild_die}s")
    if rules.single_round:
        parts.append("single round")
    if rules.first_opener != "random":
        parts.append(f"{rules.first_opener} opens")
    return " ".join(parts)


def round_states(rules: RuleSet) -> tuple[RoundState, dict[RoundState, RoundTree]]:
    """The first round's state and the tree of every round state reachable from it.

    Raises:
        ValueError: for unsupported rules or a round too large (see the module docstring).
    """
    return reachable_rounds(rules, RoundTree, lambda tree: tree)


def reachable_rounds(rules: RuleSet, build: Callable, tree_of: Callable) -> tuple[RoundState, dict]:
    """The first round's state and ``build(game, key)`` for every round state reachable.

    ``tree_of(built)`` is the :class:`RoundTree` whose calls say which rounds follow.

    Raises:
        ValueError: for unsupported rules.
    """
    check_supported(rules)
    game = LiarsDiceGame(rules)
    start = start_state(rules)
    built: dict[RoundState, Any] = {}
    todo = [start]
    while todo:
        key = todo.pop()
        if key in built:
            continue
        built[key] = build(game, key)
        todo += [k for k in tree_of(built[key]).successors() if k not in built]
    return start, built


def _dice_first(key: RoundState) -> tuple:
    """Sort key: the round's dice in all, then the state itself (a total order)."""
    return (key.opener_dice + key.responder_dice, tuple(key))


def _components(trees: dict[RoundState, RoundTree]) -> list[list[RoundState]]:
    """Strongly connected components, successors before predecessors (Tarjan).

    Inside a component (rounds that lead back to each other, as calza's do) the rounds
    with the fewest dice come first: most calls take a die away, so a sweep in that
    order meets most successors already valued, and needs fewer sweeps to settle.
    """
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
            out.append(sorted(comp, key=_dice_first))

    for v in trees:
        if v not in index:
            visit(v)
    return out


def _longest_path(trees: dict[RoundState, RoundTree], start: RoundState) -> int:
    memo: dict[RoundState, int] = {}

    def walk(k: RoundState, seen: frozenset) -> int:
        if k in memo:
            return memo[k]
        nxt = [walk(s, seen | {k}) for s in trees[k].successors() if s not in seen | {k}]
        memo[k] = 1 + max(nxt, default=0)
        return memo[k]

    return walk(start, frozenset())
