"""The language-model suite: one ``llm:`` spec against every bot, and its exact exploitability.

Runs, for the model named by ``--model`` (any ``llm:`` or ``textarena:`` spec):

* **the ladder against every bot**: ``liars-eval`` games of the model in one seat and the
  bot in every other (seats rotated), on ``--rules`` at ``--players``; per bot the
  model's win rate with its 95 % interval, its fallback rate (moves it did not choose) and
  what it spent; every game recorded under ``OUT/games/<bot>/`` (open one with
  ``liars-replay``: the model's words beside its moves);
* **its exact exploitability** on perudo with 1 die and each of ``--exploit-faces``
  (default 4 and 6), 2 players: ``liars-solve --exploit`` through the text path, with the
  budget printed first and ``--max-calls`` guarding it, beside the bots' own figures.

Everything goes through the model spec's ``cache=`` folder (default ``OUT/cache``, added to
the spec when it has none): a rerun pays nothing twice, and a run that stopped resumes
where it was. ``--dry-run`` prints the budgets and stops before any call. Results:
``OUT/suite.json`` and a Markdown table on stdout. Example::

    python benchmarks/llm_suite.py --games 100 --out runs/llm/qwen7b --max-calls 60000 \
        --model "llm:qwen2.5:7b-instruct?base_url=http://127.0.0.1:8000/v1"

No figure is invented here: the script reports what it measured, against the model named.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

from liars_env.cli import add_rule_arguments
from liars_env.rules import RuleSet
from liars_train.evaluation.results import DEFAULT_FALLBACK_THRESHOLD

BOTS = ("random", "probabilistic", "cautious", "bold", "bayes", "belief")
"""The bots the model meets, weakest first."""


def with_cache(spec: str, cache: Path) -> str:
    """``spec`` with ``cache=DIR`` added when it names none (``llm:`` specs only).

    Example:
        >>> with_cache("llm:m?temperature=0", Path("c"))
        'llm:m?temperature=0&cache=c'
        >>> with_cache("llm:m?cache=x", Path("c"))
        'llm:m?cache=x'
    """
    if not spec.startswith("llm:") or "cache=" in spec.rpartition("?")[2]:
        return spec
    joiner = "&" if "?" in spec else "?"
    return f"{spec}{joiner}cache={cache}"


class SuiteStoppedError(Exception):
    """``--max-calls`` ran out: the suite stops (a rerun resumes from the cache)."""


class Budget:
    """What is left of ``--max-calls`` across the suite's runs (``None``: no limit)."""

    def __init__(self, limit: int | None) -> None:
        self.left = limit

    def spend(self, usage: dict | None) -> None:
        """Takes off the real requests ``usage`` counted."""
        if self.left is not None and usage:
            self.left = max(0, self.left - int(usage.get("requests", 0)))


def ladder(
    spec: str, bots: list[str], rules: RuleSet, games: int, out: Path, budget: Budget
) -> list[dict]:
    """Per bot: the model in one seat, the bot in every other (``liars-eval``'s games)."""
    from liars_train.evaluation.tournament import evaluate

    rows = []
    for bot in bots:
        specs = [spec] + [bot] * (rules.num_players - 1)
        result = evaluate(
            rules,
            specs,
            games,
            seed=0,
            progress=True,
            record=out / "games" / bot,
            max_calls=budget.left,
        )
        model = result.agents[0]
        budget.spend(model.text_usage)
        if result.stopped:
            raise SuiteStoppedError(f"the ladder against {bot}: {result.stopped}")
        rows.append(
            {
                "bot": bot,
                "games": model.games,
                "wins": model.wins,
                "win_rate": model.win_rate,
                "ci95": list(model.ci95),
                "parity": 1.0 / rules.num_players,
                "mean_place": model.mean_place,
                "usage": model.text_usage,
            }
        )
    return rows


def exploitability(
    spec: str, bots: list[str], faces: list[int], budget: Budget, dry_run: bool
) -> list[dict]:
    """Per face count: the model's and the bots' exact exploitability on perudo 1×F.

    A dry run prints the budgets and sends nothing (a budget of 0 calls).
    """
    from liars_train.tools.solve import run

    rows = []
    for f in faces:
        rules = RuleSet.preset("perudo", num_players=2, dice_per_player=1, faces=f)
        result = run(
            rules,
            exploit_specs=[spec, *bots],
            progress=lambda line, f=f: print(f"  perudo 1x{f}: {line}", flush=True),
            max_calls=0 if dry_run else budget.left,
        )
        if dry_run:
            continue
        budget.spend(((result["exploit"].get(spec) or {}).get("sampled") or {}).get("usage"))
        if "stopped" in result:
            raise SuiteStoppedError(f"perudo 1x{f}: {result['stopped']}")
        rows.append(
            {
                "rules": f"perudo 1x{f}",
                "value": result["value"],
                "budget": result.get("budget", {}).get(spec),
                "exploit": {
                    name: {
                        "exploitability": row["exploitability"],
                        "std_error": (row.get("sampled") or {}).get("std_error"),
                        "usage": (row.get("sampled") or {}).get("usage"),
                    }
                    for name, row in result["exploit"].items()
                },
            }
        )
    return rows


def markdown(spec: str, result: dict[str, Any]) -> str:
    """The suite's results as Markdown tables."""
    lines = [f"## {result['model_name']}", ""]
    if result["ladder"]:
        lines += [
            f"Ladder ({result['rules']}, {result['players']} players; parity "
            f"{1 / result['players']:.3f}):",
            "",
            "| bot | games | model win rate | 95% CI | fallbacks | failed requests | "
            "requests (cached) |",
            "|---|---|---|---|---|---|---|",
        ]
        for row in result["ladder"]:
            u = row["usage"] or {}
            rate = u.get("fallbacks", 0) / max(1, u.get("decisions", 0))
            flag = (
                " (!)" if rate > DEFAULT_FALLBACK_THRESHOLD else ""
            )  # the row measures the fallback
            lines.append(
                f"| {row['bot']} | {row['games']} | {row['win_rate']:.3f}{flag} | "
                f"[{row['ci95'][0]:.3f}, {row['ci95'][1]:.3f}] | "
                f"{u.get('fallbacks', 0)}/{u.get('decisions', 0)} ({100 * rate:.1f}%) | "
                f"{u.get('failed_requests', 0)} | "
                f"{u.get('requests', 0)} ({u.get('cached', 0)}) |"
            )
        lines.append("")
    if result["exploitability"]:
        names = list(result["exploitability"][0]["exploit"])
        lines += [
            "Exact exploitability (2 players, 1 die):",
            "",
            "| rules | " + " | ".join(_short(n) for n in names) + " |",
            "|---|" + "---|" * len(names),
        ]
        for row in result["exploitability"]:
            cells = []
            for name in names:
                e = row["exploit"][name]
                se = f" ± {e['std_error']:.4f}" if e.get("std_error") else ""
                u = e.get("usage") or {}
                fb = ""
                if u:
                    rate = u.get("fallbacks", 0) / max(1, u.get("decisions", 0))
                    mark = " (!)" if rate > DEFAULT_FALLBACK_THRESHOLD else ""
                    fb = f" (fallbacks {100 * rate:.1f}%{mark})"
                cells.append(f"{e['exploitability']:.4f}{se}{fb}")
            lines.append(f"| {row['rules']} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _short(spec: str) -> str:
    return spec.rpartition("?")[0] if spec.startswith("llm:") and "?" in spec else spec


def build_parser() -> argparse.ArgumentParser:
    """The suite's argument parser."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", required=True, help="the llm: (or textarena:) spec")
    parser.add_argument("--out", default="runs/llm_suite", help="results folder")
    add_rule_arguments(parser, players=3, players_help="players of the ladder", rule=True)
    parser.add_argument("--games", type=int, default=100, help="games per bot")
    parser.add_argument("--bots", nargs="+", default=list(BOTS), help="the bots to meet")
    parser.add_argument(
        "--exploit-faces", nargs="*", type=int, default=[4, 6], help="perudo 1xF games to solve"
    )
    parser.add_argument(
        "--max-calls",
        type=int,
        help="most real requests in all (re-prompts and retries included; cached replies "
        "are free): the suite stops when they are spent, and a rerun resumes from the cache",
    )
    parser.add_argument(
        "--dry-run", action="store_true", help="print the exploitability budgets, call nothing"
    )
    parser.add_argument("--skip-ladder", action="store_true", help="only the exploitability")
    parser.add_argument(
        "--no-preflight",
        action="store_true",
        help="skip the request that checks, before the runs, that the endpoint can play",
    )
    return parser


def main(argv: list[str] | None = None) -> int:
    """Runs the suite; see the module docstring."""
    from liars_train.config import parse_rule_overrides

    args = build_parser().parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    spec = with_cache(args.model, out / "cache")
    overrides = parse_rule_overrides(args.rule, what="--rule")
    rules = RuleSet.preset(args.rules, num_players=args.players, **overrides)
    result: dict[str, Any] = {
        "model": spec,
        "model_name": _short(spec),
        "rules": args.rules,
        "players": args.players,
        "ladder": [],
        "exploitability": [],
    }
    if args.dry_run:
        exploitability(spec, [], args.exploit_faces, Budget(0), dry_run=True)
        return 0
    budget = Budget(args.max_calls)
    try:
        if spec.startswith("llm:") and not args.no_preflight:
            from rich.console import Console

            from liars_train.evaluation.cli import run_preflights

            run_preflights([spec], rules, Console(stderr=True))
        if not args.skip_ladder:
            result["ladder"] = ladder(spec, args.bots, rules, args.games, out, budget)
        result["exploitability"] = exploitability(
            spec, args.bots, args.exploit_faces, budget, dry_run=False
        )
    except ValueError as exc:
        print(f"llm_suite: {exc}", file=sys.stderr)
        return 2
    except SuiteStoppedError as exc:
        print(f"llm_suite: stopped: {exc}; rerun to resume from the cache", file=sys.stderr)
        return 4
    tmp = out / "suite.json.tmp"
    tmp.write_text(json.dumps(result, indent=2))
    os.replace(tmp, out / "suite.json")
    print(markdown(spec, result))
    print(f"\nwrote {out / 'suite.json'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
