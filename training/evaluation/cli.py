"""``liars-eval``: the command line of tournaments (arguments, preflight, output, exit status).

Exit status: 0 when the results stand; 2 for bad input or an endpoint that fails its
preflight; 3 when a text agent's row measures the fallback (over
``--fallback-threshold``) and ``--allow-fallbacks`` was not given; 4 when
``--max-calls`` stopped the run early (the results hold the games finished before).
Results go to standard output (``--format table``, ``markdown`` or ``json``), notes,
warnings and the progress bar to standard error.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from liars_env.cli import add_rule_arguments
from liars_train.evaluation.results import DEFAULT_FALLBACK_THRESHOLD

EXIT_BAD_INPUT = 2
"""Bad input, or an endpoint that failed its preflight."""
EXIT_FALLBACKS = 3
"""A text agent's results measure its fallback (and ``--allow-fallbacks`` was not given)."""
EXIT_STOPPED = 4
"""``--max-calls`` stopped the run before its last game."""

SPEC_HELP = (
    "one spec per seat. Bots: random, probabilistic, cautious, bold, bayes, belief, and "
    "NAME:key=value,... (a bot with settings changed); solver (the exact equilibrium of a "
    "small 2-player game); blueprint[:PATH] (a solved 2-player blueprint at any dice count, "
    "e.g. blueprint:blueprints/perudo_2p); checkpoint:PATH (a trained policy); "
    "search:SPEC[?key=value,...] "
    "(SPEC with search at every decision); llm:MODEL[?key=value&...] (a language model "
    "behind an OpenAI-compatible endpoint, e.g. "
    "'llm:qwen2.5:7b?base_url=http://127.0.0.1:8000/v1&cache=runs/cache'; see docs/llm.md); "
    "textarena:CLASS[?key=value&...] (a TextArena agent); MODULE:ATTR (your class or "
    "factory); or an installed 'liars_dice.agents' entry-point name"
)


def build_parser() -> argparse.ArgumentParser:
    """The ``liars-eval`` argument parser."""
    parser = argparse.ArgumentParser(
        prog="liars-eval",
        description="Play a tournament between agents and report win rates with 95% "
        "Wilson intervals, mean places, openskill ratings and head-to-head rates; for "
        "text agents (llm:, textarena:) also their fallbacks, failed requests and tokens.",
        epilog="Exit status: 0 results stand; 2 bad input or a failed preflight; 3 a text "
        "agent's row measures its fallback (see --fallback-threshold, --allow-fallbacks); "
        "4 --max-calls stopped the run early.",
    )
    add_rule_arguments(
        parser, players=None, players_help="players (default: one per agent)", rule=True
    )
    parser.add_argument("--agents", nargs="+", required=True, help=SPEC_HELP)
    parser.add_argument(
        "--games", type=int, default=2000, help="games (rounded up to a multiple of players)"
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--workers",
        type=int,
        default=None,
        help="processes (default: min(4, cores); with llm: agents, the slots the endpoint "
        "reports (llama.cpp's /props), else 1, since a server that answers one request at "
        "a time makes concurrent games queue)",
    )
    parser.add_argument("--out", help="write the results as JSON here")
    parser.add_argument("--plot", help="write a PNG of the win rates here (default: next to --out)")
    parser.add_argument("--no-progress", action="store_true", help="hide the progress bar")
    parser.add_argument(
        "--record",
        metavar="DIR",
        help="write every game to DIR as JSON lines (open one with liars-replay)",
    )
    parser.add_argument(
        "--record-probabilities",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="with --record, also record each move's action probabilities for agents "
        "that expose them (the default); --no-record-probabilities records only the "
        "moves, which is faster",
    )
    add_text_agent_arguments(parser)
    parser.add_argument(
        "--format",
        default="table",
        choices=["table", "markdown", "json"],
        help="how the results print on standard output: rich tables (full width when "
        "not a terminal), GitHub Markdown, or the JSON of --out (default: table)",
    )
    return parser


def add_text_agent_arguments(parser: argparse.ArgumentParser) -> None:
    """The options about text agents that ``liars-eval`` and ``liars-solve`` share."""
    parser.add_argument(
        "--no-preflight",
        action="store_true",
        help="skip the one request per llm: endpoint that checks, before the run, that it "
        "answers with a readable move",
    )
    parser.add_argument(
        "--fallback-threshold",
        type=float,
        default=DEFAULT_FALLBACK_THRESHOLD,
        metavar="SHARE",
        help="a text agent that falls back on more than this share of its decisions is "
        "flagged: its result measures the fallback (default 0.1)",
    )
    parser.add_argument(
        "--allow-fallbacks",
        action="store_true",
        help="exit 0 even when a text agent's result measures its fallback (the warning "
        "still prints)",
    )
    parser.add_argument(
        "--max-calls",
        type=int,
        default=None,
        metavar="N",
        help="most real requests the text agents may send (re-prompts and retries "
        "included; cached replies are free); the run stops cleanly when they are spent, "
        "with what it measured, and a rerun with the same cache= resumes it",
    )


def run_preflights(specs: Sequence[str], rules, err, agents: dict | None = None) -> dict[str, dict]:
    """One preflight request per distinct ``llm:`` endpoint among ``specs``.

    Prints each report's line on ``err``; returns the reports by spec (for the result's
    ``run`` entry). ``agents`` (by spec) are checked in place where given, so that what
    the preflight measured (tokens per character) carries over to the run.

    Raises:
        liars_env.agents.llm.PreflightError: for the first endpoint that cannot play.
    """
    from dataclasses import asdict

    from liars_env.agents import make_agent
    from liars_env.agents.llm import parse_llm_spec, preflight

    out: dict[str, dict] = {}
    seen: set[tuple] = set()
    for spec in dict.fromkeys(specs):
        if not spec.startswith("llm:"):
            continue
        model, settings = parse_llm_spec(spec)
        key = (model, settings.base_url, settings.api_key_env, settings.system)
        if key in seen:
            continue
        seen.add(key)
        agent = (agents or {}).get(spec) or make_agent(spec, rules)
        report = preflight(agent, rules)
        err.print(report.line(), markup=False, highlight=False)
        out[spec] = asdict(report)
    return out


def default_workers(specs: Sequence[str]) -> tuple[int, str]:
    """``--workers``' default for these specs, and why."""
    from liars_env.agents.llm import endpoint_slots, parse_llm_spec
    from liars_train.evaluation.play import is_text_spec

    cores = os.cpu_count() or 1
    if not any(is_text_spec(s) for s in specs):
        return min(4, cores), "min(4, cores)"
    slots = [endpoint_slots(parse_llm_spec(s)[1].base_url) for s in specs if s.startswith("llm:")]
    if slots and all(slots):
        n = max(1, min(min(slots), cores))  # type: ignore[type-var]
        return n, f"the endpoint serves {min(slots)} requests at once"  # type: ignore[type-var]
    return 1, "the endpoint does not report how many requests it serves at once"


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``liars-eval``; returns the exit status (see the module docstring)."""
    from liars_train.config import parse_rule_overrides
    from liars_train.evaluation.formats import (
        format_rate,
        print_json,
        render,
        stderr_console,
        stdout_console,
    )
    from liars_train.evaluation.play import evaluate
    from liars_train.evaluation.provenance import run_info

    args = build_parser().parse_args(argv)
    console, err = stdout_console(), stderr_console()
    try:
        overrides = parse_rule_overrides(args.rule)
        overrides["num_players"] = args.players or len(args.agents)
        from liars_env.rules import resolve_rules

        rules = resolve_rules(args.rules, **overrides)
        if args.max_calls is not None and args.max_calls < 0:
            raise ValueError(f"--max-calls must be 0 or more, got {args.max_calls}")
        preflights = {} if args.no_preflight else run_preflights(args.agents, rules, err)
        workers, why = (args.workers, "--workers") if args.workers else default_workers(args.agents)
        if args.workers is None and workers == 1 and why.startswith("the endpoint"):
            err.print(f"workers: 1 ({why}; --workers N to change)", markup=False)
        result = evaluate(
            rules,
            args.agents,
            args.games,
            seed=args.seed,
            workers=workers,
            progress=not args.no_progress,
            record=args.record,
            record_probabilities=args.record_probabilities,
            max_calls=args.max_calls,
            fallback_threshold=args.fallback_threshold,
        )
    except ValueError as exc:
        err.print(f"liars-eval: {exc}", markup=False, highlight=False)
        return EXIT_BAD_INPUT
    result.run = run_info(
        "liars-eval",
        argv,
        seed=args.seed,
        specs=args.agents,
        extra={
            "workers": workers,
            "max_calls": args.max_calls,
            "fallback_threshold": args.fallback_threshold,
            "allow_fallbacks": args.allow_fallbacks,
            "preflight": preflights if not args.no_preflight else "skipped (--no-preflight)",
        },
    )
    if args.format == "json":
        print_json(result.to_json())
    else:
        render(console, args.format, result.title, *result.rows())
        render(
            console, args.format, "head to head: row ahead of column", *result.head_to_head_rows()
        )
        rate = format_rate(result.decisions, result.seconds, "decisions")
        console.print(
            f"{result.decisions} decisions in {result.seconds:.1f} s ({rate})",
            markup=False,
            highlight=False,
        )
    if args.out:
        out = Path(args.out)
        out.parent.mkdir(parents=True, exist_ok=True)
        tmp = out.with_name(f".{out.name}.tmp")
        tmp.write_text(json.dumps(result.to_json(), indent=2))
        os.replace(tmp, out)
        err.print(f"wrote {out}", markup=False, highlight=False)
    if args.record:
        err.print(f"recorded {result.games} games in {args.record}", markup=False)
    plot = args.plot or (str(Path(args.out).with_suffix(".png")) if args.out else None)
    if plot and result.games:
        err.print(f"wrote {result.plot(plot)}", markup=False, highlight=False)
    for line in result.warnings():
        err.print(line, markup=False, highlight=False)
    if result.stopped:
        err.print(
            f"liars-eval: stopped after {result.games} games: {result.stopped}; the results "
            "hold the games finished before it. Rerun with the same cache= to resume (its "
            "replies cost nothing) and a larger --max-calls.",
            markup=False,
            highlight=False,
        )
        return EXIT_STOPPED
    if result.flagged and not args.allow_fallbacks:
        err.print(
            "liars-eval: exit status 3: a result above measures the fallback; fix the "
            "endpoint, or pass --allow-fallbacks to accept it",
            markup=False,
            highlight=False,
        )
        return EXIT_FALLBACKS
    return 0


if __name__ == "__main__":
    sys.exit(main())
