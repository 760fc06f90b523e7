"""People at the table: the terminal game (``liars-play``), the web table, replays.

:mod:`~liars_env.play.terminal` (``liars-play``: a game in the terminal, or ``--web``; it
reads typed moves such as ``"3 fives"`` or ``"liar"`` with :mod:`liars_env.text.moves`,
the reader people and text agents share), :mod:`liars_env.play.web` (the browser table and
``liars-replay``), :mod:`~liars_env.play.recording` (the game recorder every tool writes
with, and the replay loader) and :mod:`~liars_env.play.bot_server` (a chat-completions server on
127.0.0.1 answering as a bot, for text agents' tests).
"""

from liars_env.play.terminal import TerminalGame, main

__all__ = ["TerminalGame", "main"]
