"""The public tree below one node of a round, cut at a depth or not, and its leaves.

:func:`subtree` takes the part of a round's tree below a node, with each role's reach
there, for :class:`~liars_env.solver.cfr.RoundSolver` to solve; cut at a depth, its bids at
the last kept depth lead to leaves, valued each iteration by a :class:`LeafFunction` from
both players' reaches (:class:`Leaves`). :mod:`liars_env.solver.resolve` re-solves on these
trees and :mod:`liars_env.solver.leaves` holds the leaf functions.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, NamedTuple, Protocol

import numpy as np

from liars_env.solver.graph import RoundState, RoundTree, _Depth


@dataclass
class SubTree:
    """The public tree below one node of a round, with its own root reach.

    It has what :class:`RoundSolver` reads of a :class:`RoundTree`: ``depths`` (the
    node's depth and below, renumbered), ``hands`` and ``probs`` (each role's reach at
    the node per hand); ``edges[d]`` are its depth ``d``'s edges in the tree it was cut
    from (to carry a strategy of that tree over).

    A depth-limited tree (``leaf`` set) stops after a number of bids: the bids into the
    nodes cut off are its depths' ``leaf_edges``, valued by ``leaf`` from both roles'
    reach there (:meth:`leaf_values`).

    Attributes:
        key: The round state (for the leaf function).
        tree: The round's full tree, or any tree with its call types (for the leaf
            function).
        leaf: The leaf value function of a depth-limited tree, else ``None``.
        offset: Depths put above the cut tree (the re-solving gadget's one), not
            counted in the leaves' depths.
        cache: The leaf function's memory for this solve (warm starts).
    """

    depths: list[_Depth]
    hands: tuple[list, list]
    probs: tuple[np.ndarray, np.ndarray]
    edges: list[np.ndarray]
    key: RoundState | None = None
    tree: Any = None
    leaf: Any = None
    offset: int = 0
    cache: dict = field(default_factory=dict)

    def leaf_values(
        self,
        d: int,
        reach: tuple[np.ndarray, np.ndarray],
        m0: np.ndarray,
        roles: tuple[int, ...],
    ) -> list[np.ndarray | None]:
        """The counterfactual values at depth ``d``'s leaf edges, per role of ``roles``.

        Args:
            d: The depth (the gadget's included).
            reach: Each role's reach at the leaves, ``[leaf, hand]``.
            m0: Role 0's payoff per call type and hand pair.
            roles: The roles whose values to give (``None`` for the others).
        """
        if self.leaf is None:
            raise ValueError("this tree has leaves but no leaf value function")
        depth = self.depths[d]
        leaves = Leaves(
            key=self.key,
            tree=self.tree,
            last=depth.action[depth.leaf_edges],
            actor=1 - depth.actor,
            reach=reach,
            m0=m0,
            roles=roles,
            ids=(d - self.offset, depth.leaf_edges),
            cache=self.cache,
        )
        values = self.leaf(leaves)
        return [values[r] if r in roles else None for r in (0, 1)]


class Leaves(NamedTuple):
    """The leaves of one depth of a depth-limited tree, as a leaf function sees them.

    Attributes:
        key: The round state (dice counts, palifico; role 0 opened the round).
        tree: The round's tree (its call types: ``tree._type_keys``).
        last: The bid standing at each leaf (its id).
        actor: The role to move at every leaf (the one that did not bid ``last``).
        reach: Each role's reach at the leaves, ``[leaf, hand]`` (chance and its own
            moves so far).
        m0: Role 0's payoff per call type and hand pair (the next round at its value).
        roles: The roles whose values are asked for.
        ids: ``(depth, edges)``: where the leaves lie in this solve's tree (stable
            across its iterations, for warm starts).
        cache: A dictionary kept for the solve (warm starts).
    """

    key: RoundState | None
    tree: Any
    last: np.ndarray
    actor: int
    reach: tuple[np.ndarray, np.ndarray]
    m0: np.ndarray
    roles: tuple[int, ...]
    ids: tuple[int, np.ndarray]
    cache: dict


class LeafFunction(Protocol):
    """Values the leaves of a depth-limited tree (see :class:`Leaves`).

    Called with the leaves of one depth, it returns per role ``(values0, values1)``
    (``None`` for a role not in ``leaves.roles``): that role's counterfactual value of
    the rest of the round from each leaf, ``[leaf, own hand]``, the other role's reach
    included and its own not, as a call's values are. A hand's value must be what it
    gets by *best-responding* below the leaf to the other role's play there (the
    counterfactual values of a public belief state, as in DeepStack and ReBeL), not
    what it gets by its own play there, which is arbitrary for a hand its range does
    not hold: the solve above the leaf, and the re-solving gadget at the next decision,
    rely on each hand's value to know what a hand that deviates into the leaf gets. On
    perudo 1x3 at depth 2, exact leaves valued by each hand's own play were 0.091
    exploitable; by its best response, 0.0015 (full depth: 0.0008). An exact leaf gives
    these values at an equilibrium of the rest of the round from the leaf's ranges.
    """

    def __call__(self, leaves: Leaves) -> tuple[np.ndarray | None, np.ndarray | None]:
        """``(values0, values1)`` at ``leaves`` (see the class docstring)."""
        ...


def subtree(
    tree: RoundTree | SubTree,
    d0: int,
    n0: int,
    probs: tuple[np.ndarray, np.ndarray],
    depth: int | None = None,
    leaf: LeafFunction | None = None,
) -> SubTree:
    """The tree below node ``n0`` of depth ``d0`` of ``tree``, with root reach ``probs``.

    Args:
        tree: The tree to cut from (its leaves, if it has any, stay leaves).
        d0: The node's depth.
        n0: The node's index at that depth.
        probs: Each role's reach at the node per hand.
        depth: Bids kept below the node (``None``: all): the bids at the last kept depth
            lead to leaves.
        leaf: The leaf value function (needed where the cut tree has leaves).

    Raises:
        ValueError: for a ``depth`` that is not a positive int.
    """
    if depth is not None and (type(depth) is not int or depth < 1):
        raise ValueError(f"depth must be a positive int or None, got {depth!r}")
    nodes = np.array([n0])
    depths, kept = [], []
    for k, level in enumerate(tree.depths[d0:]):
        if not len(nodes):
            break
        counts = level.num_actions[nodes]
        edges = np.concatenate(
            [np.arange(s, s + c) for s, c in zip(level.starts[nodes], counts, strict=True)]
        )
        is_leaf = np.isin(edges, level.leaf_edges)
        has_child = level.edge_child[edges] >= 0
        if depth is not None and k == depth - 1:  # the last kept depth: its bids are leaves
            is_leaf |= has_child
            has_child[:] = False
        child_edges = np.flatnonzero(has_child)
        term_edges = np.flatnonzero(~has_child & ~is_leaf)
        edge_child = np.full(len(edges), -1)
        edge_child[child_edges] = np.arange(len(child_edges))
        depths.append(
            _Depth(
                actor=level.actor,
                last=level.last[nodes],
                parent=np.repeat(np.arange(len(nodes)), counts),
                action=level.action[edges],
                starts=np.concatenate([[0], np.cumsum(counts)[:-1]]),
                num_actions=counts,
                child_edges=child_edges,
                term_edges=term_edges,
                # each call edge's type, from its place among the cut tree's calls
                term_type=level.term_type[np.searchsorted(level.term_edges, edges[term_edges])],
                edge_child=edge_child,
                leaf_edges=np.flatnonzero(is_leaf),
            )
        )
        kept.append(edges)
        nodes = level.edge_child[edges[child_edges]]
    if isinstance(tree, SubTree):
        key, full, leaf = tree.key, tree.tree, leaf or tree.leaf
    else:
        key, full = tree.key, tree
    return SubTree(depths, tree.hands, probs, kept, key=key, tree=full, leaf=leaf)
