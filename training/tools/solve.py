"""``liars-solve``: the exact equilibrium of a small 2-player game, and exact exploitability.

Solves the whole game (every round) with :func:`liars_env.solver.solve`, prints the value
for the first round's opener and the exploitability of the computed strategy, and, for
each ``--exploit`` spec, how much an exact best response gains against that agent.

Example::

    liars-solve --rules perudo --players 2 --rule dice_per_player=1
        --exploit probabilistic belief --out perudo_1d6.json

writes ``perudo_1d6.json``::

    {"rules": {...}, "method": "auto", "value": -0.0556, "exploitability": 0.0,
     "iterations": 0, "seconds": ..., "round_states": 1, "round_values": {...},
     "exploit": {"probabilistic": {"best_response": [..., ...],
                                   "exploitability": ..., ...}, ...}}

Agents that can only be sampled (``llm:MODEL``, whose ``action_probabilities`` would be
a model's answers) are asked ``--samples`` times (default: the spec's ``samples``
setting, 1) at each information set, and their exploitability is that of the empirical
policy, with a bootstrap error bar (:func:`liars_env.solver.exploit_sampled`). Before
any call the budget is printed (information sets × samples, estimated tokens), and
``--max-calls N`` refuses a run that would make more than N calls::

    liars-solve --rules perudo --rule dice_per_player=1 --rule faces=4
        --exploit "llm:qwen2.5:7b?base_url=http://127.0.0.1:8000/v1&cache=runs/cache"
        --max-calls 5000

The presets keep their rules but not their table size: ``--players 2`` and
``--rule dice_per_player=1`` (or ``faces=...``) make the small game; the ``sanford``
family, written for 3–5 players, is allowed at 2 here. Rules too large to solve exit with
status 2 and a message naming the limit.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from liars_env.cli import add_rule_arguments
from liars_env.rules import PRESETS, RuleSet
from liars_train.config import parse_rule_overrides


def build_rules(preset: str, players: int, items: Sequence[str]) -> RuleSet:
    """The rule set of ``--rules``, ``--players`` and ``--rule KEY=VALUE`` items.

    Raises:
        ValueError: for an unknown preset, option or value.

    Example:
        >>> build_rules("perudo", 2, ["dice_per_player=1", "faces=4"]).faces
        4
    """
    if preset not in PRESETS:
        raise ValueError(f"unknown preset {preset!r}; expected one of {', '.join(PRESETS)}")
    overrides = parse_rule_overrides(items, what="--rule")
    overrides["num_players"] = players
    return PRESETS[preset].with_options(**overrides)


def run(
    rules: RuleSet,
    *,
    method: str = "auto",
    iterations: int = 10_000,
    tolerance: float = 1e-4,
    exploit_specs: Sequence[str] = (),
    save: str | None = None,
    progress: Any = None,
    samples: int | None = None,
    max_calls: int | None = None,
    bootstrap: int = 100,
) -> dict[str, Any]:
    """Solves ``rules``, exploits each spec, and returns the JSON-able results.

    Args:
        rules: A 2-player rule set small enough to solve.
        method: The per-round solver (``auto``, ``lp``, ``cfr+``).
        iterations: Most CFR+ iterations per round state.
        tolerance: Target exploitability of CFR+.
        exploit_specs: Agent specs to exploit.
        save: Where to write the strategy (.npz), if anywhere.
        progress: Called with each progress line (the budget among them).
        samples: Answers per information set for sampled agents (default: the agent's
            own ``settings.samples``, else 1).
        max_calls: Refuse (``ValueError``) before any call if the sampled agents would
            be asked more often than this in all.
        bootstrap: Redraws behind a sampled agent's error bar.

    Raises:
        ValueError: for unsupported rules, a bad agent spec, or a budget over
            ``max_calls``.
    """
    from liars_env.agents import make_agent
    from liars_env.solver import SolverAgent, exploit, exploit_sampled, information_sets, solve

    agents = {spec: make_agent(spec, rules, seed=0) for spec in exploit_specs if spec != "solver"}
    solution = solve(
        rules, method=method, iterations=iterations, tolerance=tolerance, progress=progress
    )
    if save:
        solution.save(save)
    out = {**solution.to_dict(), "method": method, "tolerance": tolerance, "exploit": {}}
    trees = solution.trees()
    sampled = {spec: a for spec, a in agents.items() if callable(getattr(a, "sample_moves", None))}
    if sampled:
        budget = sampling_budget(sampled, rules, trees, samples, information_sets)
        out["budget"] = budget
        if progress is not None:
            for spec, row in budget.items():
                progress(
                    f"budget {spec}: {row['information_sets']} information sets x "
                    f"{row['samples']} samples = {row['calls']} calls, about "
                    f"{row['tokens']:,} tokens (at most; cached replies cost nothing)"
                )
        total = sum(row["calls"] for row in budget.values())
        if max_calls is not None and total > max_calls:
            raise ValueError(
                f"the sampled agents would be asked {total} times, over --max-calls "
                f"{max_calls}; raise --max-calls, lower --samples or use smaller rules"
            )
    for spec in exploit_specs:
        agent = SolverAgent(rules, solution=solution) if spec == "solver" else agents[spec]
        if spec in sampled:
            k = out["budget"][spec]["samples"]
            result = exploit_sampled(
                agent, rules, samples=k, trees=trees, bootstrap=bootstrap, progress=progress
            )
            out["exploit"][spec] = result.to_dict()
            if isinstance(getattr(agent, "usage", None), dict):
                out["exploit"][spec]["sampled"]["usage"] = dict(agent.usage)
        else:
            out["exploit"][spec] = exploit(agent, rules, trees=trees).to_dict()
    return out


def sampling_budget(
    agents: dict[str, Any], rules: RuleSet, trees: Any, samples: int | None, count: Any
) -> dict[str, dict[str, int]]:
    """Per sampled agent: information sets, samples, calls and an estimate of the tokens.

    Tokens: per call the prompt of the first information set (about 4 characters a
    token) plus the reply's ``max_tokens``, an upper bound for replies.
    """
    from liars_env.observation import ObservationLayout, view_of

    sets = count(rules, trees)
    tree = next(iter(trees.values()))
    view = view_of(tree.game, ObservationLayout(rules), tree.state(), 0)
    out = {}
    for spec, agent in agents.items():
        settings = getattr(agent, "settings", None)
        k = samples if samples is not None else int(getattr(settings, "samples", 1))
        per_call = agent.tokens_per_call(view) if hasattr(agent, "tokens_per_call") else 0
        out[spec] = {
            "information_sets": sets,
            "samples": k,
            "calls": sets * k,
            "tokens": sets * k * per_call,
        }
    return out


def build_parser() -> argparse.ArgumentParser:
    """The ``liars-solve`` argument parser."""
    parser = argparse.ArgumentParser(
        prog="liars-solve",
        description="Solve a small 2-player game exactly (all rounds) and measure the exact "
        "exploitability of agents.",
    )
    add_rule_arguments(parser, players=2, players_help="players (the solver needs 2)", rule=True)
    parser.add_argument(
        "--method",
        default="auto",
        choices=["auto", "lp", "cfr+"],
        help="per-round solver: exact LP, CFR+, or auto (LP for small rounds; default)",
    )
    parser.add_argument(
        "--iterations", type=int, default=10_000, help="most CFR+ iterations per round state"
    )
    parser.add_argument(
        "--tolerance", type=float, default=1e-4, help="target exploitability (CFR+)"
    )
    parser.add_argument(
        "--exploit",
        nargs="+",
        action="extend",
        default=[],
        metavar="SPEC",
        help="agent specs to exploit (several after one flag, or the flag repeated)",
    )
    parser.add_argument(
        "--by-round",
        action="store_true",
        help="also print, for each exploited agent, the best responder's gain from each "
        "round state on (where the agent can be exploited); the JSON always has it",
    )
    parser.add_argument(
        "--samples",
        type=int,
        help="answers per information set for agents that can only be sampled (llm:); "
        "default: the spec's samples setting, 1",
    )
    parser.add_argument(
        "--max-calls",
        type=int,
        help="refuse to start if the sampled agents would be asked more often than this",
    )
    parser.add_argument(
        "--bootstrap",
        type=int,
        default=100,
        help="bootstrap redraws behind a sampled agent's error bar (default 100)",
    )
    parser.add_argument("--out", help="write the results as JSON here")
    parser.add_argument("--save", help="write the strategy (.npz) here")
    return parser


def table(result: dict[str, Any]):
    """The results as a rich table."""
    from rich.table import Table

    out = Table(title="liars-solve", show_lines=False)
    out.add_column("quantity")
    out.add_column("value", justify="right")
    out.add_row("value (first opener)", f"{result['value']:+.6f}")
    out.add_row("exploitability", f"{result['exploitability']:.2e}")
    out.add_row("method", result["method"])
    out.add_row("CFR+ iterations", str(result["iterations"]))
    out.add_row("round states", str(result["round_states"]))
    out.add_row("seconds", f"{result['seconds']:.2f}")
    for spec, row in result["exploit"].items():
        br0, br1 = row["best_response"]
        sampled = row.get("sampled")
        error = ""
        if sampled:
            error = (
                f" ± {sampled['std_error']:.4f} ({sampled['samples']} samples x "
                f"{sampled['information_sets']} information sets)"
            )
        out.add_row(
            f"exploit {spec}",
            f"{row['exploitability']:.4f}{error} (BR vs seat 0 {br0:+.4f}, seat 1 {br1:+.4f})",
        )
    return out


def round_table(spec: str, result: dict[str, Any]):
    """Where ``spec`` can be exploited, as a rich table.

    Per round state (the first round first): the equilibrium value for the opener and,
    per seat of the agent (one set of columns when the seats agree), the best responder's
    returns as opener and as responder and their sum, its gain over the equilibrium from
    that round on in both roles.
    """
    from rich.table import Table

    rounds = result["exploit"][spec]["rounds"]
    values = result["round_values"]
    first = next(iter(rounds.values()))
    if all(  # the agent plays alike in every seat: one set of columns
        max(abs(a - b) for a, b in zip(first[label], seat_rounds[label], strict=True)) < 1e-12
        for seat_rounds in rounds.values()
        for label in first
    ):
        rounds = {"either": first}
    out = Table(title=f"{spec}: best response by round")
    out.add_column("round")
    out.add_column("equilibrium value", justify="right")
    for seat in rounds:
        for what in ("BR as opener", "BR as responder", "gain"):
            out.add_column(f"seat {seat}: {what}", justify="right")

    def order(label: str) -> tuple[int, str]:
        opener, responder = label.split()[0].split("v")
        return (-(int(opener) + int(responder)), label)

    for label in sorted(values, key=order):
        row = [label, f"{values[label]:+.4f}"]
        for seat_rounds in rounds.values():
            as_opener, as_responder = seat_rounds[label]
            row += [f"{as_opener:+.4f}", f"{as_responder:+.4f}", f"{as_opener + as_responder:.4f}"]
        out.add_row(*row)
    return out


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``liars-solve``."""
    from rich.console import Console

    args = build_parser().parse_args(argv)
    console = Console() if sys.stdout.isatty() else Console(width=120)
    try:
        rules = build_rules(args.rules, args.players, args.rule)
        result = run(
            rules,
            method=args.method,
            iterations=args.iterations,
            tolerance=args.tolerance,
            exploit_specs=args.exploit,
            save=args.save,
            progress=lambda line: console.print(f"  {line}"),
            samples=args.samples,
            max_calls=args.max_calls,
            bootstrap=args.bootstrap,
        )
    except ValueError as exc:
        console.print(f"[red]liars-solve: {exc}[/red]")
        return 2
    console.print(table(result))
    if args.by_round:
        for spec in result["exploit"]:
            console.print(round_table(spec, result))
    if args.out:
        out = Path(args.out)
        out.parent.mkdir(parents=True, exist_ok=True)
        tmp = out.with_suffix(out.suffix + ".tmp")
        tmp.write_text(json.dumps(result, indent=2))
        os.replace(tmp, out)
        console.print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
