"""The backward pass of CFR+ on a round's graph, on one core or on all of them.

One CFR+ iteration of :class:`~liars_env.solver.last_bid.AbstractSolver` is a forward
pass (each player's reach of every node, linear in the edges) and a backward pass:
``W[node, hand0, hand1]``, the opener's expected payoff from each node on, and the
counterfactual value of each edge for the player whose regrets are updated. The
backward pass touches every hand pair of every edge, ``252 × 252`` of them at 5 vs 5
dice, and takes nearly all of a solve's time.

Two kernels compute it, compiled with numba:

* ``_backward_serial``, one core;
* ``_backward_parallel``, the same sums split over numba's threads: the opener's
  hands among threads for ``W`` and the opener's values, then what the responder's
  edges lead to for the responder's values.

Each output cell is summed by one thread, in the same order as the serial kernel
(over a node's edges in order, then over the other player's hands in order), so the
result does not depend on how many threads run it. :class:`BackwardPass` runs the parallel
kernel where a round has at least :data:`PARALLEL_PAIRS` hand pairs (on the small
games, waking the threads costs more than a whole pass) and numba has more than one
thread: as many as the machine has cores by default; ``NUMBA_NUM_THREADS=1`` keeps a
solve on one core.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from liars_env.solver.recall_graph import AbstractRound

try:  # numba is a dependency of the package; plain Python runs the same loops (slowly)
    from numba import get_num_threads, njit, prange
except ImportError:  # pragma: no cover

    def njit(*args, **kwargs):
        """Identity decorator standing in for numba's."""
        return args[0] if args and callable(args[0]) else (lambda f: f)

    prange = range

    def get_num_threads() -> int:
        """One thread without numba."""
        return 1


_ONE_AT_A_TIME = threading.Lock()

PARALLEL_PAIRS = 4096
"""The fewest hand pairs (``hands0 × hands1``) of a round whose backward pass runs on
numba's threads: 4 vs 4 dice of 6 faces have 126 × 126; 1 vs 1 die, 6 × 6."""


@njit(cache=True, fastmath=True)
def _backward_serial(
    order, actor, start, child, local, etype, m0, sigma0, sigma1,
    reach0, reach1, p0, p1, total, q0, q1, who,
):  # fmt: skip  # pragma: no cover
    """``total = W`` of every node, and the counterfactual values of ``who``'s edges.

    ``q0[edge, h0]`` is the opener's value of an edge against the responder's summed
    reach of its node; ``q1`` the responder's (its payoff: the negative).
    """
    n0, n1 = p0.shape[0], p1.shape[0]
    w = np.empty(max(n0, n1))
    for k in range(order.shape[0] - 1, -1, -1):
        n = order[k]
        a = actor[n]
        out = total[n]
        out[:] = 0.0
        if a == 0:
            for h in range(n1):
                w[h] = p1[h] * reach1[n, h]
        else:
            for h in range(n0):
                w[h] = p0[h] * reach0[n, h]
        for e in range(start[n], start[n + 1]):
            values = total[child[e]] if child[e] >= 0 else m0[etype[e]]
            le = local[e]
            if a == 0:
                for i in range(n0):
                    s = sigma0[le, i]
                    acc = 0.0
                    for j in range(n1):
                        v = values[i, j]
                        acc += v * w[j]
                        out[i, j] += s * v
                    if who == 0:
                        q0[le, i] = acc
            else:
                if who == 1:
                    for j in range(n1):
                        q1[le, j] = 0.0
                for i in range(n0):
                    wi = w[i]
                    for j in range(n1):
                        v = values[i, j]
                        out[i, j] += sigma1[le, j] * v
                        if who == 1:
                            q1[le, j] -= wi * v


@njit(cache=True, fastmath=True, parallel=True)
def _backward_parallel(
    order, actor, start, child, local, etype, m0, sigma0, sigma1,
    reach0, reach1, p0, p1, total, q0, q1, who, blocks, first, into, parent,
):  # fmt: skip  # pragma: no cover
    """``_backward_serial``, its sums split over numba's threads.

    Row ``hand0`` of every node's ``W`` depends only on row ``hand0`` of its children's,
    so the opener's hands are split into ``blocks`` of neighbouring rows, one thread
    each, for the whole graph at once (one parallel loop, not one per node); the
    responder's values, which sum over the opener's hands, follow in a second loop, over
    what the responder's edges lead to: each child's ``W`` is read once for all the
    edges into it. ``first``, ``into``, ``parent``: the responder's edges grouped by
    target (:class:`BackwardPass`).
    """
    n0, n1 = p0.shape[0], p1.shape[0]
    nodes = order.shape[0]
    w0 = np.empty((nodes, n0))
    w1 = np.empty((nodes, n1))
    for n in range(nodes):
        for h in range(n0):
            w0[n, h] = p0[h] * reach0[n, h]
        for h in range(n1):
            w1[n, h] = p1[h] * reach1[n, h]
    for b in prange(blocks):
        lo = b * n0 // blocks
        hi = (b + 1) * n0 // blocks
        for k in range(nodes - 1, -1, -1):
            n = order[k]
            for i in range(lo, hi):
                total[n, i, :] = 0.0
            for e in range(start[n], start[n + 1]):
                c = child[e]
                values = total[c] if c >= 0 else m0[etype[e]]
                le = local[e]
                for i in range(lo, hi):
                    row = total[n, i]
                    if actor[n] == 0:
                        s = sigma0[le, i]
                        acc = 0.0
                        for j in range(n1):
                            v = values[i, j]
                            acc += v * w1[n, j]
                            row[j] += s * v
                        if who == 0:
                            q0[le, i] = acc
                    else:
                        for j in range(n1):
                            row[j] += sigma1[le, j] * values[i, j]
    if who == 1:
        targets = first.shape[0] - 1
        for t in prange(targets):
            lo, hi = first[t], first[t + 1]
            if lo == hi:
                continue
            values = total[t] if t < nodes else m0[t - nodes]
            acc = np.empty(n1)
            for x in range(lo, hi):
                acc[:] = 0.0
                n = parent[x]
                for i in range(n0):
                    wi = w0[n, i]
                    for j in range(n1):
                        acc[j] -= wi * values[i, j]
                q1[local[into[x]], :] = acc


def parallel(hands0: int, hands1: int) -> bool:
    """Whether :class:`BackwardPass` runs a round of these hand counts on numba's threads."""
    return hands0 * hands1 >= PARALLEL_PAIRS and get_num_threads() > 1


def _grouped_by_target(graph: AbstractRound) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The responder's edges grouped by what they lead to.

    A child node ``c`` is target ``c``, a call of type ``t`` target ``nodes + t``.
    Returns ``first`` (each target's first place in ``into``, then the total), ``into``
    (edge ids, in edge order within a target) and ``parent`` (each one's node).
    """
    nodes = len(graph.actor)
    node_of = np.repeat(np.arange(nodes), np.diff(graph.start))
    edges = np.flatnonzero(graph.actor[node_of] == 1)
    child = graph.child[edges]
    target = np.where(child >= 0, child, nodes + graph.etype[edges])
    order = np.argsort(target, kind="stable")
    calls = int(graph.etype.max()) + 1 if len(graph.etype) else 0
    count = np.bincount(target, minlength=nodes + calls)
    first = np.concatenate([[0], np.cumsum(count)]).astype(np.int64)
    into = edges[order].astype(np.int64)
    return first, into, node_of[into].astype(np.int64)


class BackwardPass:
    """The backward pass of one round's graph: ``W`` and one role's counterfactual values.

    What depends on the graph alone (the responder's edges grouped by target, for the
    parallel kernel) is computed once, here.

    Args:
        graph: The round's graph.
    """

    def __init__(self, graph: AbstractRound) -> None:
        self.graph = graph
        self._groups = _grouped_by_target(graph)

    def __call__(
        self,
        m0: np.ndarray,
        sigma: Sequence[np.ndarray],
        reach: Sequence[np.ndarray],
        probs: Sequence[np.ndarray],
        total: np.ndarray,
        q: Sequence[np.ndarray],
        who: int,
    ) -> None:
        """Writes ``total = W`` and ``who``'s counterfactual values, in place.

        Args:
            m0: The opener's payoff per call type and hand pair.
            sigma: Each role's strategy ``[edge, hand]``.
            reach: Each role's reach ``[node, hand]``, from the forward pass.
            probs: Each role's hand probabilities.
            total: ``W[node, hand0, hand1]``, written.
            q: Each role's counterfactual values ``[edge, hand]``; ``who``'s are written.
            who: The role whose values are written (0 or 1), or -1 for ``W`` alone.
        """
        g = self.graph
        args = (
            g.order, g.actor, g.start, g.child, g.local, g.etype, m0, sigma[0], sigma[1],
            reach[0], reach[1], probs[0], probs[1], total, q[0], q[1], who,
        )  # fmt: skip
        if parallel(len(probs[0]), len(probs[1])):
            with _ONE_AT_A_TIME:  # numba's default threading layer aborts on concurrent launches
                _backward_parallel(*args, get_num_threads(), *self._groups)
        else:
            _backward_serial(*args)
