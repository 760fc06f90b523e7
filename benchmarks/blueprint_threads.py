r"""The blueprint solver on one core and on all of them: CFR+ iterations per second.

Times CFR+ iterations (:class:`liars_env.solver.last_bid.AbstractSolver`) on the first
round of 2-player Perudo, as the shipped recipe solves it (5 dice each, the last 2 bids
remembered: 3,532 nodes, 252 × 252 hands), with numba's threads set to 1 and then to
each count asked, and prints the medians and their ratio to one thread. The threads
change no number: the benchmark checks that every count leaves the same strategies.
The calls pay the next rounds 0 (a timing, not a solve). ``--busy`` measures
everything again with a separate process spinning on one core::

    python benchmarks/blueprint_threads.py                      # 1 thread and all cores
    python benchmarks/blueprint_threads.py --dice 4 --busy      # a smaller round, and busy

Each repeat runs ``--iterations`` CFR+ iterations from the same start; the first repeat
of each count is not timed (it compiles or warms the threads).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

import numba
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from report import busy_core  # noqa: E402

from liars_env.engine import LiarsDiceGame  # noqa: E402
from liars_env.rules import RuleSet  # noqa: E402
from liars_env.solver.best_response import opener_payoff  # noqa: E402
from liars_env.solver.graph import start_state  # noqa: E402
from liars_env.solver.last_bid import AbstractSolver  # noqa: E402
from liars_env.solver.recall_graph import AbstractRound  # noqa: E402


def _measure(graph, m0, threads: int, repeats: int, iterations: int):
    """Seconds per CFR+ iteration for each timed repeat, and the strategies left."""
    numba.set_num_threads(threads)
    seconds = []
    for repeat in range(repeats + 1):
        solver = AbstractSolver(graph, m0)
        t0 = time.perf_counter()
        solver.iterate(iterations)
        if repeat:
            seconds.append((time.perf_counter() - t0) / iterations)
    return seconds, solver.average()


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--dice", type=int, default=5, help="dice per player (default 5)")
    parser.add_argument("--memory", type=int, default=2, help="bids remembered (default 2)")
    parser.add_argument(
        "--threads", type=int, nargs="+", default=[numba.config.NUMBA_NUM_THREADS],
        help="thread counts beside 1 (default: numba's, as many as the cores)",
    )  # fmt: skip
    parser.add_argument("--repeats", type=int, default=3, help="timed repeats (default 3)")
    parser.add_argument("--iterations", type=int, default=2, help="per repeat (default 2)")
    parser.add_argument("--busy", action="store_true", help="also measure with a core busy")
    parser.add_argument("--out", type=Path, help="write the medians here as JSON")
    args = parser.parse_args(argv)

    rules = RuleSet.preset("perudo", num_players=2, dice_per_player=args.dice)
    game = LiarsDiceGame(rules)
    key = start_state(rules)
    t0 = time.perf_counter()
    graph = AbstractRound.build(game, key, args.memory, 0)
    m0 = graph.tree.payoffs(opener_payoff({}))
    print(
        f"round {key.label()}, memory {args.memory}: {len(graph.actor):,} nodes, "
        f"{len(graph.child):,} edges, built in {time.perf_counter() - t0:.0f} s"
    )
    counts = [1, *sorted({t for t in args.threads if t > 1})]
    results: dict[str, dict[str, float]] = {}
    for mode in ["idle", "one core busy"] if args.busy else ["idle"]:
        with busy_core(mode != "idle"):
            medians, first = {}, None
            for threads in counts:
                seconds, average = _measure(graph, m0, threads, args.repeats, args.iterations)
                if first is None:
                    first = average
                same = all(np.array_equal(a, b) for a, b in zip(first, average, strict=True))
                if not same:
                    raise SystemExit(f"{threads} threads changed the strategies")
                medians[f"{threads} thread{'s' if threads > 1 else ''}"] = statistics.median(
                    seconds
                )
        results[mode] = medians
        base = medians["1 thread"]
        print(f"\n{mode}: seconds per CFR+ iteration (median of {args.repeats})")
        for name, value in medians.items():
            print(f"  {name:<12}{value:>8.2f} s{base / value:>8.2f}x")
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(results, indent=2))
    return results


if __name__ == "__main__":
    main()
