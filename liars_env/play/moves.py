"""The terminal's move parser, re-exported from :mod:`liars_env.text.moves`.

It lives there so that people and text agents share one reader of moves.
"""

from liars_env.text.moves import HELP, ParseError, minimum_raises, parse_move

__all__ = ["HELP", "ParseError", "minimum_raises", "parse_move"]
