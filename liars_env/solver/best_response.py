"""Exact best responses of the whole game, round by round from the end backwards."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from liars_env.solver.cfr import _traverse
from liars_env.solver.graph import RoundState, RoundTree, _components


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
