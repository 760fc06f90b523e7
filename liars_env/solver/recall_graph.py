"""The graph of one round as players who remember part of its bids see it.

A player decides from its own hand and what it *remembers* of the round's bids: the last
``memory`` bids exactly and the faces of the ``faces`` bids before them
(:func:`remember`). The rest of the round below a node is then the same whatever led to
it, so the round becomes a graph of nodes (:class:`AbstractRound`: what is remembered,
whose turn it is), small enough for CFR+ at any dice count
(:mod:`~liars_env.solver.last_bid`, which solves it). Here: the graph, the memory a
budget allows (:func:`budgeted_round`), every round's graph (:func:`round_graphs`), and
each player's own reach of its nodes (:func:`own_reach`, :func:`unreached_cells`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from liars_env.engine import LiarsDiceGame
from liars_env.rules import RuleSet
from liars_env.solver.blueprint_file import node_normalized
from liars_env.solver.graph import RoundState, RoundTree, reachable_rounds

try:  # numba is a dependency of the package; plain Python runs the same loops (slowly)
    from numba import njit
except ImportError:  # pragma: no cover

    def njit(*args, **kwargs):
        """Identity decorator standing in for numba's."""
        return args[0] if args and callable(args[0]) else (lambda f: f)


NO_BID = -2
"""Pads a node's remembered bids where fewer bids have been made."""


@njit(cache=True)
def _forward(order, actor, start, child, local, sigma0, sigma1, reach0, reach1):  # pragma: no cover
    """Each player's reach of every node, summed over the bid sequences into it."""
    reach0[:] = 0.0
    reach1[:] = 0.0
    reach0[0, :] = 1.0
    reach1[0, :] = 1.0
    for k in range(order.shape[0]):
        n = order[k]
        for e in range(start[n], start[n + 1]):
            c = child[e]
            if c < 0:
                continue
            if actor[n] == 0:
                reach0[c] += reach0[n] * sigma0[local[e]]
                reach1[c] += reach1[n]
            else:
                reach1[c] += reach1[n] * sigma1[local[e]]
                reach0[c] += reach0[n]


def check_memory(memory: int, faces: int) -> None:
    """Raises a ``ValueError`` unless ``memory >= 1`` and ``faces >= 0`` are ints."""
    if type(memory) is not int or memory < 1:
        raise ValueError(f"memory must be a positive int (bids remembered), got {memory!r}")
    if type(faces) is not int or faces < 0:
        raise ValueError(f"faces must be an int >= 0 (faces remembered), got {faces!r}")


MAX_BYTES = 2_600_000_000
"""The default budget of a round that may remember more (``max_memory``): what its
solver holds (:attr:`AbstractRound.solver_bytes`), about what the 5 vs 5 round takes
with ``memory=2`` (2.5 GB)."""


def check_max_memory(memory: int, max_memory: int | None, max_bytes: int) -> None:
    """Raises a ``ValueError`` unless ``max_memory`` and ``max_bytes`` can be used.

    ``max_memory``: ``None`` or an int >= ``memory``; ``max_bytes``: a positive int.
    """
    if max_memory is not None and (type(max_memory) is not int or max_memory < memory):
        raise ValueError(
            f"max_memory must be an int >= memory ({memory}) or None, got {max_memory!r}"
        )
    if type(max_bytes) is not int or max_bytes < 1:
        raise ValueError(f"max_bytes must be a positive int (bytes), got {max_bytes!r}")


def node_bound(num_bids: int, memory: int, faces: int, num_faces: int) -> int:
    """At most how many nodes a round of ``num_bids`` bids has with this memory.

    Each node is a player to move and what it remembers: up to ``memory`` rising bids
    (``C(num_bids, k)`` ways to hold ``k``) and ``faces`` faces (or none yet).

    Example:
        >>> node_bound(60, 2, 0, 6)  # 5 vs 5 dice (3,532 nodes in fact)
        3662
    """
    held = sum(math.comb(num_bids, k) for k in range(memory + 1))
    return 2 * held * (num_faces + 1) ** faces


def budgeted_round(
    game: LiarsDiceGame,
    key: RoundState,
    memory: int,
    faces: int,
    max_memory: int | None,
    max_bytes: int = MAX_BYTES,
) -> AbstractRound:
    """Round ``key``'s graph remembering as many bids as the budget allows.

    The most bids from ``memory`` to ``max_memory`` whose solver holds at most
    ``max_bytes`` (:attr:`AbstractRound.solver_bytes`); ``memory`` whatever its size.
    Rounds with few dice are small. Perudo, 2 × 5 dice, ``max_memory=4`` and the
    default budget: the rounds of 8 dice or more remember 2 bids, those of 6 or 7 dice
    3, the rest 4.
    """
    graph = AbstractRound.build(game, key, memory, faces)
    top = memory if max_memory is None else max_memory
    head = graph.tree
    bids = head.legal[0][:, : head.num_bids] | head.legal[1][:, : head.num_bids]
    num_bids = int(bids.any(axis=0).sum())
    pairs = len(head.probs[0]) * len(head.probs[1])
    for m in range(memory + 1, top + 1):
        if 8 * node_bound(num_bids, m, faces, game.rules.faces) * pairs > max_bytes:
            break  # its W alone would be over
        longer = AbstractRound.build(game, key, m, faces)
        if longer.solver_bytes > max_bytes:
            break
        graph = longer
    return graph


def bid_faces(game: LiarsDiceGame) -> np.ndarray:
    """Each bid id's face."""
    return np.array([game.codec.decode_bid(b)[1] for b in range(game.codec.num_bids)])


def remember(key: tuple[int, ...], bid: int, faces: int, face_of: np.ndarray) -> tuple[int, ...]:
    """What a player remembers after ``bid``, from what it remembered before (``key``).

    ``key`` holds the faces of ``faces`` older bids, then the last bids exactly; the
    oldest exact bid becomes a face. Remembering two bids and one face, ``(f, a, b)``
    then bid ``c`` gives ``(face of a, b, c)``; :data:`NO_BID` stands for a bid not
    made yet, and for its face.

    Example:
        >>> face_of = np.array([1, 2, 3, 4, 5, 6])  # bids 0-5: "one 1" ... "one 6"
        >>> remember((NO_BID, NO_BID, 0), 1, 1, face_of)
        (-2, 0, 1)
        >>> remember((-2, 0, 1), 4, 1, face_of)
        (1, 1, 4)
    """
    dropped = key[faces]
    face = NO_BID if dropped == NO_BID else int(face_of[dropped])
    older = (*key[1:faces], face) if faces else ()
    return (*older, *key[faces + 1 :], int(bid))


def remembered(bids, memory: int, faces: int, face_of: np.ndarray) -> tuple[int, ...]:
    """What a player remembers after a round's ``bids`` (bid ids, in order)."""
    key = (NO_BID,) * (faces + memory)
    for bid in bids:
        key = remember(key, bid, faces, face_of)
    return key


@dataclass
class AbstractRound:
    """One round's graph of remembered bids: nodes, edges and every call's payoff type.

    A node is the player to move (0: the opener) and what it remembers of the round's
    bids (:func:`remember`): the faces of ``faces`` bids, then the last ``memory`` bids
    (padded with :data:`NO_BID` at the round's start); node 0 is the round's first bid.
    Edges are sorted by node; each player's edges are also numbered on their own
    (``local``), in node order, to index its strategy ``[edge, hand]``.

    Attributes:
        tree: A one-bid head of the round (hands, chance and call settling).
        memory: Bids remembered.
        faces: Faces remembered of the bids before those.
        keys: Each node's remembered faces and bids, ``[node, faces + memory]``.
        actor: Each node's player to move.
        start: Node ``n``'s edges are ``start[n]:start[n + 1]``.
        action: Each edge's action id.
        child: Each edge's node, ``-1`` for a call.
        etype: Each call's type in ``tree`` (``-1`` for a bid).
        local: Each edge's index among its player's edges.
        order: The nodes in an order where every node comes after its parents.
    """

    tree: RoundTree
    memory: int
    faces: int
    keys: np.ndarray
    actor: np.ndarray
    start: np.ndarray
    action: np.ndarray
    child: np.ndarray
    etype: np.ndarray
    local: np.ndarray
    order: np.ndarray

    @classmethod
    def build(
        cls, game: LiarsDiceGame, key: RoundState, memory: int = 1, faces: int = 0
    ) -> AbstractRound:
        """The graph of round ``key`` (any dice count; common-hand rules).

        Raises:
            ValueError: for a ``memory`` below 1, a negative ``faces``, or bids that
                can repeat.
        """
        check_memory(memory, faces)
        tree = RoundTree.head(game, key, -1, 0, 1)
        face_of = bid_faces(game)
        num_bids = tree.num_bids
        rank = _bid_ranks(np.stack([tree.legal[0][:, :num_bids], tree.legal[1][:, :num_bids]]))
        root = (NO_BID,) * (faces + memory)
        nodes = {(0, root): 0}
        todo = [(0, root)]
        actor, keys, start, action, child, etype = [], [], [0], [], [], []
        types: dict[tuple[int, int, int], int] = {}
        while todo:  # breadth first: a node's number is its place in ``todo``
            a, mem = todo.pop(0)
            last = mem[-1] if mem[-1] != NO_BID else -1
            actor.append(a)
            keys.append(mem)
            for x in np.flatnonzero(tree.legal[a][last + 1]):
                x = int(x)
                action.append(x)
                if x < num_bids:
                    node = (1 - a, remember(mem, x, faces, face_of))
                    if node not in nodes:
                        nodes[node] = len(nodes)
                        todo.append(node)
                    child.append(nodes[node])
                    etype.append(-1)
                else:
                    child.append(-1)
                    etype.append(types.setdefault((x, last, a), len(types)))
            start.append(len(action))
        tree._type_keys = sorted(types, key=types.get)
        tree.outcomes = None
        tree.resolve_outcomes()
        actor_arr = np.array(actor, dtype=np.int64)
        start_arr = np.array(start, dtype=np.int64)
        edge_actor = np.repeat(actor_arr, np.diff(start_arr))
        local = np.zeros(len(action), dtype=np.int64)
        for a in (0, 1):
            mine = edge_actor == a
            local[mine] = np.arange(int(mine.sum()))
        last_rank = np.array([rank[k[-1]] if k[-1] != NO_BID else -1 for k in keys])
        return cls(
            tree=tree,
            memory=memory,
            faces=faces,
            keys=np.array(keys, dtype=np.int64).reshape(len(keys), faces + memory),
            actor=actor_arr,
            start=start_arr,
            action=np.array(action, dtype=np.int64),
            child=np.array(child, dtype=np.int64),
            etype=np.array(etype, dtype=np.int64),
            local=local,
            order=np.argsort(last_rank, kind="stable"),
        )

    @property
    def solver_bytes(self) -> int:
        """Bytes :class:`~liars_env.solver.last_bid.AbstractSolver` holds for this graph.

        ``W`` (nodes × hands × hands), both players' reach, and five arrays per edge and
        hand of its player.
        """
        hands = (len(self.tree.probs[0]), len(self.tree.probs[1]))
        edge_actor = np.repeat(self.actor, np.diff(self.start))
        per_edge = sum(int((edge_actor == a).sum()) * hands[a] for a in (0, 1))
        nodes = len(self.actor)
        return 8 * (nodes * hands[0] * hands[1] + nodes * sum(hands) + 5 * per_edge)

    def edges_of(self, role: int) -> tuple[np.ndarray, np.ndarray]:
        """``role``'s nodes and, per its edge (local order), the node it leaves."""
        nodes = np.flatnonzero(self.actor == role)
        counts = np.diff(self.start)[nodes]
        return nodes, np.repeat(nodes, counts)


def _bid_ranks(bids: np.ndarray) -> np.ndarray:
    """Each bid's place in an order where a bid comes after every bid it can follow.

    ``bids[actor, last + 1, bid]``: may ``actor`` bid ``bid`` after ``last``.

    Raises:
        ValueError: if bids can cycle (a rule set whose bids do not rise).
    """
    edges = bids.any(axis=0)[1:]  # edges[last, bid]
    num = edges.shape[0]
    indegree = edges.sum(axis=0)
    ready = [b for b in range(num) if indegree[b] == 0]
    rank = np.full(num, -1)
    done = 0
    while ready:
        b = ready.pop()
        rank[b] = done
        done += 1
        for c in np.flatnonzero(edges[b]):
            indegree[c] -= 1
            if indegree[c] == 0:
                ready.append(int(c))
    if done != num:
        raise ValueError("the bids of this rule set can repeat: no graph of remembered bids")
    return rank


def own_reach(graph: AbstractRound, probs: list[np.ndarray]) -> list[np.ndarray]:
    """Per role, its own reach of each ``[edge, hand]`` cell's node, summed over bid sequences.

    ``probs`` are the roles' strategies on ``graph`` (``[local edge, hand]``, any
    scale: each node's are normalized, as
    :meth:`~liars_env.solver.last_bid.Blueprint.probabilities` does). A
    player's own reach of a node with a hand is the product of its own probabilities
    of the bids that lead there, summed over the bid sequences into it
    (:func:`_forward`); each of a node's edges gets its node's. The sum counts each of
    the other player's bids into the node apart, so it can pass 1 (up to about 10⁵ in
    the 5v5 round of ``perudo_2p``).
    """
    nodes = len(graph.actor)
    sigma = [node_normalized(probs[r], graph.edges_of(r)[1], nodes) for r in (0, 1)]
    reach = [np.zeros((nodes, s.shape[1])) for s in sigma]
    _forward(graph.order, graph.actor, graph.start, graph.child, graph.local, *sigma, *reach)
    return [reach[role][graph.edges_of(role)[1]] for role in (0, 1)]


def unreached_cells(graph: AbstractRound, probs: list[np.ndarray]) -> list[np.ndarray]:
    """Per role, its ``[edge, hand]`` cells at the nodes its own play never reaches with the hand.

    Where :func:`own_reach` is 0, no game the blueprint plays ever has it at the node
    with the hand, whatever the other player does: a real round's bids map to one
    sequence of nodes, and each of its own bids on the way had probability 0 for one
    of them. So those cells can go unstored, and play, exploitability and a local best
    response (whose range puts weight 0 on such a hand) are unchanged.
    """
    return [reach == 0 for reach in own_reach(graph, probs)]


def round_graphs(
    rules: RuleSet,
    memory: int = 1,
    faces: int = 0,
    max_memory: int | None = None,
    max_bytes: int = MAX_BYTES,
) -> tuple[RoundState, dict[RoundState, AbstractRound]]:
    """The first round's state and the graph of every round reachable from it.

    Each round remembers ``memory`` bids, or more in the small rounds when
    ``max_memory`` is more (:func:`budgeted_round`).
    """

    def build(game: LiarsDiceGame, key: RoundState) -> AbstractRound:
        return budgeted_round(game, key, memory, faces, max_memory, max_bytes)

    return reachable_rounds(rules, build, lambda g: g.tree)
