"""Exceptions shared by the engine, the environments and the tools."""


class IllegalActionError(ValueError):
    """An action that the rules do not allow now; nothing was changed.

    The message names the action, the current bid and the rule that it breaks. The same
    player may act again.
    """
