"""Decisions per second of random masked play through the AEC env, vs Shimmy/OpenSpiel.

Every environment is driven by the same loop: ``agent_iter``, ``last``, pick a uniformly
random legal action from the mask, ``step``. Each configuration is timed over several
repeats and the median is printed with the ratio to Shimmy's
``OpenSpielCompatibilityV0`` on OpenSpiel's ``liars_dice`` (2 players, 5 dice) measured
in the same run.

Run: ``python benchmarks/env_throughput.py [--seconds 2] [--repeats 5] [--busy]``;
``--busy`` measures every configuration twice, idle and with a separate process spinning
on one core, and prints both side by side.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable

import numpy as np
from report import busy_core, print_idle_busy_table, print_ratio_table

import liars_env


def play(make_env: Callable, seconds: float, rng: np.random.Generator) -> float:
    """Plays whole games for about ``seconds``; returns decisions per second."""
    env = make_env()
    decisions = 0
    seed = 0
    start = time.perf_counter()
    while time.perf_counter() - start < seconds:
        env.reset(seed=seed)
        seed += 1
        for _agent in env.agent_iter():
            obs, _, terminated, truncated, info = env.last()
            if terminated or truncated:
                env.step(None)
                continue
            mask = obs["action_mask"] if isinstance(obs, dict) else info["action_mask"]
            legal = np.flatnonzero(mask)
            env.step(int(legal[rng.integers(len(legal))]))
            decisions += 1
    return decisions / (time.perf_counter() - start)


def shimmy_env():
    """Shimmy's PettingZoo wrapper around OpenSpiel liars_dice (2 players, 5 dice)."""
    import pyspiel
    from shimmy import OpenSpielCompatibilityV0

    return OpenSpielCompatibilityV0(pyspiel.load_game("liars_dice", {"numdice": 5, "players": 2}))


def main() -> None:
    """Runs the benchmark and prints a table of medians and ratios."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=2.0, help="time per repeat")
    parser.add_argument("--repeats", type=int, default=5, help="repeats per configuration")
    parser.add_argument("--busy", action="store_true", help="also measure with a core busy")
    args = parser.parse_args()
    configs: dict[str, Callable] = {
        "liars_env perudo, 3 players": lambda: liars_env.env("perudo", num_players=3),
        "liars_env perudo, 2 players": lambda: liars_env.env("perudo", num_players=2),
    }
    try:
        shimmy_env()
        configs["shimmy OpenSpiel liars_dice, 2 players"] = shimmy_env
    except ImportError as exc:  # pragma: no cover - optional peer
        print(f"(skipping Shimmy/OpenSpiel: {exc})")
    rng = np.random.default_rng(0)
    loads = [False, True] if args.busy else [False]
    runs: dict[bool, dict[str, list[float]]] = {load: {n: [] for n in configs} for load in loads}
    for _ in range(args.repeats):  # interleave configurations against machine noise
        for load in loads:
            with busy_core(load):
                for name, make in configs.items():
                    runs[load][name].append(play(make, args.seconds, rng))
    peer = "shimmy OpenSpiel liars_dice, 2 players"
    idle = print_ratio_table(runs[False], peer, "environment")
    if args.busy:
        print()
        print_ratio_table(runs[True], peer, "environment, one core busy")
        busy = {name: statistics.median(values) for name, values in runs[True].items()}
        print()
        print_idle_busy_table(idle, busy, "environment")


if __name__ == "__main__":
    main()
