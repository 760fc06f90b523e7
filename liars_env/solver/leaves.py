"""Leaf value functions for depth-limited re-solving (:mod:`liars_env.solver.resolve`).

A depth-limited solve stops a number of bids below the decision; each of its leaves is
a public state of the round (the dice counts, whose turn it is, the bid standing) with
both players' ranges there, and a leaf function gives each player's counterfactual
value of the rest of the round from it, per hand (:class:`~.subtree.LeafFunction`). The
solve asks again at every CFR iteration, from that iteration's ranges (as ReBeL and
CFR-D do), so a leaf may depend on the ranges in any way.

* :class:`CallLeaf` (``"call"``): the standing bid called at once. Cheap, any dice
  count, and far from the truth where bidding on pays: a baseline the learned leaf (a
  value network over the ranges, not built yet) has to beat.
* :class:`ExactLeaf` (``"exact"``): the equilibrium of the rest of the round from the
  leaf's ranges, solved by CFR+ on the round's full tree below the leaf (warm-started
  across the outer solve's iterations). Only where the solver builds the round: the
  oracle that tests depth-limited solving against solving to the round's end.
"""

from __future__ import annotations

import numpy as np

from liars_env.solver.cfr import RoundSolver, _traverse
from liars_env.solver.subtree import Leaves, subtree

LEAVES = ("call", "exact")
"""Named leaf value functions (:func:`make_leaf`)."""


def _call_types(tree) -> dict[tuple[int, int, int], int]:
    """``(action, last bid, caller) → call type`` of a round tree."""
    return {t: i for i, t in enumerate(tree._type_keys)}


class CallLeaf:
    """The value of calling the standing bid at once, under the leaf's ranges.

    The role to move at the leaf calls; the payoff is the round's (the next round at
    its value), so a leaf is worth what that call is worth to each hand against the
    other role's range there.
    """

    def __call__(self, leaves: Leaves) -> tuple[np.ndarray | None, np.ndarray | None]:
        """Each asked role's counterfactual values at the leaves (see :class:`Leaves`)."""
        tree = leaves.tree
        types = leaves.cache.get("call types")
        if types is None:
            types = leaves.cache["call types"] = _call_types(tree)
        challenge = tree.game.codec.challenge
        r0, r1 = leaves.reach
        out: list[np.ndarray | None] = [None, None]
        if 0 in leaves.roles:
            out[0] = np.empty_like(r0)
        if 1 in leaves.roles:
            out[1] = np.empty_like(r1)
        for last in np.unique(leaves.last):
            idx = np.flatnonzero(leaves.last == last)
            m = leaves.m0[types[challenge, int(last), leaves.actor]]
            if out[0] is not None:
                out[0][idx] = r1[idx] @ m.T
            if out[1] is not None:
                out[1][idx] = -(r0[idx] @ m)
        return out[0], out[1]


class ExactLeaf:
    """The equilibrium of the rest of the round from each leaf, solved.

    Each leaf gets CFR+ on the round's full tree below it, with the leaf's ranges as its
    root reach: ``iterations`` iterations at its first call, then, across the calls of
    one outer solve, ``warm`` more from the regrets it has (warm start), its average
    restarted so that the values follow the outer solve's current ranges. The values
    are each role's counterfactual best-response values against the other's average
    (see :class:`~.subtree.LeafFunction` for why not its own play's). With ``warm=1`` the outer
    solve and its leaves' solves together are CFR+ on the whole rest of the round (the
    outer iteration's values at a leaf are those of the leaf's current strategy), so the
    depth-limited solve converges to the full-depth one.

    Args:
        iterations: CFR+ iterations at a leaf's first call (a cold start).
        warm: CFR+ iterations at each later call of the same solve.

    Raises:
        ValueError: for a non-positive ``iterations`` or ``warm``.
    """

    def __init__(self, iterations: int = 100, warm: int = 1) -> None:
        for name, value in (("iterations", iterations), ("warm", warm)):
            if type(value) is not int or value < 1:
                raise ValueError(f"{name} must be a positive int, got {value!r}")
        self.iterations = iterations
        self.warm = warm
        self._nodes: dict[int, dict[tuple[int, int], tuple[int, int]]] = {}

    def _node(self, tree, last: int, actor: int) -> tuple[int, int]:
        """A node of ``tree`` where ``actor`` moves after ``last`` (its subtree is all alike)."""
        index = self._nodes.get(id(tree))
        if index is None:
            index = {}
            for d, level in enumerate(tree.depths):
                for n, bid in enumerate(level.last):
                    index.setdefault((int(bid), level.actor), (d, n))
            self._nodes[id(tree)] = index
        return index[last, actor]

    def __call__(self, leaves: Leaves) -> tuple[np.ndarray | None, np.ndarray | None]:
        """Each asked role's counterfactual values at the leaves (see :class:`Leaves`)."""
        tree = leaves.tree
        if not hasattr(tree, "node_of"):
            raise ValueError("leaf=exact needs the round's full tree (a small game)")
        r0, r1 = leaves.reach
        out = [np.empty_like(r0), np.empty_like(r1)]
        depth, edges = leaves.ids
        for i, last in enumerate(leaves.last):
            cache = ("exact", depth, int(edges[i]))
            solver = leaves.cache.get(cache)
            if solver is None:
                d, n = self._node(tree, int(last), leaves.actor)
                solver = RoundSolver(subtree(tree, d, n, (r0[i], r1[i])), leaves.m0)
                leaves.cache[cache] = solver
                solver.iterate(self.iterations)
            else:
                solver.tree.probs = (r0[i], r1[i])
                solver.set_payoff(leaves.m0)
                solver.iterate(self.warm)
            values = _traverse(
                solver.tree, solver.average(), solver.payoff, best=(True, True), roles=leaves.roles
            )
            for r in leaves.roles:
                out[r][i] = values[r]
        return (
            out[0] if 0 in leaves.roles else None,
            out[1] if 1 in leaves.roles else None,
        )


def make_leaf(name: str) -> CallLeaf | ExactLeaf:
    """The leaf value function named ``name`` (one of :data:`LEAVES`).

    Raises:
        ValueError: for an unknown name.
    """
    if name == "call":
        return CallLeaf()
    if name == "exact":
        return ExactLeaf()
    raise ValueError(f"leaf must be one of {', '.join(LEAVES)}, got {name!r}")
