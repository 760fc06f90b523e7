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

``--against-equilibrium`` also plays the equilibrium against each agent exactly
(:func:`liars_env.solver.head_to_head`): what it takes from the agent, beside what a
best response takes (``exploit[spec].equilibrium`` in the JSON).

Agents that can only be sampled (``llm:MODEL``, whose ``action_probabilities`` would be
a model's answers) are asked ``--samples`` times (default: the spec's ``samples``
setting, 1) at each information set, and their exploitability is that of the empirical
policy, with a bootstrap error bar (:func:`liars_env.solver.exploit_sampled`).

Before the run, one preflight request per ``llm:`` endpoint checks that it answers with
a readable move (``--no-preflight`` skips it; a failure exits with status 2 and names
the endpoint and the likely cause). Then the budget is printed: information sets ×
samples first asks, at most ``1 + retries`` requests each, and the tokens at most
(measured by the preflight's reported usage, or labelled an estimate). ``--max-calls N``
caps the real requests (re-prompts and retries included; cached replies are free): when
they are spent the run stops cleanly, says how far it got and exits with status 4; a
rerun with the same ``cache=`` resumes for free::

    liars-solve --rules perudo --rule dice_per_player=1 --rule faces=4
        --exploit "llm:qwen2.5:7b?base_url=http://127.0.0.1:8000/v1&cache=runs/cache"
        --max-calls 5000

A sampled agent's row shows its fallbacks and failed requests; one that fell back on
more than ``--fallback-threshold`` (0.1) of its answers is flagged ``(!)``: its figure is
the fallback's exploitability. The command then warns and exits with status 3 unless
``--allow-fallbacks``. The JSON carries the same (``exploit[spec].sampled``: ``usage``,
``fallback_rate``, ``measures_fallback``) and the run's command, versions, seeds and
endpoint settings (``run``; never a key).

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
from liars_train.evaluation.cli import add_text_agent_arguments
from liars_train.evaluation.results import DEFAULT_FALLBACK_THRESHOLD


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
    fallback_threshold: float = DEFAULT_FALLBACK_THRESHOLD,
    agents: dict[str, Any] | None = None,
    against_equilibrium: bool = False,
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
        max_calls: Most real requests the sampled agents may send in all (re-prompts
            and retries included; cached replies are free). When spent, the run stops:
            the result's ``stopped`` says why, and the agent's entry holds what it spent.
        bootstrap: Redraws behind a sampled agent's error bar.
        fallback_threshold: A sampled agent that fell back on more than this share of
            its answers is flagged (``sampled.measures_fallback``).
        agents: Agents already built for some specs (the preflight's), by spec.
        against_equilibrium: Also the exact result of the equilibrium against each agent
            that is not sampled (:func:`liars_env.solver.head_to_head`, in
            ``exploit[spec]["equilibrium"]``): what it takes from the agent, beside what a
            best response takes. Each agent's reads are shared by the two.

    Raises:
        ValueError: for unsupported rules, a bad agent spec, or a bad ``max_calls`` or
            ``fallback_threshold``.
    """
    from liars_env.agents import make_agent
    from liars_env.agents.text_agent import BudgetExhaustedError, RequestBudget
    from liars_env.solver import (
        SolverAgent,
        exploit,
        exploit_sampled,
        head_to_head,
        information_sets,
        solve,
    )

    if max_calls is not None and (type(max_calls) is not int or max_calls < 0):
        raise ValueError(f"max_calls must be a non-negative int or None, got {max_calls!r}")
    if not 0.0 <= fallback_threshold <= 1.0:
        raise ValueError(
            f"the fallback threshold must lie in [0, 1] (a share of decisions), got "
            f"{fallback_threshold!r}"
        )
    built = dict(agents or {})
    agents = {
        spec: built.get(spec) or make_agent(spec, rules, seed=0)
        for spec in exploit_specs
        if spec != "solver"
    }
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
                progress(budget_line(spec, row))
        limit = RequestBudget(max_calls) if max_calls is not None else None
        for agent in sampled.values():
            if hasattr(agent, "budget"):
                agent.budget = limit
    for spec in exploit_specs:
        agent = SolverAgent(rules, solution=solution) if spec == "solver" else agents[spec]
        if spec in sampled:
            k = out["budget"][spec]["samples"]
            try:
                result = exploit_sampled(
                    agent, rules, samples=k, trees=trees, bootstrap=bootstrap, progress=progress
                )
            except BudgetExhaustedError as exc:
                out["stopped"] = str(exc)
                usage = dict(getattr(agent, "usage", {}) or {})
                out["exploit"][spec] = {
                    "stopped": str(exc),
                    "sampled": {**fallback_summary(usage, fallback_threshold), "usage": usage},
                }
                break
            out["exploit"][spec] = result.to_dict()
            usage = getattr(agent, "usage", None)
            if isinstance(usage, dict):
                out["exploit"][spec]["sampled"].update(
                    fallback_summary(usage, fallback_threshold), usage=dict(usage)
                )
        else:
            reads: dict = {}  # with --against-equilibrium, the agent is read once for both
            out["exploit"][spec] = exploit(agent, rules, trees=trees, reads=reads).to_dict()
            if against_equilibrium:
                equilibrium = SolverAgent(rules, solution=solution)
                result = head_to_head(equilibrium, agent, rules, trees=trees, reads=reads)
                out["exploit"][spec]["equilibrium"] = result.to_dict()
    out["fallback_threshold"] = fallback_threshold
    return out


def fallback_summary(usage: dict[str, int], threshold: float) -> dict[str, Any]:
    """A text agent's fallbacks, failed requests and whether its result measures the fallback."""
    decisions = usage.get("decisions", 0)
    rate = usage.get("fallbacks", 0) / decisions if decisions else 0.0
    return {
        "decisions": decisions,
        "fallbacks": usage.get("fallbacks", 0),
        "fallback_rate": rate,
        "failed_requests": usage.get("failed_requests", 0),
        "measures_fallback": rate > threshold,
    }


def budget_line(spec: str, row: dict[str, Any]) -> str:
    """The budget of one sampled agent as one line."""
    tokens = (
        "measured from the server's reported usage"
        if row["tokens_source"] == "measured"
        else "an estimate: the server has reported no usage yet"
    )
    return (
        f"budget {spec}: {row['information_sets']} information sets x {row['samples']} "
        f"samples = {row['first_asks']} first asks; at most {row['calls']} calls with "
        f"{row['retries']} re-prompts each, and about {row['tokens']:,} tokens at most "
        f"({tokens}); cached replies cost nothing"
    )


def sampling_budget(
    agents: dict[str, Any], rules: RuleSet, trees: Any, samples: int | None, count: Any
) -> dict[str, dict[str, Any]]:
    """Per sampled agent: information sets, samples, first asks, calls and tokens at most.

    ``calls`` is first asks × (1 + ``retries``): every answer may take every re-prompt
    (retries of failed requests come on top, and count against ``--max-calls``).
    ``tokens`` is per first ask the agent's ``tokens_per_decision`` at the first
    information set (re-prompts included; its ``tokens_per_call`` if it has only that),
    ``tokens_source`` whether the prompt's tokens were measured or estimated.
    """
    from liars_env.observation import ObservationLayout, view_of

    sets = count(rules, trees)
    tree = next(iter(trees.values()))
    view = view_of(tree.game, ObservationLayout(rules), tree.state(), 0)
    out = {}
    for spec, agent in agents.items():
        settings = getattr(agent, "settings", None)
        k = samples if samples is not None else int(getattr(settings, "samples", 1))
        retries = int(getattr(agent, "retries", 0))
        if hasattr(agent, "tokens_per_decision"):
            per_ask = agent.tokens_per_decision(view)
        else:
            per_ask = agent.tokens_per_call(view) if hasattr(agent, "tokens_per_call") else 0
        out[spec] = {
            "information_sets": sets,
            "samples": k,
            "first_asks": sets * k,
            "retries": retries,
            "calls": sets * k * (1 + retries),
            "tokens": sets * k * per_ask,
            "tokens_source": getattr(agent, "token_source", "estimate"),
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
        "--against-equilibrium",
        action="store_true",
        help="also play the equilibrium against each exploited agent exactly: what it "
        "takes from the agent, beside what a best response takes (not for sampled llm: "
        "agents)",
    )
    parser.add_argument(
        "--samples",
        type=int,
        help="answers per information set for agents that can only be sampled (llm:); "
        "default: the spec's samples setting, 1",
    )
    parser.add_argument(
        "--bootstrap",
        type=int,
        default=100,
        help="bootstrap redraws behind a sampled agent's error bar (default 100)",
    )
    parser.add_argument("--out", help="write the results as JSON here")
    parser.add_argument("--save", help="write the strategy (.npz) here")
    add_text_agent_arguments(parser)
    parser.add_argument(
        "--format",
        default="table",
        choices=["table", "markdown", "json"],
        help="how the results print on standard output: a rich table (full width when "
        "not a terminal), GitHub Markdown, or the JSON of --out (default: table)",
    )
    return parser


def rows(result: dict[str, Any]) -> tuple[list[str], list[list[str]]]:
    """The results as headers and rows of text (what every format prints).

    A sampled agent's fallbacks and failed requests get a row of their own; one whose
    result measures the fallback is marked ``(!)``.
    """
    from liars_train.evaluation.formats import number

    out = [
        ["value (first opener)", number(result["value"], "+.6f")],
        ["exploitability", number(result["exploitability"], ".2e")],
        ["method", result["method"]],
        ["CFR+ iterations", str(result["iterations"])],
        ["round states", str(result["round_states"])],
        ["seconds", f"{result['seconds']:.2f}"],
    ]
    for spec, row in result["exploit"].items():
        sampled = row.get("sampled")
        flag = " (!)" if sampled and sampled.get("measures_fallback") else ""
        if "stopped" in row:
            out.append([f"exploit {spec}", f"not measured: {row['stopped']}"])
        else:
            br0, br1 = row["best_response"]
            error = ""
            if sampled:
                error = (
                    f" ± {number(sampled['std_error'], '.4f')} ({sampled['samples']} samples x "
                    f"{sampled['information_sets']} information sets)"
                )
            out.append(
                [
                    f"exploit {spec}{flag}",
                    f"{number(row['exploitability'], '.4f')}{error} (BR vs seat 0 "
                    f"{number(br0, '+.4f')}, seat 1 {number(br1, '+.4f')})",
                ]
            )
        if "equilibrium" in row:
            eq = row["equilibrium"]
            out.append(
                [
                    f"  equilibrium vs {spec}",
                    f"{number(eq['mean'], '+.4f')} (win rate {number(eq['win_rate'], '.4f')}; "
                    f"seat 0 {number(eq['payoff'][0], '+.4f')}, "
                    f"seat 1 {number(eq['payoff'][1], '+.4f')})",
                ]
            )
        if sampled and "fallbacks" in sampled:
            out.append(
                [
                    f"  fallbacks {spec}{flag}",
                    f"{sampled['fallbacks']}/{sampled['decisions']} "
                    f"({100 * sampled['fallback_rate']:.1f}%), "
                    f"{sampled['failed_requests']} failed requests",
                ]
            )
    return ["quantity", "value"], out


def warnings(result: dict[str, Any]) -> list[str]:
    """One line per sampled agent whose result measures the fallback."""
    lines = []
    threshold = result.get("fallback_threshold", DEFAULT_FALLBACK_THRESHOLD)
    for spec, row in result["exploit"].items():
        sampled = row.get("sampled") or {}
        if sampled.get("measures_fallback"):
            lines.append(
                f"warning: {spec} fell back on {sampled['fallbacks']} of its "
                f"{sampled['decisions']} answers ({100 * sampled['fallback_rate']:.1f}%, over "
                f"the threshold of {100 * threshold:g}%; {sampled['failed_requests']} failed "
                "requests): its exploitability (!) is the fallback's, not the agent's"
            )
    return lines


def table(result: dict[str, Any]):
    """The results as a rich table."""
    from liars_train.evaluation.formats import rich_table

    return rich_table("liars-solve", *rows(result))


def round_table(spec: str, result: dict[str, Any]):
    """Where ``spec`` can be exploited, as a rich table.

    Per round state (the first round first): the equilibrium value for the opener and,
    per seat of the agent (one set of columns when the seats agree), the best responder's
    returns as opener and as responder and their sum, its gain over the equilibrium from
    that round on in both roles.
    """
    from rich.table import Table

    from liars_train.evaluation.formats import number

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
        row = [label, number(values[label], "+.4f")]
        for seat_rounds in rounds.values():
            as_opener, as_responder = seat_rounds[label]
            row += [
                number(as_opener, "+.4f"),
                number(as_responder, "+.4f"),
                number(as_opener + as_responder, ".4f"),
            ]
        out.add_row(*row)
    return out


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``liars-solve``.

    Exit status: 0; 2 for bad input or a failed preflight; 3 when a sampled agent's
    result measures its fallback (without ``--allow-fallbacks``); 4 when ``--max-calls``
    stopped the run.
    """
    from liars_train.evaluation.cli import (
        EXIT_BAD_INPUT,
        EXIT_FALLBACKS,
        EXIT_STOPPED,
        run_preflights,
    )
    from liars_train.evaluation.formats import (
        print_json,
        render,
        stderr_console,
        stdout_console,
    )
    from liars_train.evaluation.provenance import run_info

    args = build_parser().parse_args(argv)
    console, err = stdout_console(), stderr_console()
    preflights: dict[str, Any] = {}
    try:
        rules = build_rules(args.rules, args.players, args.rule)
        agents = _built_agents(args.exploit, rules)
        if not args.no_preflight:
            preflights = run_preflights(args.exploit, rules, err, agents)
        result = run(
            rules,
            method=args.method,
            iterations=args.iterations,
            tolerance=args.tolerance,
            exploit_specs=args.exploit,
            save=args.save,
            progress=lambda line: err.print(f"  {line}", markup=False, highlight=False),
            samples=args.samples,
            max_calls=args.max_calls,
            bootstrap=args.bootstrap,
            fallback_threshold=args.fallback_threshold,
            agents=agents,
            against_equilibrium=args.against_equilibrium,
        )
    except ValueError as exc:
        err.print(f"liars-solve: {exc}", markup=False, highlight=False)
        return EXIT_BAD_INPUT
    result["run"] = run_info(
        "liars-solve",
        argv,
        seed=0,
        specs=args.exploit,
        extra={
            "max_calls": args.max_calls,
            "allow_fallbacks": args.allow_fallbacks,
            "preflight": preflights if not args.no_preflight else "skipped (--no-preflight)",
        },
    )
    if args.format == "json":
        print_json(result)
    else:
        render(console, args.format, "liars-solve", *rows(result))
        if args.by_round:
            for spec in result["exploit"]:
                if "rounds" in result["exploit"][spec]:
                    console.print(round_table(spec, result))
    if args.out:
        out = Path(args.out)
        out.parent.mkdir(parents=True, exist_ok=True)
        tmp = out.with_name(f".{out.name}.tmp")
        tmp.write_text(json.dumps(result, indent=2))
        os.replace(tmp, out)
        err.print(f"wrote {out}", markup=False, highlight=False)
    for line in warnings(result):
        err.print(line, markup=False, highlight=False)
    if "stopped" in result:
        err.print(
            f"liars-solve: stopped: {result['stopped']}; rerun with the same cache= to "
            "resume (its replies cost nothing) and a larger --max-calls",
            markup=False,
            highlight=False,
        )
        return EXIT_STOPPED
    if warnings(result) and not args.allow_fallbacks:
        err.print(
            "liars-solve: exit status 3: a result above measures the fallback; fix the "
            "endpoint, or pass --allow-fallbacks to accept it",
            markup=False,
            highlight=False,
        )
        return EXIT_FALLBACKS
    return 0


def _built_agents(specs: Sequence[str], rules: RuleSet) -> dict[str, Any]:
    """The agents of the text specs, built once (the preflight's measures carry over)."""
    from liars_env.agents import make_agent

    return {s: make_agent(s, rules, seed=0) for s in dict.fromkeys(specs) if s.startswith("llm:")}


if __name__ == "__main__":
    sys.exit(main())
