"""CFR+ on one round's public tree, vectorized over the private hands."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from liars_env.solver.graph import RoundTree, _Depth


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

    A depth-limited tree (a depth with ``leaf_edges``) has a method
    ``leaf_values(d, (reach0, reach1), m0, roles)`` giving, per role of ``roles``, its
    counterfactual values at depth ``d``'s leaf edges from both roles' reach there.

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
    # a depth-limited tree's leaves, valued from both roles' reach there (this pass's)
    leaves: dict[int, list[np.ndarray | None]] = {}
    for d, depth in enumerate(depths):
        if len(depth.leaf_edges):
            actor, other = (r[depth.leaf_edges] for r in edge_reach[d])
            reach01 = (actor, other) if depth.actor == 0 else (other, actor)
            leaves[d] = tree.leaf_values(d, reach01, payoff[0], roles)
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
            if len(depth.leaf_edges):
                v[depth.leaf_edges] = leaves[d][role]
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
