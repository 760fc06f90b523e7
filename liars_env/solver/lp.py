"""The exact sequence-form linear program of one round (scipy's HiGHS)."""

from __future__ import annotations

import numpy as np

from liars_env.solver.cfr import _normalize
from liars_env.solver.graph import RoundTree

LP_MAX_CELLS = 200_000
"""Largest round (edges × hands) that ``method="auto"`` gives to the LP (measured: 1 die
each with 6 faces, 49k cells, takes 1 s by LP; 2 dice each with 4 faces, 1.3M cells in
its first round, did not finish in 5 minutes by LP but does by CFR+)."""


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
