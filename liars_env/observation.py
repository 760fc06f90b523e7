"""The observation layout: what one seat knows, as a flat ``float32`` vector.

Seats are **relative**: index 0 is the observing seat, index ``k`` the seat ``k`` places
clockwise from it. With ``N`` players, ``D`` dice each, ``F`` faces and
``B = N·D·F`` bid ids (see :mod:`liars_env.actions`), layout version
:data:`OBSERVATION_VERSION` is:

===============  ==========  ==========================================================
field            size        value
===============  ==========  ==========================================================
own_dice         F           own dice showing each face ÷ D
dice_left        N           dice left per relative seat ÷ D
opener           N           one-hot: relative seat that opened this round
palifico         1           1 in a palifico round (ones not wild, face fixed)
current_bid      B           one-hot: the round's latest bid id (all 0 before the opening)
current_bidder   N           one-hot: relative seat of the latest bid
bid_history      B·N         1 at ``bid_id·N + rel_seat`` for every bid of this round
===============  ==========  ==========================================================

Bids never repeat within a round (every legal raise is a new bid), so ``bid_history``
records the whole round: who bid what. The other players' dice are never in it.
Checkpoints record :data:`OBSERVATION_VERSION`; a change to this table bumps it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

import numpy as np

from liars_env.actions import ActionCodec
from liars_env.engine import GameState, LiarsDiceGame
from liars_env.rules import RuleSet

OBSERVATION_VERSION = 1
"""Version of the layout above; bump on any change."""


class ObservationLayout:
    """Offsets of the fields above for one rule set, and the encoder.

    Example:
        >>> layout = ObservationLayout(RuleSet.preset("perudo"))  # N=3, D=5, F=6
        >>> layout.size, layout.slices["bid_history"]
        (376, slice(106, 376, None))
    """

    def __init__(self, rules: RuleSet) -> None:
        n, d, f = rules.num_players, rules.dice_per_player, rules.faces
        self.rules = rules
        self.num_bids = n * d * f
        sizes = {
            "own_dice": f,
            "dice_left": n,
            "opener": n,
            "palifico": 1,
            "current_bid": self.num_bids,
            "current_bidder": n,
            "bid_history": self.num_bids * n,
        }
        self.slices: dict[str, slice] = {}
        start = 0
        for name, size in sizes.items():
            self.slices[name] = slice(start, start + size)
            start += size
        self.size = start
        self._blank = np.zeros(self.size, dtype=np.float32)
        self._off = {name: s.start for name, s in self.slices.items()}
        d = rules.dice_per_player
        inv_d = 1.0 / d
        # The values written for a count (layout v1: own dice as float32 counts times
        # 1/D, dice left as count × 1/D in Python floats; they differ in the last bit
        # for some D). Every encoder, scalar or batched, looks them up here.
        self.own_dice_values: list[float] = (np.arange(d + 1, dtype=np.float32) * inv_d).tolist()
        """``own_dice`` value of each count 0..D (as stored in float32)."""
        self.dice_left_values: list[float] = [count * inv_d for count in range(d + 1)]
        """``dice_left`` value of each count 0..D (as stored in float32)."""

    def encode(self, state: GameState, seat: int) -> np.ndarray:
        """The observation of ``seat`` (a fresh array each call)."""
        rules = self.rules
        n, f = rules.num_players, rules.faces
        off = self._off
        obs = self._blank.copy()
        hand, own = state.dice[seat], self.own_dice_values
        for face in set(hand):
            obs[face - 1] = own[hand.count(face)]
        dice_left, left = off["dice_left"], self.dice_left_values
        for s, count in enumerate(state.dice_left):
            obs[dice_left + (s - seat) % n] = left[count]
        obs[off["opener"] + (state.opener - seat) % n] = 1.0
        if state.palifico:
            obs[off["palifico"]] = 1.0
        bids = state.bids
        if bids:
            history = off["bid_history"]
            for bidder, quantity, face in bids:
                obs[history + ((quantity - 1) * f + face - 1) * n + (bidder - seat) % n] = 1.0
            bidder, quantity, face = bids[-1]
            obs[off["current_bid"] + (quantity - 1) * f + face - 1] = 1.0
            obs[off["current_bidder"] + (bidder - seat) % n] = 1.0
        return obs

    def describe(self) -> list[tuple[str, int, int]]:
        """``(field, start, size)`` rows of the layout, for docs and checkpoints."""
        return [(name, s.start, s.stop - s.start) for name, s in self.slices.items()]


class IncrementalEncoder:
    """:meth:`ObservationLayout.encode`, cached per seat and brought up to date by the bids.

    Within a round only the bids change, and they are only appended; so each seat's
    vector is kept and, on the next call, only the new bids are written before a copy is
    returned. Anything else that differs from the cached round (another state or round:
    each has its own bid list; other dice, dice left, opener or palifico flag; a bid list
    that is not the cached one's continuation) rebuilds the vector with
    :meth:`ObservationLayout.encode`, so the result always equals it.

    Example:
        >>> from liars_env.engine import LiarsDiceGame
        >>> rules = RuleSet.preset("perudo")
        >>> game, layout = LiarsDiceGame(rules), ObservationLayout(rules)
        >>> rng = np.random.default_rng(0)
        >>> state, encoder = game.new_game(rng), IncrementalEncoder(layout)
        >>> _ = encoder.encode(state, 1)
        >>> game.apply(state, game.codec.encode_bid(2, 3), rng)
        >>> bool((encoder.encode(state, 1) == layout.encode(state, 1)).all())
        True
    """

    def __init__(self, layout: ObservationLayout) -> None:
        self.layout = layout
        self._cache: dict[int, tuple] = {}

    def encode(self, state: GameState, seat: int) -> np.ndarray:
        """The observation of ``seat`` (a fresh array each call)."""
        key = (
            tuple(state.dice[seat]),
            tuple(state.dice_left),
            state.opener,
            state.palifico,
        )
        cached = self._cache.get(seat)
        bids = state.bids
        if (
            cached is None
            or cached[0] != key
            or cached[1] is not bids
            or len(bids) < cached[2]
            or (cached[2] and cached[4] != bids[cached[2] - 1])
        ):
            obs = self.layout.encode(state, seat)
            self._cache[seat] = (key, bids, len(bids), obs, bids[-1] if bids else None)
            return obs.copy()
        _, _, done, obs, last = cached
        if len(bids) > done:
            layout, n, f = self.layout, self.layout.rules.num_players, self.layout.rules.faces
            off = layout._off
            if last is not None:
                bidder, quantity, face = last
                obs[off["current_bid"] + (quantity - 1) * f + face - 1] = 0.0
                obs[off["current_bidder"] + (bidder - seat) % n] = 0.0
            history = off["bid_history"]
            for bidder, quantity, face in bids[done:]:
                obs[history + ((quantity - 1) * f + face - 1) * n + (bidder - seat) % n] = 1.0
            bidder, quantity, face = bids[-1]
            obs[off["current_bid"] + (quantity - 1) * f + face - 1] = 1.0
            obs[off["current_bidder"] + (bidder - seat) % n] = 1.0
            self._cache[seat] = (cached[0], bids, len(bids), obs, bids[-1])
        return obs.copy()


@dataclass(frozen=True)
class PlayerView:
    """What the acting player knows when it must act.

    Attributes:
        rules: The variant.
        codec: Action ids of this rule set.
        seat: The acting seat.
        dice: The acting player's own faces.
        dice_left: Dice per seat (public).
        bids: This round's bids as ``(seat, quantity, face)`` (public).
        opener: Seat that opened the round.
        palifico: Whether the round is palifico.
        mask: Legal actions (int8 0/1).
        last_reveal: The game's latest call, as every player saw it (see
            ``last_reveal`` of :class:`~liars_env.engine.GameState`), or ``None``.
    """

    rules: RuleSet
    codec: ActionCodec
    seat: int
    dice: tuple[int, ...]
    dice_left: tuple[int, ...]
    bids: tuple[tuple[int, int, int], ...]
    opener: int
    palifico: bool
    mask: np.ndarray
    _layout: ObservationLayout = field(repr=False, compare=False)
    last_reveal: dict | None = field(default=None, compare=False)

    @cached_property
    def observation(self) -> np.ndarray:
        """The env's observation vector for this seat (computed on first use).

        Encoded from the view's own fields, not the live game: the game goes on after the
        view is made, and an agent may read the observation of a view it kept.
        """
        public = GameState(
            dice=[list(self.dice) if s == self.seat else [] for s in range(len(self.dice_left))],
            dice_left=list(self.dice_left),
            current_player=self.seat,  # not encoded; the view is of its own seat
            opener=self.opener,
            bids=list(self.bids),
            palifico=self.palifico,
        )
        return self._layout.encode(public, self.seat)

    @property
    def current_bid(self) -> tuple[int, int] | None:
        """The latest ``(quantity, face)`` of the round, or ``None``."""
        return (self.bids[-1][1], self.bids[-1][2]) if self.bids else None

    @property
    def legal_actions(self) -> np.ndarray:
        """Legal action ids, ascending."""
        return np.flatnonzero(self.mask)


def view_of(
    game: LiarsDiceGame, layout: ObservationLayout, state: GameState, seat: int | None = None
) -> PlayerView:
    """The :class:`PlayerView` of ``seat`` (default: the player to act)."""
    seat = state.current_player if seat is None else seat
    mask = (
        game.legal_mask(state)
        if seat == state.current_player
        else np.zeros(game.codec.num_actions, np.int8)
    )
    return PlayerView(
        rules=game.rules,
        codec=game.codec,
        seat=seat,
        dice=tuple(state.dice[seat]),
        dice_left=tuple(state.dice_left),
        bids=tuple(state.bids),
        opener=state.opener,
        palifico=state.palifico,
        mask=mask,
        _layout=layout,
        last_reveal=state.last_reveal,
    )
