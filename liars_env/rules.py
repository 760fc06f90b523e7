"""The rules of Liar's Dice: one frozen :class:`RuleSet` and the rule functions.

Every rule of the rules page (``docs/rules.md``) lives here exactly once:

* which bids are legal (:func:`is_legal_bid`),
* how dice are counted at a reveal (:func:`count_matches`),
* who loses or gains a die after a call (:func:`settle_call`, :func:`dice_lost`),
* which rounds are palifico (:func:`is_palifico_round`),
* how many dice a bid may claim (:func:`bid_cap`),
* who opens a game (:func:`fixed_first_opener`).

The module imports only the standard library so that engines, bots, the batched engine
and tests can all build on it. Bids are ``(quantity, face)`` tuples of ints.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

ONES_MODES = ("natural", "wild", "wild_convertible", "wild_biddable", "jokers")
RAISE_RULES = ("no_decrease", "quantity_or_face")
EXACT_CALLS = ("none", "spot_on", "calza")
HANDS = ("common", "individual")
WILD_FACES = ("one", "highest")
FIRST_OPENERS = ("random", "player_0")

Bid = tuple[int, int]

_RANGES = {
    "num_players": (2, 8),
    "dice_per_player": (1, 10),
    "faces": (2, 9),
}
_CHOICES = {
    "ones": ONES_MODES,
    "raise_rule": RAISE_RULES,
    "exact_call": EXACT_CALLS,
    "hand": HANDS,
    "wild_face": WILD_FACES,
    "first_opener": FIRST_OPENERS,
}
_FLAGS = ("bid_cap", "palifico", "single_round")


@dataclass(frozen=True)
class RuleSet:
    """One variant of Liar's Dice: exactly the options of docs/rules.md's option table.

    Build one directly, or from a named preset with :meth:`RuleSet.preset`. Every field is
    checked on construction; a bad value raises ``ValueError`` naming the field, the value
    and what is allowed.

    Example:
        >>> RuleSet.preset("perudo", num_players=4).num_players
        4
        >>> RuleSet(faces=1)
        Traceback (most recent call last):
        ...
        ValueError: RuleSet.faces must be an int from 2 to 9, got 1
    """

    num_players: int = 3
    """Seats at the table, 2–8. Seat order ``player_0, player_1, …`` is clockwise."""
    dice_per_player: int = 5
    """Starting dice per player, 1–10."""
    faces: int = 6
    """Faces per die, 2–9 (small values make tiny solvable games)."""
    ones: str = "wild_convertible"
    """How the wild face plays (face 1 unless ``wild_face`` says otherwise): ``natural``
    (an ordinary face, nothing wild), ``wild`` (wild, never bid), ``wild_convertible``
    (Perudo: wild, bid through conversions), ``wild_biddable`` (wild, and bid like any
    other face, opening bid included) or ``jokers`` (ones are wild toward every other face
    and may be bid as the lowest face: a bid on ones counts only ones, any bid may open, no
    conversion; needs ``wild_face="one"``)."""
    raise_rule: str = "quantity_or_face"
    """``no_decrease`` (neither number drops, one rises) or ``quantity_or_face``."""
    bid_cap: bool = True
    """If true, a bid may not claim more dice than are in play (own dice for ``individual``)."""
    palifico: bool = False
    """If true, a player's first round opened with a single die is a palifico round."""
    exact_call: str = "none"
    """``none``, ``spot_on`` (others lose a die when right) or ``calza`` (caller regains one)."""
    hand: str = "common"
    """``common`` (bids are about all dice) or ``individual`` (only the bidder's dice)."""
    wild_face: str = "one"
    """Which face the ``ones`` option is about: ``one`` (face 1) or ``highest`` (face F,
    as in OpenSpiel's ``liars_dice``). No effect with ``ones="natural"``."""
    single_round: bool = False
    """If true, the game is one round: the loser of the first call loses all its dice
    and the other player wins (2 players, and no ``calza``)."""
    first_opener: str = "random"
    """Who opens a game's first round: ``random`` (a seeded uniform draw) or
    ``player_0``."""

    def __post_init__(self) -> None:
        for name, (lo, hi) in _RANGES.items():
            value = getattr(self, name)
            if type(value) is not int or not lo <= value <= hi:
                raise ValueError(f"RuleSet.{name} must be an int from {lo} to {hi}, got {value!r}")
        for name, allowed in _CHOICES.items():
            value = getattr(self, name)
            if value not in allowed:
                raise ValueError(
                    f"RuleSet.{name} must be one of {', '.join(map(repr, allowed))}, got {value!r}"
                )
        for name in _FLAGS:
            value = getattr(self, name)
            if type(value) is not bool:
                raise ValueError(f"RuleSet.{name} must be True or False, got {value!r}")
        if self.ones == "jokers" and self.wild_face != "one":
            raise ValueError(
                "RuleSet.ones='jokers' makes face 1 the joker and the lowest face, so it needs "
                f"wild_face='one', got wild_face={self.wild_face!r} (for a wild, biddable "
                "highest face use ones='wild_biddable')"
            )
        if self.single_round and self.num_players != 2:
            raise ValueError(
                "RuleSet.single_round=True needs num_players=2 (the first call ends the "
                f"game with one winner), got num_players={self.num_players}"
            )
        if self.single_round and self.exact_call == "calza":
            raise ValueError(
                "RuleSet.single_round=True needs a call that always has a loser: "
                "exact_call 'none' or 'spot_on', got 'calza'"
            )

    # ----------------------------------------------------------------- constructors
    @classmethod
    def preset(cls, name: str, **overrides: Any) -> RuleSet:
        """Builds the named preset of docs/rules.md, with some fields overridden.

        Args:
            name: A key of :data:`PRESETS`, e.g. ``"perudo"`` or ``"sanford_wild"``.
            **overrides: RuleSet fields to change, e.g. ``num_players=4``.

        Returns:
            The rule set.

        Raises:
            ValueError: for an unknown preset, an unknown field, a bad value, or a player
                count outside the range the preset's source guide is written for.

        Example:
            >>> RuleSet.preset("perudo_calza").exact_call
            'calza'
        """
        if name not in PRESETS:
            raise ValueError(
                f"unknown preset {name!r}; expected one of {', '.join(sorted(PRESETS))}"
            )
        return PRESETS[name].with_options(_preset=name, **overrides)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> RuleSet:
        """Builds a rule set from :meth:`to_dict` output (unknown keys are an error)."""
        if not isinstance(data, Mapping):
            raise ValueError(f"rules must be a mapping of RuleSet fields, got {data!r}")
        _check_field_names(data)
        return cls(**dict(data))

    def with_options(self, _preset: str | None = None, **overrides: Any) -> RuleSet:
        """Returns a copy with some fields changed (each checked like the constructor)."""
        _check_field_names(overrides)
        rules = dataclasses.replace(self, **overrides)
        if _preset is not None and _preset in PRESET_PLAYERS:
            lo, hi = PRESET_PLAYERS[_preset]
            if not lo <= rules.num_players <= hi:
                players = f"{lo}" if lo == hi else f"{lo}–{hi}"
                raise ValueError(
                    f"preset {_preset!r} is written for {players} players, got "
                    f"num_players={rules.num_players}; build RuleSet(...) directly for "
                    "other table sizes"
                )
        return rules

    def to_dict(self) -> dict[str, Any]:
        """Returns the fields as a JSON-able dict."""
        return dataclasses.asdict(self)

    # ----------------------------------------------------------------- derived facts
    @property
    def max_quantity(self) -> int:
        """The largest quantity the action space holds: the starting total N×D."""
        return self.num_players * self.dice_per_player

    @property
    def ones_wild(self) -> bool:
        """Whether the wild face (:attr:`wild_die`) is wild in ordinary (non-palifico) rounds."""
        return self.ones != "natural"

    @property
    def wild_die(self) -> int:
        """The face the ``ones`` option is about: 1, or ``faces`` with ``wild_face="highest"``.

        Example:
            >>> RuleSet().wild_die, RuleSet.preset("openspiel_liars_dice", faces=4).wild_die
            (1, 4)
        """
        return self.faces if self.wild_face == "highest" else 1


def _check_field_names(fields: Mapping[str, Any]) -> None:
    known = {f.name for f in dataclasses.fields(RuleSet)}
    for key in fields:
        if key not in known:
            raise ValueError(
                f"unknown rule option {key!r}; expected one of {', '.join(sorted(known))}"
            )


# --------------------------------------------------------------------------- presets
_PERUDO = RuleSet(
    ones="wild_convertible",
    raise_rule="quantity_or_face",
    bid_cap=True,
    palifico=False,
    exact_call="none",
)
_SANFORD = RuleSet(ones="natural", raise_rule="no_decrease", bid_cap=True)
_COMMON_HAND = RuleSet(ones="wild", raise_rule="quantity_or_face", bid_cap=True)
_JOKERS = RuleSet(ones="jokers", raise_rule="quantity_or_face", bid_cap=True)
_OPENSPIEL = RuleSet(
    num_players=2,
    dice_per_player=1,
    faces=6,
    ones="wild_biddable",
    wild_face="highest",
    raise_rule="quantity_or_face",
    bid_cap=True,
    palifico=False,
    exact_call="none",
    single_round=True,
    first_opener="player_0",
)

PRESETS: dict[str, RuleSet] = {
    "perudo": _PERUDO,
    "perudo_palifico": dataclasses.replace(_PERUDO, palifico=True),
    "perudo_calza": dataclasses.replace(_PERUDO, exact_call="calza"),
    "sanford": _SANFORD,
    "sanford_flexible": dataclasses.replace(_SANFORD, raise_rule="quantity_or_face"),
    "sanford_wild": dataclasses.replace(_SANFORD, ones="wild"),
    "sanford_three_dice": dataclasses.replace(_SANFORD, dice_per_player=3),
    "common_hand": _COMMON_HAND,
    "common_hand_spot_on": dataclasses.replace(_COMMON_HAND, exact_call="spot_on"),
    "ones_not_wild": dataclasses.replace(_COMMON_HAND, ones="natural"),
    "individual_hand": dataclasses.replace(_COMMON_HAND, hand="individual"),
    "jokers": _JOKERS,
    "openspiel_liars_dice": _OPENSPIEL,
}
"""Every preset of docs/rules.md, by name, at its default table size: 3 players, but 2 players
with 1 die of 6 faces for ``openspiel_liars_dice`` (the defaults of OpenSpiel's game)."""

PRESET_PLAYERS: dict[str, tuple[int, int]] = {
    **{name: (3, 5) for name in PRESETS if name.startswith("sanford")},
    "jokers": (2, 8),
    "openspiel_liars_dice": (2, 2),
}
"""Player-count ranges of presets whose source names one (seed 001: 3–5; jokers: 2–8;
OpenSpiel: 2)."""

PRESET_SOURCES: dict[str, str] = {
    "perudo": "seeds 000, 004 (Perudo ordinary rounds)",
    "perudo_palifico": "seeds 000 (option), 002 (palifico)",
    "perudo_calza": "standard Perudo calza",
    "sanford": "seed 001 main rule",
    "sanford_flexible": "seed 001 flexible-face option",
    "sanford_wild": "seed 001 simple wild ones option",
    "sanford_three_dice": "seed 001 three dice each option",
    "common_hand": "seed 002",
    "common_hand_spot_on": "seed 002 spot-on variant",
    "ones_not_wild": "seed 002 ones-not-wild variant",
    "individual_hand": "seed 002 individual-hand variant",
    "jokers": "house rule: ones wild and biddable as the lowest face (not in the seeds)",
    "openspiel_liars_dice": 'OpenSpiel\'s pyspiel.load_game("liars_dice", {"numdice": D, '
    '"dice_sides": F})',
}


def resolve_rules(rules: RuleSet | str, **overrides: Any) -> RuleSet:
    """Turns a preset name or a RuleSet (plus field overrides) into a RuleSet."""
    if isinstance(rules, RuleSet):
        return rules.with_options(**overrides) if overrides else rules
    if isinstance(rules, str):
        return RuleSet.preset(rules, **overrides)
    raise ValueError(f"rules must be a preset name or a RuleSet, got {rules!r}")


# ------------------------------------------------------------------------ bidding
def is_legal_bid(
    rules: RuleSet, previous: Bid | None, bid: Bid, *, palifico: bool = False, cap: int
) -> bool:
    """Whether ``bid`` may follow ``previous`` (``None`` for the round's opening bid).

    Args:
        rules: The variant.
        previous: The immediately preceding bid of the round, or ``None``.
        bid: The proposed ``(quantity, face)``.
        palifico: Whether this is a palifico round (ones not wild, face fixed).
        cap: The largest quantity allowed now (see :func:`bid_cap`).

    Example:
        >>> perudo = RuleSet.preset("perudo")
        >>> [is_legal_bid(perudo, (5, 4), bid, cap=15) for bid in [(3, 1), (2, 1)]]
        [True, False]
        >>> [is_legal_bid(perudo, (3, 1), bid, cap=15) for bid in [(7, 2), (6, 6)]]
        [True, False]
    """
    return bid_violation(rules, previous, bid, palifico=palifico, cap=cap) is None


def bid_violation(
    rules: RuleSet, previous: Bid | None, bid: Bid, *, palifico: bool = False, cap: int
) -> str | None:
    """Explains why ``bid`` may not follow ``previous``, or returns ``None`` if it may.

    The reasons name the rule that is broken, for error messages and teaching.
    """
    quantity, face = bid
    if not 1 <= face <= rules.faces:
        return f"faces run from 1 to {rules.faces}"
    if quantity < 1:
        return "a bid claims at least one die"
    if quantity > cap:
        return f"bid cap: at most {cap} dice are in play"
    if palifico:
        if previous is None:
            return None
        if face != previous[1]:
            return f"palifico round: the face stays {previous[1]}s"
        if quantity <= previous[0]:
            return "palifico round: only the quantity may rise"
        return None
    wild = rules.wild_die
    if face == wild and rules.ones == "wild":
        return f"{wild_name(rules)} are wild and may not be bid"
    if previous is None:
        if face == wild and rules.ones == "wild_convertible":
            return f"the opening bid may not name {wild_name(rules)}"
        return None
    prev_quantity, prev_face = previous
    if rules.ones == "wild_convertible" and wild in (face, prev_face):
        name = wild_name(rules)
        if prev_face != wild:
            need = math.ceil(prev_quantity / 2)
            if quantity < need:
                return f"conversion to {name} needs at least ceil({prev_quantity}/2) = {need}"
            return None
        if face == wild:
            if quantity <= prev_quantity:
                return f"a bid on {name} must raise the quantity of {name}"
            return None
        need = 2 * prev_quantity + 1
        if quantity < need:
            return f"conversion from {name} needs at least 2×{prev_quantity}+1 = {need}"
        return None
    if rules.raise_rule == "no_decrease":
        if quantity < prev_quantity or face < prev_face:
            return "no-decrease raise: neither quantity nor face may decrease"
        if (quantity, face) == (prev_quantity, prev_face):
            return "no-decrease raise: the quantity or the face must increase"
        return None
    if quantity > prev_quantity or (quantity == prev_quantity and face > prev_face):
        return None
    return "raise a higher quantity, or the same quantity with a higher face"


def wild_name(rules: RuleSet) -> str:
    """The wild face in words, for messages: ``"ones"``, or e.g. ``"6s"`` when F is wild.

    Example:
        >>> wild_name(RuleSet()), wild_name(RuleSet.preset("openspiel_liars_dice"))
        ('ones', '6s')
    """
    return "ones" if rules.wild_die == 1 else f"{rules.wild_die}s"


def bid_cap(rules: RuleSet, dice_left: Sequence[int], bidder: int) -> int:
    """The largest quantity a bid by ``bidder`` may claim now.

    With ``bid_cap`` it is the dice in play (the bidder's own dice for ``individual``
    hands); without it, the action space's limit, the starting total N×D.
    """
    if not rules.bid_cap:
        return rules.max_quantity
    if rules.hand == "individual":
        return dice_left[bidder]
    return sum(dice_left)


def fixed_first_opener(rules: RuleSet, dice_left: Sequence[int]) -> int | None:
    """The seat that opens a game under ``first_opener="player_0"``, else ``None``.

    ``None`` means a seeded uniform draw among the seats holding dice. Under
    ``player_0`` it is seat 0, or the first seat clockwise from it that holds dice (for
    games started with a ``dice_left`` that leaves seat 0 out).

    Example:
        >>> fixed_first_opener(RuleSet(), [5, 5, 5]) is None
        True
        >>> rules = RuleSet.preset("openspiel_liars_dice")
        >>> fixed_first_opener(rules, [1, 1]), fixed_first_opener(rules, [0, 1])
        (0, 1)
    """
    if rules.first_opener == "random":
        return None
    return next(seat for seat, n in enumerate(dice_left) if n > 0)


def is_palifico_round(rules: RuleSet, opener_dice: int, opener_has_had_palifico: bool) -> bool:
    """Whether a round is palifico (convention of docs/rules.md).

    A round is palifico when the rules enable it, its opener holds exactly one die, and
    that opener has not opened a palifico round before in this game.
    """
    return rules.palifico and opener_dice == 1 and not opener_has_had_palifico


# ------------------------------------------------------------------------ reveals
def counts_as_match(rules: RuleSet, die: int, face: int, *, palifico: bool) -> bool:
    """Whether one die counts toward a bid on ``face`` at a reveal.

    Example:
        >>> rules = RuleSet.preset("openspiel_liars_dice", faces=4)  # 4s are wild
        >>> [counts_as_match(rules, die, 2, palifico=False) for die in (1, 2, 4)]
        [False, True, True]
    """
    if die == face:
        return True
    wild = rules.wild_die
    return die == wild and face != wild and rules.ones_wild and not palifico


def count_matches(
    rules: RuleSet, dice: Sequence[Sequence[int]], face: int, *, palifico: bool
) -> int:
    """Counts the dice among ``dice`` (one list per counted hand) matching ``face``.

    Example:
        >>> perudo = RuleSet.preset("perudo")
        >>> hands = [[1, 4, 6], [4, 4, 2], [1, 3, 5]]
        >>> [count_matches(perudo, hands, face, palifico=False) for face in (4, 1)]
        [5, 2]
    """
    wild_die = rules.wild_die
    wild = face != wild_die and rules.ones_wild and not palifico
    total = 0
    for hand in dice:
        total += hand.count(face) + (hand.count(wild_die) if wild else 0)
    return total


def loser_reward(num_players: int) -> float:
    """Reward of every player but the winner: −1/(N−1), so a game's rewards sum to zero.

    The winner gets +1.

    Example:
        >>> loser_reward(3)
        -0.5
    """
    return -1.0 / (num_players - 1)


def dice_lost(rules: RuleSet, dice: int) -> int:
    """Dice a seat holding ``dice`` loses when it loses a call (or a right ``spot_on``).

    One die; all of them (the seat is out, and the game over) with ``single_round``.

    Example:
        >>> dice_lost(RuleSet(), 3), dice_lost(RuleSet.preset("openspiel_liars_dice"), 3)
        (1, 3)
    """
    return dice if rules.single_round else 1


@dataclass(frozen=True)
class CallOutcome:
    """Who loses and who gains a die after a challenge or an exact call."""

    losers: tuple[int, ...]
    gainers: tuple[int, ...]


def settle_call(
    rules: RuleSet,
    call: str,
    quantity: int,
    count: int,
    *,
    bidder: int,
    caller: int,
    active: Sequence[int],
    caller_dice: int,
) -> CallOutcome:
    """Decides who loses (or gains) a die after a call.

    Args:
        rules: The variant.
        call: ``"challenge"`` or ``"exact"``.
        quantity: The called bid's quantity.
        count: The matching dice counted at the reveal.
        bidder: The seat that made the bid.
        caller: The seat that called.
        active: The seats holding dice this round.
        caller_dice: The caller's dice before the call (calza never exceeds the start).

    Example:
        >>> perudo = RuleSet.preset("perudo")
        >>> settle_call(perudo, "challenge", 7, 6, bidder=1, caller=2, active=[0, 1, 2],
        ...             caller_dice=5)
        CallOutcome(losers=(1,), gainers=())
    """
    if call == "challenge":
        return CallOutcome(losers=(caller,) if count >= quantity else (bidder,), gainers=())
    if call != "exact" or rules.exact_call == "none":
        raise ValueError(f"unknown call {call!r} under exact_call={rules.exact_call!r}")
    if count != quantity:
        return CallOutcome(losers=(caller,), gainers=())
    if rules.exact_call == "spot_on":
        return CallOutcome(losers=tuple(s for s in active if s != caller), gainers=())
    gainers = (caller,) if caller_dice < rules.dice_per_player else ()
    return CallOutcome(losers=(), gainers=gainers)
