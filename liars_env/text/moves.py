"""The move parser: typed words to an action id (``4 3s``, ``liar``, ``calza``).

The terminal reads a player's input with it, and :mod:`liars_env.text.reader` reads a
language model's reply with it, so each rule of reading a move lives here once. Besides
the terminal's forms it accepts TextArena's ``[Bid: 3, 4]`` / ``[Call]``, ``bid 3 4``,
``3 of 4s`` and ``3×4``, with surrounding brackets, quotes and punctuation ignored.
"""

from __future__ import annotations

import re

from liars_env.actions import ActionCodec, describe_bid, number_word

_FACE_WORDS = {
    "one": 1,
    "ones": 1,
    "two": 2,
    "twos": 2,
    "three": 3,
    "threes": 3,
    "four": 4,
    "fours": 4,
    "five": 5,
    "fives": 5,
    "six": 6,
    "sixes": 6,
    "seven": 7,
    "sevens": 7,
    "eight": 8,
    "eights": 8,
    "nine": 9,
    "nines": 9,
}
_CHALLENGE_WORDS = {
    "challenge",
    "liar",
    "dudo",
    "call",
    "doubt",
    "c",
    "call liar",
    "call bluff",
    "call_bluff",
    "bluff",
}
_EXACT_WORDS = {"exact", "calza", "spot on", "spot-on", "spoton", "e"}
_NUMBER_WORDS = {number_word(n): n for n in range(100)}

HELP = """Moves:
  a bid:      4 3s | 4x3 | 4 3 | four threes      (quantity, then face)
  challenge:  challenge | liar | dudo
  exact call: exact | calza | spot on              (when the rules have one)
  help, quit"""


class ParseError(ValueError):
    """Input that is not a move; the message says what was expected."""


def _number(token: str) -> int | None:
    token = token.strip().lower()
    if token.isdecimal():
        return int(token)
    return _NUMBER_WORDS.get(token)


def _face(token: str) -> int | None:
    token = token.strip().lower().rstrip(".")
    token = re.sub(r"'?s$", "", token) if token[:1].isdecimal() else token
    if token.isdecimal():
        return int(token)
    return _FACE_WORDS.get(token)


def parse_move(text: str, codec: ActionCodec) -> int | str:
    """Turns a typed move into an action id, or ``"help"`` / ``"quit"``.

    Example:
        >>> from liars_env import RuleSet
        >>> codec = ActionCodec(RuleSet.preset("perudo_calza"))
        >>> [parse_move(t, codec) for t in ["4 3s", "4x3", "four threes", "liar", "calza"]]
        [20, 20, 20, 90, 91]

    Raises:
        ParseError: if the text is not a move (the message shows the accepted forms).
    """
    words = " ".join(text.strip().lower().split())
    if words in ("help", "h", "?"):
        return "help"
    if words in ("quit", "exit", "q"):
        return "quit"
    words = _normalized(words)
    if words in _CHALLENGE_WORDS:
        return codec.challenge
    if words in _EXACT_WORDS:
        if codec.exact is None:
            raise ParseError("these rules have no exact call; challenge or raise")
        return codec.exact
    for pattern in (r"(\S+)\s(\S+)", r"(\S+?)\s*[x*]\s*(\S+)"):
        match = re.fullmatch(pattern, words)
        if not match:
            continue
        quantity, face = _number(match.group(1)), _face(match.group(2))
        if quantity is not None and face is not None:
            if not 1 <= face <= codec.faces:
                raise ParseError(f"faces run from 1 to {codec.faces}, got {face}")
            if not 1 <= quantity <= codec.max_quantity:
                raise ParseError(f"quantities run from 1 to {codec.max_quantity}, got {quantity}")
            return codec.encode_bid(quantity, face)
    raise ParseError(f"not a move: {text.strip()!r}. Type a bid like '4 3s', or 'challenge'")


def _normalized(words: str) -> str:
    """Lower-case words without wrapping brackets, quotes, a ``bid:`` label or commas.

    ``[Bid: 3, 4]`` → ``3 4``; ``"Call."`` → ``call``; ``3 × 4`` → ``3 x 4``;
    ``3 of 4s`` → ``3 4s``.
    """
    words = words.strip(" \t[](){}<>\"'`*.!,;:")
    words = re.sub(r"^(?:i\s+)?(?:bid|raise(?:\s+to)?|say)\b\s*:?\s*", "", words)
    words = words.replace("×", "x").replace(",", " ")
    words = re.sub(r"\s+of\s+", " ", words)
    return " ".join(words.strip(" \t[](){}<>\"'`*.!;:").split())


def minimum_raises(codec: ActionCodec, mask) -> str:
    """The smallest legal bid on each face, in words (for hints)."""
    best: dict[int, int] = {}
    for action in range(codec.num_bids):
        if mask[action]:
            quantity, face = codec.decode_bid(action)
            best.setdefault(face, quantity)
    return ", ".join(describe_bid(q, f) for f, q in sorted(best.items())) or "none"
