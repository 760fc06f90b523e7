"""The game engine: state as plain data, transitions as functions of (state, action, RNG).

:class:`GameState` holds everything about a game in plain lists and ints; it can be
cloned, turned into a JSON-able dict and back, and replayed from ``(rules, seed,
actions)``. :class:`LiarsDiceGame` applies the rules of :mod:`liars_env.rules` to it.
Randomness (dice rolls, the first opener) always comes from a ``numpy.random.Generator``
passed in by the caller. Nothing here knows about PettingZoo or torch.

Example:
    >>> import numpy as np
    >>> game = LiarsDiceGame(RuleSet.preset("perudo"))
    >>> rng = np.random.default_rng(0)
    >>> state = game.new_game(rng, dice=[[1, 2, 3, 4, 6], [1, 2, 2, 5, 6], [2, 3, 4, 5, 6]],
    ...                       first_player=0)
    >>> game.apply(state, game.codec.encode_bid(4, 2), rng)   # A bids four 2s
    >>> game.apply(state, game.codec.encode_bid(7, 2), rng)   # B raises to seven 2s
    >>> result = game.apply(state, game.codec.challenge, rng)  # C challenges
    >>> result.count, result.losers, state.dice_left, state.opener
    (6, (1,), [5, 4, 5], 1)
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from functools import lru_cache
from typing import Any

import numpy as np

from liars_env.actions import ActionCodec, describe_bid
from liars_env.errors import IllegalActionError
from liars_env.rules import (
    RuleSet,
    bid_cap,
    bid_violation,
    count_matches,
    dice_lost,
    fixed_first_opener,
    is_palifico_round,
    settle_call,
)


def unknown_reveal() -> dict[str, Any]:
    """The ``last_reveal`` of :class:`GameState` of a state rebuilt without its past.

    ``None`` means no call yet this game; a state made from a position alone (the batched
    engine's :meth:`~liars_env.batched.BatchedEnv.states`, the solver's later rounds)
    does not know the last reveal, and says so with ``{"call": None, "unknown": True}``.
    """
    return {"call": None, "unknown": True}


def action_id(action: Any) -> int | None:
    """``action`` as an int id, or ``None`` if it is not one.

    Ids are ints, numpy integers and 0-d integer arrays (what ``Discrete.sample()`` and
    SB3's ``predict`` return); bools and floats are not.

    Example:
        >>> action_id(np.array(3)), action_id(np.int64(4)), action_id(True), action_id(2.0)
        (3, 4, None, None)
    """
    if isinstance(action, np.ndarray) and action.shape == ():
        action = action[()]
    if isinstance(action, (bool, np.bool_)) or not isinstance(action, (int, np.integer)):
        return None
    return int(action)


@lru_cache(maxsize=64)
def get_codec(rules: RuleSet) -> ActionCodec:
    """The shared :class:`ActionCodec` of a rule set (built once, tables included)."""
    return ActionCodec(rules)


@dataclass
class GameState:
    """A whole game in plain data (seats are ints, clockwise from 0).

    Attributes:
        dice: Each seat's faces this round (empty once the seat is out).
        dice_left: Each seat's dice count (0 once out).
        current_player: The seat to act (the winner once the game is over).
        opener: The seat that opened this round.
        bids: This round's bids so far, as ``(seat, quantity, face)``.
        palifico: Whether this round is palifico.
        had_palifico: Per seat, whether it has opened a palifico round.
        round: Rounds finished so far.
        out_order: Groups of seats in the order they were eliminated (a ``spot_on``
            call can eliminate several at once).
        winner: The last seat with dice, or ``None`` while the game goes on.
        actions: Every action applied since :meth:`LiarsDiceGame.new_game`.
        last_reveal: The game's latest call as public facts (every player saw them), or
            ``None`` before the first: ``{"call", "bid": [q, f], "bidder", "caller",
            "shown": [[seat, faces], ...]`` (the counted hands), ``"count", "palifico",
            "losers", "gainers", "eliminated"}``. Not compared by ``==``: it follows
            from the actions.
    """

    dice: list[list[int]]
    dice_left: list[int]
    current_player: int
    opener: int
    bids: list[tuple[int, int, int]] = field(default_factory=list)
    palifico: bool = False
    had_palifico: list[bool] = field(default_factory=list)
    round: int = 0
    out_order: list[list[int]] = field(default_factory=list)
    winner: int | None = None
    actions: list[int] = field(default_factory=list)
    last_reveal: dict[str, Any] | None = field(default=None, compare=False)

    @property
    def is_over(self) -> bool:
        """Whether only one seat has dice left."""
        return self.winner is not None

    @property
    def current_bid(self) -> tuple[int, int] | None:
        """The round's latest ``(quantity, face)``, or ``None`` before the opening bid."""
        return (self.bids[-1][1], self.bids[-1][2]) if self.bids else None

    @property
    def active_seats(self) -> list[int]:
        """Seats that still hold dice, in seat order."""
        return [s for s, n in enumerate(self.dice_left) if n > 0]

    def places(self) -> list[int]:
        """Finishing place per seat (1 = winner); seats out together share a place.

        Only meaningful once the game is over.
        """
        num_players = len(self.dice_left)
        places = [1] * num_players
        remaining = num_players
        for group in self.out_order:
            for seat in group:
                places[seat] = remaining - len(group) + 1
            remaining -= len(group)
        return places

    def clone(self) -> GameState:
        """A deep copy that shares nothing with this state."""
        return copy.deepcopy(self)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-able dict (see :meth:`from_dict`)."""
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> GameState:
        """Rebuilds a state from :meth:`to_dict` output (JSON lists become tuples)."""
        data = dict(data)
        data["bids"] = [tuple(b) for b in data["bids"]]
        data["dice"] = [list(h) for h in data["dice"]]
        return cls(**data)


@dataclass(frozen=True)
class RoundResult:
    """What a challenge or an exact call revealed and decided.

    Attributes:
        call: ``"challenge"`` or ``"exact"``.
        bid: The called ``(quantity, face)``.
        bidder: Seat that made the bid.
        caller: Seat that called.
        dice: Every counted-or-shown hand: seat → faces (all active seats).
        counted_seats: Seats whose dice were counted (only the bidder's for ``individual``).
        count: Matching dice.
        palifico: Whether the round was palifico (ones not wild).
        losers: Seats that lost a die (all their dice under ``single_round``).
        gainers: Seats that regained a die (calza).
        eliminated: Seats that lost their last die.
        dice_left: Dice per seat after the call.
        next_opener: Seat that opens the next round, ``None`` when the game is over.
    """

    call: str
    bid: tuple[int, int]
    bidder: int
    caller: int
    dice: dict[int, list[int]]
    counted_seats: tuple[int, ...]
    count: int
    palifico: bool
    losers: tuple[int, ...]
    gainers: tuple[int, ...]
    eliminated: tuple[int, ...]
    dice_left: list[int]
    next_opener: int | None


class LiarsDiceGame:
    """Applies one rule set to :class:`GameState` values.

    Args:
        rules: The variant to play.
    """

    def __init__(self, rules: RuleSet) -> None:
        self.rules = rules
        self.codec = get_codec(rules)
        # The codec's legality tables as int8 (so masks come out int8 without a cast):
        # a mask is one bitwise_and of the row for the bid standing and the cap's row.
        self._raise_rows = self.codec.legal_after.astype(np.int8)
        self._palifico_rows = self.codec.palifico_legal_after.astype(np.int8)
        self._cap_masks = self.codec.cap_table.astype(np.int8)
        # (palifico, row of the bid standing, cap) -> that mask, read-only; filled as
        # positions come up (at most 2 · (num_bids + 1) · (max_quantity + 1) of them)
        self._masks: dict[tuple[bool, int, int], np.ndarray] = {}

    # ------------------------------------------------------------------ new games
    def new_game(
        self,
        rng: np.random.Generator,
        *,
        dice: Sequence[Sequence[int]] | None = None,
        dice_left: Sequence[int] | None = None,
        first_player: int | None = None,
    ) -> GameState:
        """Starts a game.

        Args:
            rng: Source of the first opener (if not given) and of every roll.
            dice: Faces per seat for the first round (default: rolled).
            dice_left: Starting dice per seat (default: ``dice_per_player`` each), for
                endgame scenarios; 0 marks a seat that is already out.
            first_player: Seat of the first opener (default: as ``rules.first_opener``
                says: a seeded random active seat, or ``player_0``).

        Raises:
            ValueError: for options that do not fit the rules, naming the bad value.
        """
        rules = self.rules
        n = rules.num_players
        if dice is not None:
            dice = _hand_lists(dice, n)
        if dice_left is None and dice is not None:
            for seat, hand in enumerate(dice):
                if len(hand) > rules.dice_per_player:
                    raise ValueError(
                        f"dice[{seat}] holds {len(hand)} faces, more than dice_per_player="
                        f"{rules.dice_per_player}: {hand!r}"
                    )
            dice_left = [len(h) for h in dice]
        elif dice_left is None:
            dice_left = [rules.dice_per_player] * n
        dice_left = _int_list(dice_left, "dice_left", n, 0, rules.dice_per_player)
        active = [s for s in range(n) if dice_left[s] > 0]
        if len(active) < 2:
            raise ValueError(f"dice_left must give at least two seats dice, got {dice_left}")
        if first_player is not None:
            if type(first_player) is not int or not 0 <= first_player < n:
                raise ValueError(f"first_player must be a seat 0–{n - 1}, got {first_player!r}")
            if dice_left[first_player] == 0:
                raise ValueError(f"first_player {first_player} has no dice (dice_left={dice_left})")
        if dice is not None:
            dice = self._check_dice(dice, dice_left)
        if first_player is not None:
            opener = first_player
        else:
            opener = fixed_first_opener(rules, dice_left)
            if opener is None:
                opener = int(rng.choice(active))
        state = GameState(
            dice=[[] for _ in range(n)],
            dice_left=dice_left,
            current_player=opener,
            opener=opener,
            had_palifico=[False] * n,
        )
        self._start_round(state, opener, rng, dice=dice)
        return state

    def _check_dice(self, dice: Sequence[Sequence[int]], dice_left: list[int]) -> list[list[int]]:
        faces = self.rules.faces
        hands = []
        for seat, hand in enumerate(dice):
            if len(hand) != dice_left[seat]:
                raise ValueError(
                    f"dice[{seat}] must hold {dice_left[seat]} faces (dice_left), got {hand!r}"
                )
            hands.append(_int_list(hand, f"dice[{seat}]", len(hand), 1, faces))
        return hands

    def _start_round(
        self,
        state: GameState,
        opener: int,
        rng: np.random.Generator,
        dice: list[list[int]] | None = None,
    ) -> None:
        if dice is None:
            total = sum(state.dice_left)
            rolled = rng.integers(1, self.rules.faces + 1, size=total).tolist()
            dice, start = [], 0
            for count in state.dice_left:
                dice.append(rolled[start : start + count])
                start += count
        state.dice = dice
        state.opener = state.current_player = opener
        state.bids = []
        state.palifico = is_palifico_round(
            self.rules, state.dice_left[opener], state.had_palifico[opener]
        )
        if state.palifico:
            state.had_palifico[opener] = True

    # ------------------------------------------------------------------ legality
    def cap(self, state: GameState, seat: int | None = None) -> int:
        """The largest quantity ``seat`` (default: the player to act) may bid now."""
        seat = state.current_player if seat is None else seat
        return bid_cap(self.rules, state.dice_left, seat)

    def legal_mask(self, state: GameState) -> np.ndarray:
        """Legal actions of the player to act as an ``int8`` 0/1 array (all 0 once over)."""
        if state.winner is not None:
            return np.zeros(self.codec.num_actions, dtype=np.int8)
        return self._mask_at(state).copy()

    def legal_actions(self, state: GameState) -> list[int]:
        """Legal action ids of the player to act, ascending."""
        return np.flatnonzero(self.legal_mask(state)).tolist()

    def is_legal(self, state: GameState, action: Any) -> bool:
        """Whether ``action`` is legal for the player to act (a fast table look-up)."""
        if type(action) is not int:
            action = action_id(action)
            if action is None:
                return False
        if state.winner is not None or not 0 <= action < self.codec.num_actions:
            return False
        return bool(self._mask_at(state)[action])

    def _mask_at(self, state: GameState) -> np.ndarray:
        """The (shared, read-only) legal mask of a game that goes on.

        One ``bitwise_and`` of the round's legality table's row for the bid standing
        (palifico or not) and the cap's row, made once per position and kept.
        """
        row = 0
        bids = state.bids
        if bids:
            _, quantity, face = bids[-1]
            row = (quantity - 1) * self.rules.faces + face
        key = (state.palifico, row, bid_cap(self.rules, state.dice_left, state.current_player))
        mask = self._masks.get(key)
        if mask is None:
            table = self._palifico_rows if key[0] else self._raise_rows
            mask = np.bitwise_and(table[row], self._cap_masks[key[2]])
            mask.flags.writeable = False
            self._masks[key] = mask
        return mask

    def illegal_reason(self, state: GameState, action: Any) -> str | None:
        """Why ``action`` is illegal now (naming the action, bid and rule), or ``None``."""
        if self.is_legal(state, action):
            return None
        codec = self.codec
        current = state.current_bid
        now = f"the current bid is {describe_bid(*current)}" if current else "no bid yet this round"
        if action_id(action) is None:
            return f"action {action!r} is not an int action id"
        action = action_id(action)
        if state.winner is not None:
            return f"action {action}: the game is over"
        if not 0 <= action < codec.num_actions:
            return f"action {action} is outside the action space 0–{codec.num_actions - 1}"
        if action == codec.challenge or action == codec.exact:
            if current is None:
                return f"{codec.describe(action)}: {now}; the opening bid cannot be a call"
            return None
        quantity, face = codec.decode_bid(action)
        reason = bid_violation(
            self.rules, current, (quantity, face), palifico=state.palifico, cap=self.cap(state)
        )
        if reason is None:
            return None
        return f"bid {describe_bid(quantity, face)} (action {action}): {now}; {reason}"

    def check_action(self, state: GameState, action: Any) -> None:
        """Raises :class:`IllegalActionError` if ``action`` is illegal now."""
        reason = self.illegal_reason(state, action)
        if reason is not None:
            raise IllegalActionError(reason)

    # ------------------------------------------------------------------ transitions
    def apply(
        self, state: GameState, action: int, rng: np.random.Generator, *, check: bool = True
    ) -> RoundResult | None:
        """Applies the acting player's ``action`` to ``state`` in place.

        Args:
            state: The game; mutated.
            action: A legal action id.
            rng: Source of the next round's rolls.
            check: Whether to check legality first (skip only for ids from the mask).

        Returns:
            The :class:`RoundResult` when the action was a call, else ``None``.

        Raises:
            IllegalActionError: if the action is not legal; ``state`` is unchanged.
        """
        if check and not self.is_legal(state, action):
            self.check_action(state, action)
        if type(action) is not int:
            action = action_id(action)
        state.actions.append(action)
        seat = state.current_player
        codec = self.codec
        if action < codec.num_bids:
            quantity, face = divmod(action, self.rules.faces)
            state.bids.append((seat, quantity + 1, face + 1))
            state.current_player = self.next_active(state, seat)
            return None
        return self._resolve_call(
            state, "challenge" if action == codec.challenge else "exact", seat, rng
        )

    def _resolve_call(
        self, state: GameState, call: str, caller: int, rng: np.random.Generator
    ) -> RoundResult:
        rules = self.rules
        bidder, quantity, face = state.bids[-1]
        dice_left = state.dice_left
        active = [s for s, n in enumerate(dice_left) if n > 0]
        counted = (bidder,) if rules.hand == "individual" else tuple(active)
        count = count_matches(
            rules, [state.dice[s] for s in counted], face, palifico=state.palifico
        )
        outcome = settle_call(
            rules,
            call,
            quantity,
            count,
            bidder=bidder,
            caller=caller,
            active=active,
            caller_dice=dice_left[caller],
        )
        for seat in outcome.losers:
            dice_left[seat] -= dice_lost(rules, dice_left[seat])
        for seat in outcome.gainers:
            dice_left[seat] += 1
        eliminated = tuple(s for s in outcome.losers if dice_left[s] == 0)
        remaining = active  # a call only takes dice from seats in play, or gives them
        if eliminated:
            state.out_order.append(list(eliminated))
            remaining = [s for s in active if dice_left[s] > 0]
        revealed = {s: list(state.dice[s]) for s in active}
        was_palifico = state.palifico
        state.last_reveal = {
            "call": call,
            "bid": [quantity, face],
            "bidder": bidder,
            "caller": caller,
            "shown": [[s, list(state.dice[s])] for s in counted],
            "count": count,
            "palifico": was_palifico,
            "losers": list(outcome.losers),
            "gainers": list(outcome.gainers),
            "eliminated": list(eliminated),
        }
        # The loser of a challenge opens; after an exact call the caller opens. Either
        # way, an eliminated opener hands over to the next active seat clockwise.
        anchor = outcome.losers[0] if call == "challenge" else caller
        state.round += 1
        if len(remaining) == 1:
            state.winner = state.current_player = remaining[0]
            state.dice = [[] for _ in state.dice_left]
            state.bids = []
            state.palifico = False
            next_opener = None
        else:
            next_opener = anchor if dice_left[anchor] else self.next_active(state, anchor)
            self._start_round(state, next_opener, rng)
        return RoundResult(
            call=call,
            bid=(quantity, face),
            bidder=bidder,
            caller=caller,
            dice=revealed,
            counted_seats=counted,
            count=count,
            palifico=was_palifico,
            losers=outcome.losers,
            gainers=outcome.gainers,
            eliminated=eliminated,
            dice_left=list(dice_left),
            next_opener=next_opener,
        )

    def next_active(self, state: GameState, seat: int) -> int:
        """The next seat clockwise from ``seat`` that still holds dice."""
        n = len(state.dice_left)
        for step in range(1, n + 1):
            candidate = (seat + step) % n
            if state.dice_left[candidate] > 0:
                return candidate
        raise RuntimeError("no seat holds dice")

    # ------------------------------------------------------------------ replay
    def replay(self, seed: int | None, actions: Sequence[int], **options: Any) -> GameState:
        """Rebuilds a game from its seed, its actions and its :meth:`new_game` options.

        Example:
            >>> game = LiarsDiceGame(RuleSet.preset("perudo"))
            >>> rng = np.random.default_rng(7)
            >>> state = game.new_game(rng)
            >>> for _ in range(20):
            ...     _ = game.apply(state, game.legal_actions(state)[-1], rng)
            >>> game.replay(7, state.actions) == state
            True
        """
        rng = np.random.default_rng(seed)
        state = self.new_game(rng, **options)
        for action in actions:
            self.apply(state, action, rng)
        return state


def _hand_lists(dice: Any, n: int) -> list[list[Any]]:
    """``dice`` as ``n`` plain lists (lists, tuples or numpy arrays accepted)."""
    if isinstance(dice, np.ndarray):
        dice = list(dice)
    if isinstance(dice, (str, bytes)) or not isinstance(dice, Sequence) or len(dice) != n:
        raise ValueError(f"dice must be a list of {n} hands (one per seat), got {dice!r}")
    hands = []
    for seat, hand in enumerate(dice):
        if isinstance(hand, np.ndarray) and hand.ndim == 1:
            hand = hand.tolist()
        if isinstance(hand, (str, bytes)) or not isinstance(hand, Sequence):
            raise ValueError(
                f"dice[{seat}] must be a list of faces (one hand per seat), got {hand!r}"
            )
        hands.append(list(hand))
    return hands


def _int_list(values: Any, name: str, length: int, lo: int, hi: int) -> list[int]:
    if isinstance(values, (str, bytes)) or not isinstance(values, (Sequence, np.ndarray)):
        raise ValueError(
            f"{name} must be a list of {length} ints from {lo} to {hi}, got {values!r}"
        )
    out = []
    for value in values:
        if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
            raise ValueError(
                f"{name} must hold ints from {lo} to {hi}, got {value!r} in {values!r}"
            )
        if not lo <= value <= hi:
            raise ValueError(
                f"{name} must hold ints from {lo} to {hi}, got {value!r} in {values!r}"
            )
        out.append(int(value))
    if len(out) != length:
        raise ValueError(f"{name} must have {length} entries, got {len(out)}: {values!r}")
    return out
