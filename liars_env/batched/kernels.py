"""The rules of :mod:`liars_env.rules` as small vectorized torch kernels, each written once.

:mod:`liars_env.rules` is the readable reference: one game, plain ints. The batched
engine (:class:`liars_env.batched.BatchedEnv`), the batched bots
(:mod:`liars_env.agents.batched`), the belief model (:mod:`liars_env.agents.belief`) and the
policy's input features (:mod:`liars_env.agents.policy`) need the same rules for whole batches
of games at once; they take them from here instead of restating them. Every kernel is
checked against its scalar twin in ``tests/test_kernels.py``, over every preset and
both palifico states. The batched engine's CPU backend runs compiled twins of the
counting, settling, seat and palifico kernels inside its fused step
(:mod:`liars_env.batched.fused`); those are checked step by step against the torch backend and
the scalar engine in ``tests/test_batched.py``.

Shapes: ``B`` games, ``P`` seats, ``D`` dice per seat, ``F`` faces. Faces are ``1..F``
and index ``face − 1`` along an ``F`` axis; a lost die is face ``0``. The wild face is
``RuleSet.wild_die`` (1, or F under ``wild_face="highest"``); the kernels that depend on
it take it as the keyword ``wild_die``. Bid ids and their
``(quantity, face)`` arithmetic belong to :class:`liars_env.actions.ActionCodec`
(``decode_bids``/``encode_bids`` take tensors).

==========================  ===========================================================
kernel                      rule (scalar twin)
==========================  ===========================================================
:func:`round_wild`          the wild face counts for others this round (``counts_as_match``)
:func:`wild_faces`          the faces that the wild face counts toward
:func:`face_counts`         dice showing each face
:func:`known_matches`       a viewer's own matches of every face (``counts_as_match``)
:func:`count_matches`       the count at a reveal (``count_matches``)
:func:`settle_call`         who loses or gains a die, who opens next (``settle_call``)
:func:`next_active`         the next seat with dice (``LiarsDiceGame.next_active``)
:func:`next_opener`         the next round's opener (``LiarsDiceGame`` after a call)
:func:`first_holding`       both of the above in one pass
:func:`palifico_starts`     a new round is palifico (``is_palifico_round``)
:func:`first_openers`       new games' first openers (``fixed_first_opener``)
:func:`bid_caps`            the largest quantity a bid may claim (``bid_cap``)
:func:`tail_table`          ``P(Binomial(u, p) >= m)`` for the two match chances
:func:`own_bid_tails`       each bid's chance from one viewer's dice (``count_pmf``)
:func:`tails_per_bid`       per-face count tails read off per bid id
==========================  ===========================================================

The module needs torch and :mod:`liars_env.rules` only.
"""

from __future__ import annotations

from functools import lru_cache
from typing import NamedTuple

import torch

from liars_env.rules import RuleSet

try:  # compiled loops for CPU tensors (see liars_env.batched.fused_belief)
    import liars_env.batched.fused_belief as _compiled
except ImportError:  # pragma: no cover - numba is a dependency; the torch code stands in
    _compiled = None

_COMPILED_DTYPES = (torch.float32, torch.float64, torch.bool)


def compiled_kernels(tensor: torch.Tensor):
    """:mod:`liars_env.batched.fused_belief` if its loops can take ``tensor``, else ``None``.

    They can where numba imports and ``tensor`` is a float32, float64 or bool CPU tensor;
    elsewhere (a GPU, other dtypes) the callers run their torch code, which computes the
    same numbers.
    """
    if _compiled is None or tensor.device.type != "cpu" or tensor.dtype not in _COMPILED_DTYPES:
        return None
    return _compiled


__all__ = [
    "Settlement",
    "bid_caps",
    "count_matches",
    "face_counts",
    "first_holding",
    "first_openers",
    "known_matches",
    "next_active",
    "next_opener",
    "own_bid_tails",
    "palifico_starts",
    "round_wild",
    "settle_call",
    "tail_table",
    "tails_per_bid",
    "wild_faces",
]


# --------------------------------------------------------------------------- constants
# Small index tensors, built once per device (kernels run thousands of times per second;
# each torch call costs microseconds). Never written to.
@lru_cache(maxsize=256)
def _range(start: int, stop: int, device: torch.device) -> torch.Tensor:
    with torch.inference_mode(False):
        return torch.arange(start, stop, device=device)


@lru_cache(maxsize=64)
def _ring(p: int, device: torch.device) -> torch.Tensor:
    """``(2P, P)``: row ``s`` lists the seats ``s, s + 1, …`` clockwise, mod ``P``."""
    with torch.inference_mode(False):
        return (torch.arange(2 * p, device=device)[:, None] + torch.arange(p, device=device)) % p


# --------------------------------------------------------------------------- wild face
def round_wild(rules: RuleSet, palifico: torch.Tensor) -> torch.Tensor:
    """Whether the wild face (``rules.wild_die``) counts toward the others in each round.

    It does when the rules make it wild (any ``ones`` mode but ``natural``) and the
    round is not palifico.

    Args:
        rules: The variant.
        palifico: ``(B,)`` bool: whether each round is palifico.

    Returns:
        ``(B,)`` bool.

    Example:
        >>> palifico = torch.tensor([False, True])
        >>> round_wild(RuleSet.preset("perudo"), palifico).tolist()
        [True, False]
        >>> round_wild(RuleSet.preset("sanford"), palifico).tolist()
        [False, False]
    """
    if not rules.ones_wild:
        return torch.zeros_like(palifico, dtype=torch.bool)
    return ~palifico


def wild_faces(wild: torch.Tensor, faces: int, *, wild_die: int) -> torch.Tensor:
    """The faces that the wild face counts toward: every other face, in wild rounds.

    Args:
        wild: ``(B,)`` bool, as from :func:`round_wild`.
        faces: ``F``.
        wild_die: The wild face (``RuleSet.wild_die``).

    Returns:
        ``(B, F)`` bool; column ``face − 1``.

    Example:
        >>> wild_faces(torch.tensor([True, False]), 4, wild_die=1).tolist()
        [[False, True, True, True], [False, False, False, False]]
        >>> wild_faces(torch.tensor([True]), 4, wild_die=4).tolist()
        [[True, True, True, False]]
    """
    return wild[:, None] & (_range(0, faces, wild.device) != wild_die - 1)


def face_counts(dice: torch.Tensor, faces: int) -> torch.Tensor:
    """How many of the dice show each face (lost dice, face 0, show none).

    Args:
        dice: ``(..., D)`` faces.
        faces: ``F``.

    Returns:
        ``(..., F)`` long; column ``face − 1``.

    Example:
        >>> face_counts(torch.tensor([[1, 4, 4, 0]]), 4).tolist()
        [[1, 0, 0, 2]]
    """
    counts = torch.zeros((*dice.shape[:-1], faces + 1), dtype=torch.long, device=dice.device)
    counts.scatter_add_(-1, dice.long(), torch.ones_like(dice, dtype=torch.long))
    return counts[..., 1:]  # column 0 counted the lost dice


def known_matches(
    own_counts: torch.Tensor, wild_faces: torch.Tensor, *, wild_die: int
) -> torch.Tensor:
    """A viewer's own dice that count toward a bid on each face.

    Args:
        own_counts: ``(B, F)`` the viewer's dice per face (:func:`face_counts`).
        wild_faces: ``(B, F)`` bool, from :func:`wild_faces`.
        wild_die: The wild face (``RuleSet.wild_die``).

    Returns:
        ``(B, F)``: its dice of each face, plus its wild dice where they count.

    Example:
        >>> own = torch.tensor([[2, 0, 1, 0]])  # two 1s and a 3
        >>> known_matches(own, wild_faces(torch.tensor([True]), 4, wild_die=1), wild_die=1)
        tensor([[2, 2, 3, 2]])
        >>> known_matches(own, wild_faces(torch.tensor([True]), 4, wild_die=3), wild_die=3)
        tensor([[3, 1, 1, 1]])
    """
    return own_counts + wild_faces * own_counts[:, wild_die - 1 : wild_die]


def count_matches(
    dice: torch.Tensor, face: torch.Tensor, wild: torch.Tensor | None, *, wild_die: int
) -> torch.Tensor:
    """The count at a reveal: the dice of all hands that match each game's bid face.

    A die matches if it shows the face, or if it shows the wild face, that face is wild
    this round and the bid is on another face.

    Args:
        dice: ``(B, P, D)`` faces, 0 for a lost die.
        face: ``(B,)`` the bid's face.
        wild: ``(B,)`` bool from :func:`round_wild`, or ``None`` where the rules never
            make a face wild (the same count, computed with fewer ops).
        wild_die: The wild face (``RuleSet.wild_die``; only read where ``wild`` is given).

    Returns:
        ``(B,)`` long.

    Example:
        >>> dice = torch.tensor([[[1, 4, 6], [4, 4, 2], [1, 3, 5]]]).repeat(3, 1, 1)
        >>> face, wild = torch.tensor([4, 1, 4]), torch.tensor([True, True, False])
        >>> count_matches(dice, face, wild, wild_die=1).tolist()
        [5, 2, 3]
        >>> count_matches(dice, face, wild, wild_die=6).tolist()  # sixes wild
        [4, 3, 3]
    """
    matches = dice == face[:, None, None]
    if wild is not None:  # a bid on the wild face matches it anyway: no need to exclude it
        matches |= wild[:, None, None] & (dice == wild_die)
    return matches.sum((1, 2))


# --------------------------------------------------------------------------- calls
class Settlement(NamedTuple):
    """What a call settles, per game (see :func:`settle_call`)."""

    lost: torch.Tensor
    """``(B, P)`` bool: the seats that lose a die."""
    gained: torch.Tensor
    """``(B, P)`` bool: the seats that gain a die (calza)."""
    anchor: torch.Tensor
    """``(B,)`` the seat that opens the next round if it still holds dice: the loser of a
    challenge, the caller after an exact call (see :func:`next_opener`)."""
    dice_left: torch.Tensor
    """``(B, P)`` dice per seat after the call (``dice_left − lost + gained``)."""


def settle_call(
    rules: RuleSet,
    count: torch.Tensor,
    quantity: torch.Tensor,
    *,
    caller: torch.Tensor,
    bidder: torch.Tensor,
    dice_left: torch.Tensor,
    challenge: torch.Tensor,
    exact: torch.Tensor | None = None,
) -> Settlement:
    """Who loses or gains a die after a challenge or an exact call, for many games.

    A challenge costs the bidder a die when the count falls short of the quantity, else
    the caller. A wrong exact call costs the caller a die; a right one costs every other
    seat holding dice a die (``spot_on``) or gives the caller one back if it has fewer
    than it started with (``calza``). Under ``single_round`` a loser loses all its dice
    (``dice_lost``).

    Args:
        rules: The variant.
        count: ``(B,)`` the matching dice at the reveal (:func:`count_matches`).
        quantity: ``(B,)`` the called bid's quantity.
        caller: ``(B,)`` the calling seat.
        bidder: ``(B,)`` the seat that made the called bid.
        dice_left: ``(B, P)`` dice per seat before the call.
        challenge: ``(B,)`` bool: the game's action is a challenge.
        exact: ``(B,)`` bool: the game's action is an exact call (``None``: none is).
            Games with neither flag lose and gain nothing.

    Returns:
        A :class:`Settlement`.

    Example:
        >>> rules = RuleSet.preset("perudo_calza")
        >>> out = settle_call(
        ...     rules, torch.tensor([6, 6, 7]), torch.tensor([7, 7, 7]),
        ...     caller=torch.tensor([2, 2, 2]), bidder=torch.tensor([1, 1, 1]),
        ...     dice_left=torch.tensor([[5, 5, 4]] * 3),
        ...     challenge=torch.tensor([True, False, False]),
        ...     exact=torch.tensor([False, True, True]))
        >>> out.lost.int().tolist(), out.gained.int().tolist(), out.anchor.tolist()
        ([[0, 1, 0], [0, 0, 1], [0, 0, 0]], [[0, 0, 0], [0, 0, 0], [0, 0, 1]], [1, 2, 2])
        >>> out.dice_left.tolist()
        [[5, 4, 4], [5, 5, 3], [5, 5, 5]]
    """
    seats = _range(0, dice_left.shape[1], dice_left.device)
    anchor = torch.where(challenge & (count < quantity), bidder, caller)
    anchor_is = seats == anchor[:, None]
    single = rules.single_round
    if exact is None or rules.exact_call == "none":
        lost = challenge[:, None] & anchor_is
        return _settlement(lost, None, anchor, dice_left, single)
    right = exact & (count == quantity)
    lost = (challenge | (exact & ~right))[:, None] & anchor_is
    if rules.exact_call == "spot_on":
        lost |= right[:, None] & (dice_left > 0) & ~anchor_is
        return _settlement(lost, None, anchor, dice_left, single)
    gained = right[:, None] & anchor_is & (dice_left < rules.dice_per_player)
    return _settlement(lost, gained, anchor, dice_left, single)


def _settlement(
    lost: torch.Tensor,
    gained: torch.Tensor | None,
    anchor: torch.Tensor,
    dice_left: torch.Tensor,
    single_round: bool,
) -> Settlement:
    """A :class:`Settlement` with the dice left after it (``gained`` None: nobody gains).

    A loser loses one die, or all of them under ``single_round`` (``dice_lost``).
    """
    # bool tensors do not subtract; their uint8 views (free) do
    after = torch.where(lost, 0, dice_left) if single_round else dice_left - lost.view(torch.uint8)
    if gained is None:
        gained = torch.zeros_like(lost)
    else:
        after = after + gained.view(torch.uint8)
    return Settlement(lost, gained, anchor, after)


# --------------------------------------------------------------------------- seats
def first_holding(dice_left: torch.Tensor, start: torch.Tensor) -> torch.Tensor:
    """The first seat at or clockwise after ``start`` that holds dice.

    :func:`next_active` and :func:`next_opener` are this kernel; passing several start
    seats per game (``(B, K)``) answers them all in one pass.

    Args:
        dice_left: ``(B, P)`` dice per seat (some seat must hold dice).
        start: ``(B,)`` or ``(B, K)`` seats from 0 to ``2P − 1`` (``P`` and beyond wrap
            around, so ``seat + 1`` is fine).

    Returns:
        Seats, shaped like ``start``.

    Example:
        >>> dice_left = torch.tensor([[2, 0, 1], [2, 0, 1]])
        >>> first_holding(dice_left, torch.tensor([[1, 3], [2, 0]])).tolist()
        [[2, 0], [2, 0]]
    """
    b, p = dice_left.shape
    k = 1 if start.dim() == 1 else start.shape[1]
    candidates = _ring(p, dice_left.device)[start.reshape(b, k)]  # (B, K, P)
    holds = dice_left.gather(1, candidates.view(b, k * p)).view(candidates.shape) > 0
    first = holds.to(torch.int8).argmax(2, keepdim=True)
    return candidates.gather(2, first).view(start.shape)


def next_active(dice_left: torch.Tensor, seat: torch.Tensor) -> torch.Tensor:
    """The next seat clockwise from ``seat`` that holds dice (who bids next).

    Args:
        dice_left: ``(B, P)`` dice per seat.
        seat: ``(B,)`` seats.

    Returns:
        ``(B,)`` seats.

    Example:
        >>> next_active(torch.tensor([[2, 0, 1]]), torch.tensor([0])).tolist()
        [2]
    """
    return first_holding(dice_left, seat + 1)


def next_opener(dice_left: torch.Tensor, anchor: torch.Tensor) -> torch.Tensor:
    """Who opens the next round after a call.

    The anchor if it still holds dice, else the next seat clockwise that does (as
    :class:`~liars_env.engine.LiarsDiceGame` decides; see :class:`Settlement`).

    Args:
        dice_left: ``(B, P)`` dice per seat after the call.
        anchor: ``(B,)`` :attr:`Settlement.anchor`.

    Returns:
        ``(B,)`` seats.

    Example:
        >>> next_opener(torch.tensor([[2, 0, 1], [2, 1, 1]]), torch.tensor([1, 1])).tolist()
        [2, 1]
    """
    return first_holding(dice_left, anchor)


def palifico_starts(
    rules: RuleSet, dice_left: torch.Tensor, had_palifico: torch.Tensor, opener: torch.Tensor
) -> torch.Tensor:
    """Whether each new round is palifico.

    It is when the rules enable palifico, the opener holds exactly one die and has not
    opened a palifico round before in this game.

    Args:
        rules: The variant.
        dice_left: ``(B, P)`` dice per seat at the round's start.
        had_palifico: ``(B, P)`` bool: the seats that have opened a palifico round.
        opener: ``(B,)`` the round's opener.

    Returns:
        ``(B,)`` bool.

    Example:
        >>> rules = RuleSet.preset("perudo_palifico")
        >>> dice_left = torch.tensor([[1, 3], [1, 3], [1, 3]])
        >>> had = torch.tensor([[False, False], [True, False], [False, False]])
        >>> palifico_starts(rules, dice_left, had, torch.tensor([0, 0, 1])).tolist()
        [True, False, False]
    """
    if not rules.palifico:
        return torch.zeros(opener.shape, dtype=torch.bool, device=opener.device)
    at = opener[:, None]
    opener_dice = dice_left.gather(1, at).squeeze(1)
    return (opener_dice == 1) & ~had_palifico.gather(1, at).squeeze(1)


def first_openers(
    rules: RuleSet, count: int, generator: torch.Generator, device: torch.device
) -> torch.Tensor:
    """The first openers of ``count`` new games (every seat holding its dice).

    A uniform draw from ``generator`` per game, or seat 0 without a draw under
    ``first_opener="player_0"``.

    Returns:
        ``(count,)`` long.

    Example:
        >>> gen = torch.Generator().manual_seed(0)
        >>> rules = RuleSet.preset("openspiel_liars_dice")
        >>> first_openers(rules, 3, gen, torch.device("cpu")).tolist()
        [0, 0, 0]
    """
    if rules.first_opener == "player_0":
        return torch.zeros(count, dtype=torch.long, device=device)
    return torch.randint(0, rules.num_players, (count,), device=device, generator=generator)


def bid_caps(rules: RuleSet, dice_left: torch.Tensor, bidder: torch.Tensor) -> torch.Tensor:
    """The largest quantity each bidder may claim now.

    The dice in play with ``bid_cap`` (the bidder's own dice for ``individual`` hands),
    else the action space's limit N×D.

    Args:
        rules: The variant.
        dice_left: ``(B, P)`` dice per seat.
        bidder: ``(B,)`` the seat about to bid.

    Returns:
        ``(B,)`` long.

    Example:
        >>> bid_caps(RuleSet.preset("perudo"), torch.tensor([[5, 0, 3]]), torch.tensor([0]))
        tensor([8])
    """
    if not rules.bid_cap:
        return torch.full(bidder.shape, rules.max_quantity, device=bidder.device)
    if rules.hand == "individual":
        return dice_left.gather(1, bidder[:, None]).squeeze(1)
    return dice_left.sum(1)


# --------------------------------------------------------------------------- chances
def tail_table(rules: RuleSet, dtype: torch.dtype = torch.float64) -> torch.Tensor:
    """``T[c, u, m] = P(Binomial(u, p_c) >= m)``, ``p_0 = 1/F``, ``p_1 = 2/F``.

    The chance that ``u`` dice a viewer cannot see hold at least ``m`` matches: ``c = 1``
    for a face that wild ones count toward, else ``c = 0``. Shape ``(2, Q + 1, Q + 2)``
    with ``Q`` the largest quantity; ``m`` beyond ``u`` reads 0. Built in float64 from
    :func:`liars_env.probability.binomial_tail`, then cast to ``dtype``.

    Example:
        >>> t = tail_table(RuleSet.preset("perudo", num_players=2, dice_per_player=1))
        >>> [round(x, 4) for x in t[0, 2, :].tolist()]  # two unseen dice, p = 1/6
        [1.0, 0.3056, 0.0278, 0.0]
    """
    from liars_env.probability import binomial_tail

    q = rules.max_quantity
    tails = torch.zeros((2, q + 1, q + 2), dtype=torch.float64)
    for c, p in enumerate((1 / rules.faces, 2 / rules.faces)):
        for u in range(q + 1):
            tail = torch.tensor(binomial_tail(u, p), dtype=torch.float64)
            tails[c, u, : len(tail)] = tail
    return tails.to(dtype)


def _run_per_bid_loop(
    loop, rows: int, tails: torch.Tensor, *inputs: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """Runs a compiled per-bid look-up, ``loop(tails, *inputs, holds, after)``.

    ``holds`` and ``after`` are fresh ``(rows, num_bids)`` tensors of ``tails``' dtype;
    the last input is the bids' quantities (``num_bids`` long).
    """
    holds = torch.empty((rows, inputs[-1].shape[0]), dtype=tails.dtype)
    after = torch.empty_like(holds)
    loop(*(t.contiguous().numpy() for t in (tails, *inputs)), holds.numpy(), after.numpy())
    return holds, after


def own_bid_tails(
    tails: torch.Tensor,
    known: torch.Tensor,
    wild_faces: torch.Tensor,
    unseen: torch.Tensor,
    bid_face: torch.Tensor,
    bid_quantity: torch.Tensor,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Each bid's chance from one viewer's dice: ``P(count >= q)`` and ``P(count >= q + 1)``.

    The count is the viewer's known matches plus Binomial(unseen, p) matches among the
    dice it cannot see (``p`` from :func:`tail_table`).

    Args:
        tails: :func:`tail_table`.
        known: ``(B, F)`` the viewer's matches (:func:`known_matches`).
        wild_faces: ``(B, F)`` bool (:func:`wild_faces`).
        unseen: ``(B,)`` counted dice the viewer cannot see.
        bid_face: ``(num_bids,)`` face of each bid id (``ActionCodec.bid_face``).
        bid_quantity: ``(num_bids,)`` quantity of each bid id.

    Returns:
        Two ``(B, num_bids)`` tensors of ``tails``'s dtype.

    Example:
        >>> rules = RuleSet.preset("perudo", num_players=2, dice_per_player=2)
        >>> wild = wild_faces(torch.tensor([True]), 6, wild_die=1)
        >>> known = known_matches(torch.tensor([[1, 0, 1, 0, 0, 0]]), wild, wild_die=1)  # 1, 3
        >>> holds, after = own_bid_tails(tail_table(rules), known, wild, torch.tensor([2]),
        ...                              torch.tensor([3, 1]), torch.tensor([3, 1]))
        >>> [[round(x, 4) for x in t[0].tolist()] for t in (holds, after)]  # (3, 3), (1, 1)
        [[0.5556, 1.0], [0.1111, 0.3056]]
    """
    kernels = compiled_kernels(tails)
    if kernels is not None:
        return _run_per_bid_loop(
            kernels.own_bid_tails,
            known.shape[0],
            tails,
            known.long(),
            wild_faces.bool(),
            unseen.long().expand(known.shape[0]),
            bid_face.long(),
            bid_quantity.long(),
        )
    face = bid_face - 1
    known_b = known[:, face]
    choice = wild_faces[:, face].long()
    unseen_b = unseen[:, None].expand_as(known_b)
    top = tails.shape[2] - 1
    holds = tails[choice, unseen_b, (bid_quantity - known_b).clamp(0, top)]
    after = tails[choice, unseen_b, (bid_quantity + 1 - known_b).clamp(0, top)]
    return holds, after


def tails_per_bid(
    tails: torch.Tensor, bid_face: torch.Tensor, bid_quantity: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """Per-face count tails read off per bid id: ``P(count >= q)``, ``P(count >= q + 1)``.

    Args:
        tails: ``(B, F, L + 1)`` ``P(count >= c)`` per face (as from
            :func:`liars_env.agents.belief.count_tails`), with ``L`` above every quantity.
        bid_face: ``(num_bids,)`` face of each bid id.
        bid_quantity: ``(num_bids,)`` quantity of each bid id.

    Returns:
        Two ``(B, num_bids)`` tensors.

    Example:
        >>> tails = torch.tensor([[[1.0, 0.5, 0.0], [1.0, 0.25, 0.0]]])
        >>> tails_per_bid(tails, torch.tensor([1, 2]), torch.tensor([1, 1]))[0].tolist()
        [[0.5, 0.25]]
    """
    kernels = compiled_kernels(tails)
    if kernels is not None:
        return _run_per_bid_loop(
            kernels.tails_per_bid, tails.shape[0], tails, bid_face.long(), bid_quantity.long()
        )
    face = bid_face - 1
    return tails[:, face, bid_quantity], tails[:, face, bid_quantity + 1]
