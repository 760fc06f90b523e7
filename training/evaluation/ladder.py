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
import os
import sys
from pathlib import Path

from liars_env.agents.policy import CheckpointError
from liars_env.cli import add_rule_arguments
from liars_env.rules import RuleSet
from liars_train.evaluation.results import DEFAULT_FALLBACK_THRESHOLD
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
    table: dict[str, dict[str, dict]] = {}
    for row in rows:
        table[row] = {}
        for col in specs:
            before = {s: _usage(members[s]) for s in (row, col)}
            cell = play_match(members[row], members[col], rules, games, seed, device)
            spent = {
                s: _delta(_usage(members[s]), before[s])
                for s in dict.fromkeys((row, col))
                if before[s] is not None
            }
            if spent:  # a text agent's fallbacks and failed requests, beside its win rate
                cell["text_usage"] = spent
            table[row][col] = cell
    return table


def _usage(member) -> dict | None:
    """A text agent member's usage counts now (``None`` for other members)."""
    usage = getattr(member.search, "usage", None)
    return dict(usage) if isinstance(usage, dict) else None


def _delta(now: dict | None, before: dict | None) -> dict:
    """What the counts grew by, with the fallback rate."""
    out = {k: v - (before or {}).get(k, 0) for k, v in (now or {}).items()}
    out["fallback_rate"] = out.get("fallbacks", 0) / max(1, out.get("decisions", 0))
    return out


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
            f"{c['win_rate']:.3f} [{c['ci95'][0]:.3f}, {c['ci95'][1]:.3f}]{_fallbacks(c)}"
            for c in cells.values()
        ]
        if mean:
            values.append(f"{sum(c['win_rate'] for c in cells.values()) / len(cells):.3f}")
        lines.append(f"| {row} | " + " | ".join(values) + " |")
    return "\n".join(lines)


def _fallbacks(cell: dict, threshold: float = DEFAULT_FALLBACK_THRESHOLD) -> str:
    """A cell's text-agent fallbacks and failed requests, ``(!)`` over ``threshold``."""
    parts = []
    for spec, u in (cell.get("text_usage") or {}).items():
        flag = " (!)" if u["fallback_rate"] > threshold else ""
        name = spec.rpartition("?")[0] or spec
        parts.append(
            f"{name}: fallbacks {u.get('fallbacks', 0)}/{u.get('decisions', 0)}, "
            f"failed requests {u.get('failed_requests', 0)}{flag}"
        )
    return f" ({'; '.join(parts)})" if parts else ""


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
        out = Path(ns.out)
        tmp = out.with_name(f".{out.name}.tmp")
        tmp.write_text(json.dumps(table, indent=2))
        os.replace(tmp, out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
