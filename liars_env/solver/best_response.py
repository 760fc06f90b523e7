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

    def evaluate(key: RoundState) -> tuple[float, float]:
        tree = trees[key]
        out = []
        for role in (0, 1):  # role of the best responder
            m = tree.payoffs(_pair_payoff(br, role))
            best = (role == 0, role == 1)
            v = _traverse(tree, policy(key, 1 - role), (m, m), best=best, roles=(role,))[role]
            out.append(float(tree.probs[role] @ v))
        return out[0], out[1]

    _sweep(trees, br, evaluate, max_sweeps)
    return br


def policy_values(
    trees: dict[RoundState, RoundTree],
    policy: Callable[[RoundState, int], list[np.ndarray]],
    *,
    max_sweeps: int = 10_000,
) -> dict[RoundState, float]:
    """Every round state's value for its opener when both players follow ``policy``.

    Args:
        trees: Every round state of the game and its tree (see :func:`round_states`).
        policy: ``policy(key, role)`` gives the strategy of the player holding ``role``
            in round ``key`` (per depth ``prob[edge, hand]``; its own depths are read).
        max_sweeps: Most value-iteration sweeps over repeating round states.
    """
    values: dict[RoundState, float] = {}

    def evaluate(key: RoundState) -> float:
        tree = trees[key]
        sigma = [policy(key, depth.actor)[d] for d, depth in enumerate(tree.depths)]
        m = tree.payoffs(opener_payoff(values))
        return float(tree.probs[0] @ _traverse(tree, sigma, (m, -m), roles=(0,))[0])

    _sweep(trees, values, evaluate, max_sweeps)
    return values


def match_values(
    trees: dict[RoundState, RoundTree],
    first: Callable[[RoundState, int], list[np.ndarray]],
    second: Callable[[RoundState, int], list[np.ndarray]],
    *,
    max_sweeps: int = 10_000,
) -> dict[RoundState, tuple[float, float]]:
    """Exact values of one fixed strategy played against another, for every round state.

    Args:
        trees: Every round state of the game and its tree (see :func:`round_states`).
        first: ``first(key, role)``: the first player's strategy when it holds ``role``
            in round ``key`` (per depth ``prob[edge, hand]``; its own depths are read).
        second: The second player's, the same way.
        max_sweeps: Most value-iteration sweeps over repeating round states.

    Returns:
        Per round state ``(as_opener, as_responder)``: the first player's expected
        return from that round to the end of the game when it opens the round, and when
        the second player opens it. The second player's are their negatives.
    """
    values: dict[RoundState, tuple[float, float]] = {}

    def evaluate(key: RoundState) -> tuple[float, float]:
        tree = trees[key]
        out = []
        for role in (0, 1):  # the first player's role
            mine, theirs = first(key, role), second(key, 1 - role)
            sigma = [
                (mine if depth.actor == role else theirs)[d] for d, depth in enumerate(tree.depths)
            ]
            m = tree.payoffs(_pair_payoff(values, role))
            v = _traverse(tree, sigma, (m, m), roles=(role,))[role]
            out.append(float(tree.probs[role] @ v))
        return out[0], out[1]

    _sweep(trees, values, evaluate, max_sweeps)
    return values


def _pair_payoff(
    values: dict[RoundState, tuple[float, float]], as_role: int
) -> Callable[[str, Any], float]:
    """A player's payoff of a call's outcome when it holds ``as_role`` in this round.

    The end of the game (+1 won, −1 lost), or its value of the next round state from
    ``values``: ``(as_opener, as_responder)`` per round state, read as it opens the next
    round or not (0 for a round not valued yet).
    """

    def payoff(kind: str, key: Any) -> float:
        if kind == "end":
            return 1.0 if key == as_role else -1.0
        opens_next = (kind == "same") == (as_role == 0)
        return values.get(key, (0.0, 0.0))[0 if opens_next else 1]

    return payoff


def opener_payoff(values: dict[RoundState, float]) -> Callable[[str, Any], float]:
    """Role 0's payoff of a call's outcome.

    The end of the game, or the next round's value for its opener (``values``; negated
    when the other player opens it).
    """

    def payoff(kind: str, key: Any) -> float:
        if kind == "end":
            return 1.0 if key == 0 else -1.0
        v = values.get(key, 0.0)
        return v if kind == "same" else -v

    return payoff


def _sweep(
    trees: dict[RoundState, RoundTree],
    values: dict[RoundState, Any],
    evaluate: Callable[[RoundState], Any],
    max_sweeps: int,
    *,
    tolerance: float = 1e-13,
    keep: bool = False,
    progress: Callable[[int, float], None] | None = None,
) -> None:
    """Fills ``values[key] = evaluate(key)`` for every round state of ``trees``.

    The rounds that follow come first; rounds that can repeat are swept until no value
    moves by ``tolerance``. With ``keep``, a group of rounds whose values are all in
    ``values`` already is not evaluated again (``trees`` must then hold every round that
    can follow one of its rounds). ``progress`` is called after each sweep of rounds
    that repeat with the sweep's number (from 1) and the largest change of a value.
    """
    for comp in _components(trees):
        if keep and all(key in values for key in comp):
            continue
        repeats = len(comp) > 1 or comp[0] in trees[comp[0]].successors()
        for sweep in range(max_sweeps if repeats else 1):
            change = 0.0
            for key in comp:
                new = evaluate(key)
                old = values.get(key, np.zeros_like(new, dtype=float))
                change = max(change, float(np.max(np.abs(np.subtract(new, old)))))
                values[key] = new
            if repeats and progress is not None:
                progress(sweep + 1, change)
            if change < tolerance:
                break
