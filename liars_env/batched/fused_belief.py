"""Loop-shaped steps of the belief model and the bid chances as compiled loops (numba).

:func:`liars_env.agents.belief.count_tails`, :meth:`liars_env.agents.belief.BeliefModel.follows` and
the per-bid look-ups (:func:`liars_env.batched.kernels.tails_per_bid` and
:func:`liars_env.batched.kernels.own_bid_tails`, which the bid features and the
probabilistic bots read) are a few dozen small torch ops over a batch (a convolution per
opponent and match count, a cumulative maximum, gathers); on the CPU they run these
loops instead, one pass over the batch, when numba can be imported. They compute what
the torch code computes, in the same order and precision (float products and sums of the
input's type, the suffix sums of the tails in float64 as torch's ``cumsum`` accumulates
them), so both give the same numbers; ``tests/test_belief.py`` checks them bit for bit.
"""

from __future__ import annotations

import numpy as np
from numba import njit

_JIT = {"cache": True, "nogil": True, "boundscheck": False}


@njit(**_JIT)
def count_tails(known, matches, length, out):  # pragma: no cover - compiled
    """``out[b, f, c] = P(count >= c)`` at a reveal.

    The compiled twin of :func:`liars_env.agents.belief.count_tails`.

    Args:
        known: ``(B, F)`` int64: the viewer's own matches of each face.
        matches: ``(B, S, F, K)``: each opponent's distribution of its matches per face.
        length: ``L``, one more than the largest count.
        out: ``(B, F, L + 1)`` of ``matches``' type, written whole (index ``L`` is 0).
    """
    b_size, seats, faces, k_size = matches.shape
    total = np.zeros(length, dtype=matches.dtype)
    new = np.zeros(length, dtype=matches.dtype)
    for b in range(b_size):
        for f in range(faces):
            # total[lo : hi + 1] holds the mass; the terms skipped below are products
            # with its zeros, which add exactly 0 to torch's sums
            lo = hi = min(known[b, f], length - 1)
            total[:] = 0.0
            total[lo] = 1.0
            for s in range(seats):
                top = min(hi + k_size - 1, length - 1)
                for c in range(lo, top + 1):
                    first = max(0, c - hi)
                    acc = total[c - first] * matches[b, s, f, first]
                    for j in range(first + 1, min(c - lo, k_size - 1) + 1):
                        acc += total[c - j] * matches[b, s, f, j]
                    new[c] = acc
                for c in range(lo, top + 1):
                    total[c] = new[c]
                hi = top
            suffix = 0.0
            out[b, f, length] = 0.0
            for c in range(length - 1, -1, -1):
                suffix += total[c]
                out[b, f, c] = suffix  # rounded to out's type, then clamped, as torch does
                if out[b, f, c] > 1.0:
                    out[b, f, c] = 1.0


@njit(**_JIT)
def tails_per_bid(tails, bid_face, bid_quantity, holds, after):  # pragma: no cover - compiled
    """``holds[b, i] = tails[b, face_i − 1, q_i]``, ``after`` the same at ``q_i + 1``.

    See :func:`liars_env.batched.kernels.tails_per_bid` (the same look-ups).
    """
    for b in range(tails.shape[0]):
        for i in range(bid_face.shape[0]):
            face, quantity = bid_face[i] - 1, bid_quantity[i]
            holds[b, i] = tails[b, face, quantity]
            after[b, i] = tails[b, face, quantity + 1]


@njit(**_JIT)
def follows(present, order, face, out):  # pragma: no cover - compiled
    """Which bids of each round kept the face of the bid they raised.

    Args:
        present: ``(B, num_bids)`` bool: the round's bids.
        order: ``(num_bids,)`` bid ids in the order a round makes them.
        face: ``(num_bids,)`` each bid id's face (any numbering: only compared).
        out: ``(B, num_bids)`` bool, written whole.
    """
    for b in range(present.shape[0]):
        previous = -1
        for i in range(order.shape[0]):
            bid = order[i]
            made = present[b, bid]
            out[b, bid] = made and previous == face[bid]
            if made:
                previous = face[bid]


@njit(**_JIT)
def own_bid_tails(
    tails, known, wild, unseen, bid_face, bid_quantity, holds, after
):  # pragma: no cover - compiled
    """See :func:`liars_env.batched.kernels.own_bid_tails` (the same look-ups).

    ``tails`` is the :func:`~liars_env.batched.kernels.tail_table`, ``known`` ``(B, F)``
    int64, ``wild`` ``(B, F)`` bool, ``unseen`` ``(B,)`` int64; ``holds`` and ``after``
    ``(B, num_bids)`` of ``tails``' type are written whole.
    """
    top = tails.shape[2] - 1
    for b in range(known.shape[0]):
        u = unseen[b]
        for i in range(bid_face.shape[0]):
            face = bid_face[i] - 1
            table = 1 if wild[b, face] else 0
            need = bid_quantity[i] - known[b, face]
            holds[b, i] = tails[table, u, min(max(need, 0), top)]
            after[b, i] = tails[table, u, min(max(need + 1, 0), top)]
