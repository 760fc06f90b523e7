"""The action codec: one fixed ``Discrete`` id for every bid and call.

Ids, for ``Q = num_players × dice_per_player`` and ``F = faces``:

=================  ======================================  ==========================
id                 meaning                                 example (Q=15, F=6)
=================  ======================================  ==========================
``0 … Q·F−1``      bid ``(q, f)`` at ``(q−1)·F + (f−1)``   ``bid (4, 2)`` → 19
``Q·F``            challenge the previous bid              90
``Q·F + 1``        exact call (``spot_on``/``calza``)      91 (only if enabled)
=================  ======================================  ==========================

Bids are ordered by quantity, then face, so among ordinary faces a
``quantity_or_face`` raise is exactly a larger id. The codec also builds, once per rule
set, the legal-raise tables that the engines index by the previous bid: they are derived
from :func:`liars_env.rules.is_legal_bid`, never restated.
"""

from __future__ import annotations

from functools import cached_property
from typing import TypeVar

import numpy as np

from liars_env.rules import RuleSet, is_legal_bid

# an int, a numpy array or a torch tensor of ints: the bulk codec methods take any
_Ints = TypeVar("_Ints")

_NUMBER_WORDS = [
    "zero",
    "one",
    "two",
    "three",
    "four",
    "five",
    "six",
    "seven",
    "eight",
    "nine",
    "ten",
    "eleven",
    "twelve",
    "thirteen",
    "fourteen",
    "fifteen",
    "sixteen",
    "seventeen",
    "eighteen",
    "nineteen",
]
_TENS_WORDS = [
    "_",
    "_",
    "twenty",
    "thirty",
    "forty",
    "fifty",
    "sixty",
    "seventy",
    "eighty",
    "ninety",
]


def as_action_id(action: object) -> object:
    """An int from a one-element integer array (as RL libraries pass actions); else as is.

    Anything else is returned unchanged, for the engine's own check to refuse it.

    Example:
        >>> as_action_id(np.array([3]))
        3
        >>> as_action_id(np.array([1.5]))
        array([1.5])
    """
    if isinstance(action, np.ndarray) and action.size == 1 and action.dtype.kind in "iu":
        return int(action.reshape(()))
    return action


def number_word(n: int) -> str:
    """Spells a number from 0 to 99 in English words.

    Example:
        >>> number_word(4), number_word(21), number_word(80)
        ('four', 'twenty-one', 'eighty')
    """
    if not 0 <= n <= 99:
        raise ValueError(f"number_word covers 0–99, got {n}")
    if n < 20:
        return _NUMBER_WORDS[n]
    tens, ones = divmod(n, 10)
    return _TENS_WORDS[tens] + (f"-{_NUMBER_WORDS[ones]}" if ones else "")


class ActionCodec:
    """Maps bids and calls to action ids and back, for one rule set.

    Example:
        >>> codec = ActionCodec(RuleSet.preset("perudo"))  # 3 players × 5 dice
        >>> codec.encode_bid(4, 2), codec.decode_bid(19)
        (19, (4, 2))
        >>> codec.challenge, codec.exact, codec.num_actions
        (90, None, 91)
        >>> codec.describe(19), codec.describe(90)
        ('four 2s', 'challenge')
    """

    def __init__(self, rules: RuleSet) -> None:
        self.rules = rules
        self.faces = rules.faces
        self.max_quantity = rules.max_quantity
        self.num_bids = self.max_quantity * self.faces
        self.challenge = self.num_bids
        """Id of the challenge action."""
        self.exact: int | None = None if rules.exact_call == "none" else self.num_bids + 1
        """Id of the exact call, or ``None`` when the rules have none."""
        self.num_actions = self.num_bids + (1 if self.exact is None else 2)
        quantity, face = self.decode_bids(np.arange(self.num_bids))
        self.bid_quantity = quantity.astype(np.int64)
        """Quantity of each bid id (read-only array of length ``num_bids``)."""
        self.bid_face = face.astype(np.int64)
        """Face of each bid id (read-only array of length ``num_bids``)."""
        self.bid_quantity.flags.writeable = False
        self.bid_face.flags.writeable = False

    def encode_bid(self, quantity: int, face: int) -> int:
        """Returns the id of bid ``(quantity, face)``.

        Example:
            >>> ActionCodec(RuleSet.preset("perudo")).encode_bid(1, 1)
            0

        Raises:
            ValueError: if the bid is outside the action space.
        """
        if not (1 <= quantity <= self.max_quantity and 1 <= face <= self.faces):
            raise ValueError(
                f"bid ({quantity}, {face}) is outside the action space: quantity 1–"
                f"{self.max_quantity}, face 1–{self.faces}"
            )
        return self.encode_bids(quantity, face)

    def decode_bid(self, action: int) -> tuple[int, int]:
        """Returns the ``(quantity, face)`` of a bid id.

        Example:
            >>> ActionCodec(RuleSet.preset("perudo")).decode_bid(89)
            (15, 6)

        Raises:
            ValueError: if ``action`` is not a bid id.
        """
        if not 0 <= action < self.num_bids:
            raise ValueError(f"action {action} is not a bid id (0–{self.num_bids - 1})")
        return self.decode_bids(int(action))

    def decode_bids(self, ids: _Ints) -> tuple[_Ints, _Ints]:
        """Quantities and faces of many bid ids at once, unchecked.

        Works on anything with ``//``, ``%`` and ``+`` (numpy arrays, torch tensors on any
        device, ints); ids outside ``0 … num_bids − 1`` give meaningless values.

        Example:
            >>> codec = ActionCodec(RuleSet.preset("perudo"))
            >>> quantity, face = codec.decode_bids(np.array([0, 19, 89]))
            >>> quantity.tolist(), face.tolist()
            ([1, 4, 15], [1, 2, 6])
        """
        return ids // self.faces + 1, ids % self.faces + 1

    def encode_bids(self, quantity: _Ints, face: _Ints) -> _Ints:
        """Ids of many bids ``(quantity, face)`` at once, unchecked (see :meth:`decode_bids`).

        Example:
            >>> ActionCodec(RuleSet.preset("perudo")).encode_bids(np.array([1, 4]), 2).tolist()
            [1, 19]
        """
        return (quantity - 1) * self.faces + (face - 1)

    def is_bid(self, action: int) -> bool:
        """Whether ``action`` is a bid id."""
        return 0 <= action < self.num_bids

    def describe(self, action: int) -> str:
        """Names an action in words: ``"four 2s"``, ``"challenge"``, ``"calza"``."""
        if self.is_bid(action):
            quantity, face = self.decode_bid(action)
            return describe_bid(quantity, face)
        if action == self.challenge:
            return "challenge"
        if self.exact is not None and action == self.exact:
            return "spot on" if self.rules.exact_call == "spot_on" else "calza"
        raise ValueError(f"action {action} is outside 0–{self.num_actions - 1}")

    # --------------------------------------------------------------- legality tables
    @cached_property
    def raise_table(self) -> np.ndarray:
        """Legal bids by previous bid, ignoring the cap: ``bool[num_bids + 1, num_bids]``.

        Row ``0`` is the opening bid; row ``p + 1`` follows bid id ``p``.
        """
        return self._table(palifico=False)

    @cached_property
    def palifico_raise_table(self) -> np.ndarray:
        """:attr:`raise_table` for palifico rounds."""
        return self._table(palifico=True)

    @cached_property
    def legal_after(self) -> np.ndarray:
        """Legal actions by previous bid, ignoring the cap: ``bool[num_bids + 1, num_actions]``.

        :attr:`raise_table` widened to the whole action space: the calls are legal once
        a bid stands (rows ``1…``), never before it (row ``0``).
        """
        return self._with_calls(self.raise_table)

    @cached_property
    def palifico_legal_after(self) -> np.ndarray:
        """:attr:`legal_after` for palifico rounds."""
        return self._with_calls(self.palifico_raise_table)

    @cached_property
    def cap_table(self) -> np.ndarray:
        """Actions the bid cap allows: ``bool[max_quantity + 1, num_actions]``.

        Row ``c`` holds the bids of quantity at most ``c``, and every call.
        """
        caps = np.arange(self.max_quantity + 1)[:, None]
        table = np.ones((self.max_quantity + 1, self.num_actions), dtype=bool)
        table[:, : self.num_bids] = self.bid_quantity[None, :] <= caps
        table.flags.writeable = False
        return table

    def _with_calls(self, raises: np.ndarray) -> np.ndarray:
        table = np.ones((self.num_bids + 1, self.num_actions), dtype=bool)
        table[:, : self.num_bids] = raises
        table[0, self.num_bids :] = False  # no call before the opening bid
        table.flags.writeable = False
        return table

    def _table(self, *, palifico: bool) -> np.ndarray:
        table = np.zeros((self.num_bids + 1, self.num_bids), dtype=bool)
        bids = [self.decode_bid(a) for a in range(self.num_bids)]
        previous: list = [None, *bids]
        for row, prev in enumerate(previous):
            for col, bid in enumerate(bids):
                table[row, col] = is_legal_bid(
                    self.rules, prev, bid, palifico=palifico, cap=self.max_quantity
                )
        table.flags.writeable = False
        return table


def describe_bid(quantity: int, face: int) -> str:
    """Names a bid: ``describe_bid(4, 2) == "four 2s"``, ``describe_bid(1, 6) == "one 6"``."""
    return f"{number_word(quantity)} {face}{'' if quantity == 1 else 's'}"
