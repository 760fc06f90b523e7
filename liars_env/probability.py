"""Exact probabilities of bids from one player's point of view.

A die that the viewer cannot see matches face ``f`` with probability ``1/F``, or ``2/F``
when a wild face is in force and ``f`` is not that face (never in a palifico round; the
wild face is 1, or F under ``wild_face="highest"``). The number
of matches among ``u`` unseen dice is Binomial(``u``, p); adding the viewer's own
matches gives the distribution of the count at a reveal.
"""

from __future__ import annotations

from functools import lru_cache
from itertools import combinations_with_replacement
from math import comb, lgamma, log

import numpy as np

from liars_env.rules import RuleSet, counts_as_match


def match_probability(rules: RuleSet, face: int, *, palifico: bool) -> float:
    """Chance that one unseen die counts toward a bid on ``face``.

    Example:
        >>> perudo = RuleSet.preset("perudo")
        >>> [round(match_probability(perudo, 4, palifico=p), 4) for p in (False, True)]
        [0.3333, 0.1667]
    """
    wild = face != rules.wild_die and rules.ones_wild and not palifico
    return (2 if wild else 1) / rules.faces


@lru_cache(maxsize=64)
def hand_table(dice: int, faces: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Every hand of ``dice`` dice, with its count of each face and its log chance.

    Hands are sorted tuples of faces in ``itertools.combinations_with_replacement``
    order. Returns read-only arrays (cached): ``hands`` ``(H, dice)``, the faces of each
    hand; ``counts`` ``(H, faces + 1)``, the dice of each face (column 0 unused); and
    ``log_prior`` ``(H,)``, the multinomial log chance of rolling that hand.

    Example:
        >>> hands, counts, log_prior = hand_table(2, 2)
        >>> hands.tolist(), counts.tolist(), np.exp(log_prior).round(2).tolist()
        ([[1, 1], [1, 2], [2, 2]], [[0, 2, 0], [0, 1, 1], [0, 0, 2]], [0.25, 0.5, 0.25])
    """
    hands = np.array(list(combinations_with_replacement(range(1, faces + 1), dice)), np.int64)
    hands = hands.reshape(-1, dice)
    counts = np.zeros((len(hands), faces + 1), np.int64)
    for face in range(1, faces + 1):
        counts[:, face] = (hands == face).sum(1)
    log_prior = np.array(
        [lgamma(dice + 1) - sum(lgamma(c + 1) for c in row[1:]) for row in counts]
    ) - dice * log(faces)
    for array in (hands, counts, log_prior):
        array.flags.writeable = False
    return hands, counts, log_prior


@lru_cache(maxsize=4096)
def binomial_pmf(n: int, p: float) -> np.ndarray:
    """``P(X = k)`` for ``k = 0..n``, ``X ~ Binomial(n, p)`` (read-only, cached).

    Example:
        >>> binomial_pmf(2, 0.5).tolist()
        [0.25, 0.5, 0.25]
    """
    k = np.arange(n + 1)
    pmf = np.array([comb(n, int(i)) for i in k], dtype=float) * p**k * (1 - p) ** (n - k)
    pmf.flags.writeable = False
    return pmf


@lru_cache(maxsize=4096)
def binomial_tail(n: int, p: float) -> np.ndarray:
    """``P(X >= k)`` for ``k = 0..n+1``, ``X ~ Binomial(n, p)`` (read-only, cached).

    Example:
        >>> binomial_tail(2, 0.5).tolist()
        [1.0, 0.75, 0.25, 0.0]
    """
    out = np.zeros(n + 2)
    out[:-1] = np.minimum(np.cumsum(binomial_pmf(n, p)[::-1])[::-1], 1.0)
    out.flags.writeable = False
    return out


def count_pmf(
    rules: RuleSet,
    face: int,
    *,
    own_dice: tuple[int, ...] | list[int],
    own_counted: bool,
    unseen_dice: int,
    palifico: bool,
) -> np.ndarray:
    """Distribution of the count at a reveal, from one player's point of view.

    Args:
        rules: The variant.
        face: The bid's face.
        own_dice: The viewer's faces.
        own_counted: Whether the viewer's dice are counted (always, but for an
            ``individual`` bid by someone else).
        unseen_dice: Counted dice the viewer cannot see.
        palifico: Whether the round is palifico.

    Returns:
        ``pmf[c] = P(count == c)`` for ``c = 0..known + unseen_dice``.

    Example:
        >>> perudo = RuleSet.preset("perudo")
        >>> pmf = count_pmf(perudo, 4, own_dice=(1, 4, 6), own_counted=True,
        ...                 unseen_dice=1, palifico=False)
        >>> pmf.round(3).tolist()  # two known matches, one unseen die at 1/3
        [0.0, 0.0, 0.667, 0.333]
    """
    known = 0
    if own_counted:
        known = sum(counts_as_match(rules, d, face, palifico=palifico) for d in own_dice)
    pmf = np.zeros(known + unseen_dice + 1)
    pmf[known:] = binomial_pmf(unseen_dice, match_probability(rules, face, palifico=palifico))
    return pmf
