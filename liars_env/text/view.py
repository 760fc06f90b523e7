"""The text of a seat's position: what a language model (or any text agent) is shown.

A prompt has three blocks, each built from one seat's
:class:`~liars_env.observation.PlayerView` only (never another seat's unrevealed dice):

* ``Rules:`` the variant in brief, one line per rule option (:func:`rules_text`): the
  table, what a bid claims, wild faces and conversions, the raise rule, the cap,
  palifico, the exact call (calza or spot on), how a call is settled and who opens;
* ``Position:`` your seat and dice, every player's dice count, this round's opener and
  bids, and the last round's reveal (:func:`position_text`);
* ``Legal moves:`` one compact line (:func:`legal_moves_text`), then how to answer.

A move's canonical text is :func:`move_text`: ``5x3`` (a bid of five 3s: quantity, then
face), ``call`` (challenge the last bid) or ``exact``. :func:`liars_env.text.reader.read_move`
reads it back, and many other forms.

Example:
    >>> import numpy as np
    >>> from liars_env import LiarsDiceGame, ObservationLayout, RuleSet
    >>> from liars_env.observation import view_of
    >>> rules = RuleSet.preset("perudo", num_players=2, dice_per_player=1)
    >>> game = LiarsDiceGame(rules)
    >>> state = game.new_game(np.random.default_rng(0), dice=[[3], [5]], first_player=0)
    >>> game.apply(state, game.codec.encode_bid(1, 4), np.random.default_rng(0))
    >>> print(position_text(view_of(game, ObservationLayout(rules), state)))
    Position:
    You are player 1. Seats clockwise: player 0, player 1.
    Dice left: player 0: 1, player 1 (you): 1; 2 dice in play.
    Your dice: 5
    This round was opened by player 0.
    Bids this round, in order: player 0: 1x4.
    Last round: none yet (this is the first round).
"""

from __future__ import annotations

from liars_env.actions import ActionCodec
from liars_env.observation import PlayerView
from liars_env.rules import RuleSet, bid_cap

PROMPT_VERSION = 1
"""Version of the prompt text; part of every response-cache key. Bump on any change."""

ANSWER_INSTRUCTIONS = (
    "Answer with one legal move: a bid as QxF (for example 5x3 claims at least five dice "
    "showing 3), or call (challenge the last bid){exact}. You may think it through first; "
    "then end your reply with one line 'Final answer: <move>'."
)


def move_text(codec: ActionCodec, action: int) -> str:
    """The canonical text of an action: ``"5x3"``, ``"call"`` or ``"exact"``.

    Example:
        >>> codec = ActionCodec(RuleSet.preset("perudo_calza"))
        >>> [move_text(codec, a) for a in (codec.encode_bid(5, 3), codec.challenge, codec.exact)]
        ['5x3', 'call', 'exact']

    Raises:
        ValueError: if ``action`` is outside the action space.
    """
    if codec.is_bid(action):
        quantity, face = codec.decode_bid(action)
        return f"{quantity}x{face}"
    if action == codec.challenge:
        return "call"
    if codec.exact is not None and action == codec.exact:
        return "exact"
    raise ValueError(f"action {action} is outside 0–{codec.num_actions - 1}")


def _face_name(face: int) -> str:
    return f"{face}s"


def rule_lines(rules: RuleSet) -> list[str]:
    """One sentence per rule option of ``rules`` (the ``Rules:`` block without its title).

    Every option's value changes its sentence, so the block names the variant exactly
    (:func:`liars_env.text.parse.rules_from_text` reads it back).
    """
    n, d, f = rules.num_players, rules.dice_per_player, rules.faces
    wild = _face_name(rules.wild_die)
    lines = [
        f"Liar's Dice for {n} players: each starts with {d} {'die' if d == 1 else 'dice'} "
        f"of {f} faces (1 to {f}). Every round all players roll their dice in secret.",
    ]
    if rules.hand == "common":
        lines.append(
            'A bid "QxF" claims that at least Q of all the dice in play show face F. A call '
            "reveals every die and counts the dice that match the bid."
        )
    else:
        lines.append(
            'A bid "QxF" claims that at least Q of the bidder\'s own dice show face F. A call '
            "reveals and counts only the bidder's dice."
        )
    if rules.ones == "natural":
        lines.append("No face is wild: a die counts only for its own face.")
    elif rules.ones == "wild":
        lines.append(
            f"{wild} are wild: they count toward bids on every other face; no bid may name {wild}."
        )
    elif rules.ones == "wild_convertible":
        lines.append(
            f"{wild} are wild: they count toward bids on every other face. A bid on {wild} "
            "after a bid on another face needs at least half its quantity, rounded up; a bid "
            f"on another face after a bid on {wild} needs at least twice their quantity plus "
            f"one; a bid on {wild} after {wild} must raise the quantity; the opening bid may "
            f"not name {wild}."
        )
    elif rules.ones == "jokers":
        lines.append(
            f"{wild} are jokers: they count toward bids on every other face, and {wild} may be "
            f"bid too, as the lowest face (the opening bid included); a bid on {wild} counts "
            f"only {wild}."
        )
    else:
        lines.append(
            f"{wild} are wild: they count toward bids on every other face; {wild} may be bid "
            "like any other face, the opening bid included."
        )
    if rules.raise_rule == "quantity_or_face":
        lines.append(
            "Each bid must raise the last one: a higher quantity with any face, or the same "
            "quantity with a higher face."
        )
    else:
        lines.append(
            "Each bid must raise the last one: neither the quantity nor the face may go down, "
            "and at least one must go up."
        )
    if not rules.bid_cap:
        lines.append(f"A bid may claim up to {rules.max_quantity} dice, however many are in play.")
    elif rules.hand == "individual":
        lines.append("A bid may not claim more dice than the bidder holds.")
    else:
        lines.append("A bid may not claim more dice than are in play.")
    if rules.palifico:
        lines.append(
            "Palifico: the first round a player opens with a single die, wild faces are not "
            "wild, the opener may bid any face, and later bids keep that face and only raise "
            "the quantity."
        )
    else:
        lines.append("There are no palifico rounds.")
    lines.append(
        "On your turn you raise the last bid or call it (challenge it); the opening bid of a "
        "round cannot be a call. After a call, if the count is at least the bid's quantity "
        "the caller loses "
        + ("the game" if rules.single_round else "one die")
        + "; otherwise the bidder does."
    )
    if rules.exact_call == "calza":
        lines.append(
            "Instead of calling you may say exact (calza): if the count equals the bid's "
            f"quantity exactly you regain one die (at most {d}); otherwise you lose one."
        )
    elif rules.exact_call == "spot_on":
        lines.append(
            "Instead of calling you may say exact (spot on): if the count equals the bid's "
            "quantity exactly every other player loses "
            + ("the game" if rules.single_round else "one die")
            + "; otherwise you lose "
            + ("the game." if rules.single_round else "one.")
        )
    else:
        lines.append("There is no exact call.")
    if rules.single_round:
        lines.append("The game is a single round: the first call decides the winner.")
    else:
        lines.append(
            "A player who loses a die opens the next round (if it was their last die, the next "
            "player clockwise opens); a player without dice is out; the last player with dice "
            "wins."
        )
    if rules.first_opener == "player_0":
        lines.append("Player 0 opens the first round.")
    else:
        lines.append("A random player opens the first round.")
    return lines


def rules_text(rules: RuleSet) -> str:
    """The ``Rules:`` block: :func:`rule_lines` as a bulleted list under a title."""
    return "Rules:\n" + "\n".join(f"- {line}" for line in rule_lines(rules))


def _hand(faces) -> str:
    return " ".join(str(f) for f in sorted(faces)) or "(none)"


def position_text(view: PlayerView) -> str:
    """The ``Position:`` block of ``view`` (the seat's own dice only, never another's)."""
    rules, seat, n = view.rules, view.seat, len(view.dice_left)
    counts = []
    for s, count in enumerate(view.dice_left):
        you = " (you)" if s == seat else ""
        counts.append(f"player {s}{you}: {count if count else 'out'}")
    in_play = sum(view.dice_left)
    lines = [
        "Position:",
        f"You are player {seat}. Seats clockwise: "
        + ", ".join(f"player {s}" for s in range(n))
        + ".",
        f"Dice left: {', '.join(counts)}; {in_play} dice in play.",
        f"Your dice: {_hand(view.dice)}",
        f"This round was opened by player {view.opener}."
        + (
            f" It is a palifico round: {_face_name(rules.wild_die)} are not wild and the face "
            "of the opening bid is fixed."
            if view.palifico
            else ""
        ),
    ]
    if view.bids:
        bids = "; ".join(f"player {s}: {q}x{f}" for s, q, f in view.bids)
        lines.append(f"Bids this round, in order: {bids}.")
    else:
        lines.append("No bid yet this round: you open it.")
    lines.append(reveal_text(view.last_reveal))
    return "\n".join(lines)


def reveal_text(reveal: dict | None) -> str:
    """The ``Last round:`` line for a ``last_reveal`` of :class:`~liars_env.engine.GameState`."""
    if reveal is None:
        return "Last round: none yet (this is the first round)."
    if reveal.get("unknown"):
        return "Last round: not recorded at this table."
    quantity, face = reveal["bid"]
    call = "called" if reveal["call"] == "challenge" else "said exact on"
    shown = ", ".join(f"player {s}: {_hand(h)}" for s, h in reveal["shown"])
    outcome = []
    if reveal["losers"]:
        outcome.append(_players(reveal["losers"]) + " lost a die")
    if reveal["gainers"]:
        outcome.append(_players(reveal["gainers"]) + " regained a die")
    if reveal["eliminated"]:
        outcome.append(_players(reveal["eliminated"]) + " went out")
    return (
        f"Last round: player {reveal['caller']} {call} player {reveal['bidder']}'s bid "
        f"{quantity}x{face}. Dice shown: {shown}. {reveal['count']} matched; "
        + ", ".join(outcome)
        + "."
    )


def _players(seats) -> str:
    return " and ".join(f"player {s}" for s in seats)


def legal_moves_text(view: PlayerView) -> str:
    """The legal moves on one line: calls first, then the bids per face as ranges.

    Example: ``Legal moves: call; bids 3x2 to 4x2, 2x3 to 4x3, 1x1 to 4x1.`` (the wild
    face last, but ``jokers`` first, as the lowest face).
    """
    codec, mask = view.codec, view.mask
    calls = [
        move_text(codec, a) for a in (codec.challenge, codec.exact) if a is not None and mask[a]
    ]
    by_face: dict[int, list[int]] = {}
    for action in range(codec.num_bids):
        if mask[action]:
            quantity, face = codec.decode_bid(action)
            by_face.setdefault(face, []).append(quantity)
    ranges = []
    # the wild face last, but jokers (the lowest face) in their place, first
    last = view.rules.wild_die if view.rules.ones != "jokers" else None
    for face in sorted(by_face, key=lambda f: (f == last, f)):
        for lo, hi in _runs(by_face[face]):
            ranges.append(f"{lo}x{face}" if lo == hi else f"{lo}x{face} to {hi}x{face}")
    parts = list(calls)
    if ranges:
        parts.append("bids " + ", ".join(ranges))
    return "Legal moves: " + "; ".join(parts) + "."


def _runs(values: list[int]) -> list[tuple[int, int]]:
    runs: list[tuple[int, int]] = []
    for v in values:
        if runs and runs[-1][1] == v - 1:
            runs[-1] = (runs[-1][0], v)
        else:
            runs.append((v, v))
    return runs


def prompt_text(view: PlayerView) -> str:
    """The whole prompt of ``view``: rules, position, legal moves and how to answer."""
    exact = ""
    if view.codec.exact is not None and view.mask[view.codec.exact]:
        exact = ", or exact"
    return "\n\n".join(
        [
            rules_text(view.rules),
            position_text(view),
            legal_moves_text(view) + "\n" + ANSWER_INSTRUCTIONS.format(exact=exact),
        ]
    )


def cap_of(view: PlayerView) -> int:
    """The largest quantity ``view``'s seat may bid now."""
    return bid_cap(view.rules, view.dice_left, view.seat)
