"""A fast cross table of players on the batched engine.

Each player sits in one seat, another in all others, seats rotating. Run
``python -m liars_train.evaluation.ladder --rules perudo --players 3 --games 3000 --players-list
probabilistic bayes belief checkpoint:checkpoints/perudo_3p``: prints a Markdown table
(row: the player in one seat; column: the opponent in all other seats; cell: the row's
win rate) and writes it as JSON with ``--out``. Players are bots (``random``,
``probabilistic``, ``cautious``, ``bold``, ``bayes``, ``belief``), ``checkpoint:PATH`` or
``search:SPEC`` (search at play time over any of them).
``--rows`` plays only the given players in the one seat against every column (a model
against the bots without the full square; a row may be a player not among the columns),
and the table gets the mean of each row.
``liars-eval`` plays the same games one at a time, with ratings and head-to-head
figures; this is the quick way to compare many players.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from liars_env.agents.policy import CheckpointError
from liars_env.cli import add_rule_arguments
from liars_env.rules import RuleSet
from liars_train.league import member_from_spec, play_match


def cross_table(
    rules: RuleSet,
    specs: list[str],
    games: int,
    seed: int = 0,
    device: str = "cpu",
    rows: list[str] | None = None,
) -> dict[str, dict[str, dict]]:
    """``table[row][column]``: :func:`play_match` of ``row`` against ``column``.

    Args:
        rules: The rule set every match is played under.
        specs: The columns (and the rows, unless ``rows`` is given): bot names or
            ``checkpoint:PATH``.
        games: Finished games per cell.
        seed: Seed of every match (the same deals for every cell).
        device: Torch device of the networks.
        rows: The players in the one seat; ``None``: every spec.
    """
    rows = list(specs) if rows is None else list(rows)
    members = {spec: member_from_spec(spec, rules, device) for spec in dict.fromkeys(rows + specs)}
    return {
        row: {
            col: play_match(members[row], members[col], rules, games, seed, device) for col in specs
        }
        for row in rows
    }


def markdown(table: dict[str, dict[str, dict]], parity: float) -> str:
    """The cross table as Markdown (win rate and 95% interval per cell)."""
    cols = list(next(iter(table.values())))
    mean = len(cols) > 1
    header = cols + (["mean"] if mean else [])
    lines = [
        f"| one seat ↓ / all others → (parity {parity:.3f}) | " + " | ".join(header) + " |",
        "|---|" + "---|" * len(header),
    ]
    for row, cells in table.items():
        values = [
            f"{c['win_rate']:.3f} [{c['ci95'][0]:.3f}, {c['ci95'][1]:.3f}]" for c in cells.values()
        ]
        if mean:
            values.append(f"{sum(c['win_rate'] for c in cells.values()) / len(cells):.3f}")
        lines.append(f"| {row} | " + " | ".join(values) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """Entry point: ``python -m liars_train.evaluation.ladder``."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_rule_arguments(parser, players=3)
    parser.add_argument(
        "--players-list",
        nargs="+",
        default=["probabilistic", "bayes", "belief"],
        help="bots and checkpoint:PATH specs (the columns, and the rows unless --rows)",
    )
    parser.add_argument(
        "--rows",
        nargs="+",
        help="players in the one seat (default: every player of --players-list)",
    )
    parser.add_argument("--games", type=int, default=3000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", help="JSON file for the table")
    ns = parser.parse_args(argv)
    try:
        rules = RuleSet.preset(ns.rules, num_players=ns.players)
        if ns.games < 1:
            raise ValueError(f"--games must be at least 1, got {ns.games}")
        table = cross_table(rules, ns.players_list, ns.games, ns.seed, rows=ns.rows)
    except (ValueError, CheckpointError) as exc:
        print(f"ladder: {exc}", file=sys.stderr)
        return 2
    print(markdown(table, 1 / ns.players))
    if ns.out:
        Path(ns.out).write_text(json.dumps(table, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
