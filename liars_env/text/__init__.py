"""Text agents at the table: the prompt of a position, the reader of replies, a test server.

* :mod:`~liars_env.text.view`: the prompt of a seat's position (:func:`prompt_text`) and
  each move's canonical text (:func:`move_text`);
* :mod:`~liars_env.text.reader`: a reply to a legal action id (:func:`read_move`), or a
  :class:`MoveError` that says why not and lists the legal moves;
* :mod:`~liars_env.text.parse`: a prompt back into the position it describes;
* :mod:`~liars_env.play.bot_server`: a chat-completions server on 127.0.0.1 that answers as
  one of our bots from the prompt alone (for tests, and for trying the ``llm:`` agent).

Numpy only: the ``llm:`` agent (:mod:`liars_env.agents.llm`) imports ``openai``, this
package does not.
"""

from liars_env.text.reader import MoveError, read_move
from liars_env.text.view import (
    PROMPT_VERSION,
    legal_moves_text,
    move_text,
    position_text,
    prompt_text,
    rules_text,
)

__all__ = [
    "PROMPT_VERSION",
    "MoveError",
    "legal_moves_text",
    "move_text",
    "position_text",
    "prompt_text",
    "read_move",
    "rules_text",
]
