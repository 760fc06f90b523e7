"""The command-line arguments every command shares: the rules, the table size, rule options.

``liars-play``, ``liars-eval``, ``liars-solve``, ``liars-exploit``, the ladder and the LLM
suite each take a preset (``--rules``), a table size (``--players``) and, where the command
accepts them, ``KEY=VALUE`` rule options (``--rule``, repeatable; read with
:func:`liars_train.config.parse_rule_overrides`). :func:`add_rule_arguments` declares them
once, the same way for every command; each command keeps its own default table size.

Example:
    >>> import argparse
    >>> parser = argparse.ArgumentParser()
    >>> add_rule_arguments(parser, players=2, rule=True)
    >>> args = parser.parse_args(["--rules", "sanford", "--rule", "faces=4"])
    >>> args.rules, args.players, args.rule
    ('sanford', 2, ['faces=4'])
"""

from __future__ import annotations

import argparse

from liars_env.rules import PRESETS


def add_rule_arguments(
    parser: argparse.ArgumentParser,
    *,
    players: int | None = 3,
    players_help: str | None = None,
    rule: bool = False,
    rules_help: str | None = None,
) -> None:
    """Adds ``--rules`` (default ``perudo``), ``--players`` and, with ``rule``, ``--rule``.

    Args:
        parser: The command's parser (or an argument group).
        players: The default table size (``None``: the command decides, say one seat per
            agent).
        players_help: The help of ``--players`` (default: "seats at the table").
        rule: Add ``--rule KEY=VALUE`` (repeatable; a list of strings, empty by default).
        rules_help: The help of ``--rules`` (default: the presets' names).

    Raises:
        ValueError: for a default table size that is not an int of at least 2 or ``None``.
    """
    if players is not None and (type(players) is not int or players < 2):
        raise ValueError(f"players must be an int of at least 2 or None, got {players!r}")
    parser.add_argument(
        "--rules", default="perudo", help=rules_help or f"preset: {', '.join(PRESETS)}"
    )
    default = "" if players is None else f" (default {players})"
    parser.add_argument(
        "--players",
        type=int,
        default=players,
        help=(players_help or "seats at the table") + default,
    )
    if rule:
        parser.add_argument(
            "--rule",
            action="append",
            default=[],
            metavar="KEY=VALUE",
            help="rule option, e.g. dice_per_player=1 or faces=4 (repeatable)",
        )
