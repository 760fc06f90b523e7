"""Deprecated: the parser of typed moves moved to :mod:`liars_env.typed_moves`.

It reads words, not an agent; this alias will be removed in a later release.
"""

import warnings

from liars_env.typed_moves import *  # noqa: F403
from liars_env.typed_moves import HELP, ParseError, minimum_raises, parse_move  # noqa: F401

warnings.warn(
    "liars_env.agents.human moved to liars_env.typed_moves",
    DeprecationWarning,
    stacklevel=2,
)
