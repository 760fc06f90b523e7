r"""Reads a text agent's reply into a legal action id, or says why it cannot.

Each form of a move is read by :func:`liars_env.text.moves.parse_move` (the terminal's
parser, so each rule of reading a move lives in one place): the canonical ``5x3``,
``call`` and ``exact``, TextArena's ``[Bid: 5, 3]`` and ``[Call]``, ``bid 5 3``,
``5 threes``, ``five 3s``, ``liar``, ``dudo``, ``calza``, ``spot on``. Which part of a
reply is the move, in order:

1. the last line starting ``Final answer:`` (any case; ``Answer:`` and ``Move:`` too):
   the text after it, or else the last move-like token in it;
2. otherwise the whole reply, if it is a move;
3. otherwise the last TextArena-style bracket (``[Bid: 5, 3]``, ``[Call]``);
4. otherwise the last line that is a move by itself.

A reply that yields no move, or a move that is not legal now, raises :class:`MoveError`,
whose message says why and lists the legal moves (it is what a re-prompt shows).

Example:
    >>> import numpy as np
    >>> from liars_env import LiarsDiceGame, ObservationLayout, RuleSet
    >>> from liars_env.observation import view_of
    >>> rules = RuleSet.preset("perudo", num_players=2, dice_per_player=1)
    >>> game = LiarsDiceGame(rules)
    >>> state = game.new_game(np.random.default_rng(0), dice=[[3], [5]], first_player=0)
    >>> view = view_of(game, ObservationLayout(rules), state)
    >>> read_move("I hold a 3.\nFinal answer: 1x3", view) == game.codec.encode_bid(1, 3)
    True
    >>> try:
    ...     read_move("call", view)
    ... except MoveError as exc:
    ...     print(exc.reason)
    call is not legal now: no bid to call yet; the opening bid cannot be a call
"""

from __future__ import annotations

import re

from liars_env.observation import PlayerView
from liars_env.rules import bid_violation
from liars_env.text.moves import ParseError, parse_move
from liars_env.text.view import cap_of, legal_moves_text, move_text

MAX_REPLY_CHARS = 20_000
"""Replies are read from their last this many characters (the answer comes last)."""

_FINAL = re.compile(r"^\W*(?:final\s*answer|answer|move)\s*(?:is)?\s*[:=\-]+\s*(.*)$", re.I)
_BRACKET = re.compile(
    r"\[\s*(bid\s*:?\s*\d{1,3}\s*,\s*\d{1,2}|call|liar|dudo|exact|calza)\s*\]", re.I
)
_TOKEN = re.compile(
    r"\b(\d{1,3}\s*[x×*]\s*\d{1,2}|call|liar|dudo|challenge|exact|calza|spot[\s-]?on)\b", re.I
)


class MoveError(ValueError):
    """A reply that is not a legal move: why, and the legal moves.

    Attributes:
        reason: Why the reply was refused (without the list of legal moves).
        legal: The ``Legal moves: ...`` line.
    """

    def __init__(self, reason: str, legal: str) -> None:
        super().__init__(f"{reason}. {legal}")
        self.reason = reason
        self.legal = legal


def read_move(reply: object, view: PlayerView) -> int:
    """The legal action id that ``reply`` names for ``view``'s seat.

    Raises:
        MoveError: if no move can be read, or the move is not legal now.
    """
    legal = legal_moves_text(view)
    if not isinstance(reply, str):
        raise MoveError(f"the reply is not text (got {type(reply).__name__})", legal)
    text = reply[-MAX_REPLY_CHARS:].strip()
    if not text:
        raise MoveError("the reply is empty", legal)
    action, problem = _find_action(text, view)
    if action is None:
        raise MoveError(problem or f"no move found in the reply {_excerpt(text)}", legal)
    if not view.mask[action]:
        raise MoveError(
            f"{move_text(view.codec, action)} is not legal now: {_why(view, action)}", legal
        )
    return action


def _find_action(text: str, view: PlayerView) -> tuple[int | None, str | None]:
    """The action a reply names (legal or not), or ``None`` and why not."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    finals = [m.group(1) for m in (_FINAL.match(line) for line in lines) if m]
    if finals:
        final = finals[-1].strip()
        action, problem = _parse(final, view)
        if action is None:
            tokens = _TOKEN.findall(final)
            if tokens:
                action, problem = _parse(tokens[-1], view)
        if action is None:
            return None, f"the final answer {_excerpt(final)} is not a move ({problem})"
        return action, None
    action, problem = _parse(text, view)
    if action is not None:
        return action, None
    brackets = _BRACKET.findall(text)
    if brackets:
        return _parse(brackets[-1], view)
    for line in reversed(lines):
        action, _ = _parse(line, view)
        if action is not None:
            return action, None
    specific = problem and not problem.startswith(("not a move", "too long"))
    return None, problem if specific else None


def _parse(text: str, view: PlayerView) -> tuple[int | None, str | None]:
    if len(text) > 200:  # a move is short; a long line is prose
        return None, "too long to be a move"
    try:
        action = parse_move(text, view.codec)
    except ParseError as exc:
        return None, str(exc)
    if isinstance(action, str):  # "help" / "quit"
        return None, f"{text!r} is not a move"
    return action, None


def _why(view: PlayerView, action: int) -> str:
    """Why a legal-looking action is illegal at ``view``."""
    codec = view.codec
    current = view.current_bid
    if not codec.is_bid(action):
        if current is None:
            return "no bid to call yet; the opening bid cannot be a call"
        return "no calls are allowed now"  # not reached: calls are legal once a bid stands
    reason = bid_violation(
        view.rules, current, codec.decode_bid(action), palifico=view.palifico, cap=cap_of(view)
    )
    now = f"the last bid is {current[0]}x{current[1]}" if current else "you open the round"
    return f"{now}; {reason}" if reason else now


def _excerpt(text: str, limit: int = 80) -> str:
    text = " ".join(text.split())
    return repr(text if len(text) <= limit else text[: limit - 3] + "...")
