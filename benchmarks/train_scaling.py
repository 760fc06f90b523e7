"""Learner decisions per second of ``liars-train`` at ``workers`` 0, 1, 2, ... in one run.

Each count of rollout actors trains a few PPO updates of the same config (evaluation,
checkpoints and exploiters off) and the steady rate is printed beside the in-process
one (``workers: 0``) with their ratio. One local Ray (127.0.0.1) serves every count. ::

    python benchmarks/train_scaling.py --config configs/perudo_3p.yaml --workers 0 1 2
    python benchmarks/train_scaling.py --busy        # also with one core busy
    python benchmarks/train_scaling.py --rllib 5     # and the RLlib backend, same game
    python benchmarks/train_scaling.py --workers 0 2 --updates 0 --quickstart

The rate is :mod:`train_throughput`'s steady rate (the end of the first update to the end
of the last). With ``overlap`` (the default when ``workers > 0``) the actors collect the
next batch while the learner updates, so the rate can pass the in-process ceiling of
``batch / update seconds``; ``--set overlap=false`` measures the actors alone.

``--rllib N`` adds the RLlib backend (``liars-train --backend rllib``) on
``configs/rllib_perudo_3p.yaml``, the same game, over N iterations: its steady rate
counts RLlib's environment steps, every seat's moves (about three for each of the
learner's in a 3-player game).

``--quickstart`` trains ``configs/quickstart.yaml`` to its end at ``workers`` 0 and at the
largest count of ``--workers``, and prints each run's training seconds beside its final
table (1000 games against each bot, with 95% intervals): the time to the quickstart's
final strength, and whether the faster run gets there.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import statistics
import tempfile
import time

from report import busy_core
from train_throughput import Timing, measure

from liars_train import ppo
from liars_train.distributed import connect
from liars_train.runner import make_trainer


def rllib_rate(config: str, iterations: int) -> float:
    """The RLlib backend's steady environment steps per second over ``iterations``.

    Steps (every seat's moves) of iterations 2 … N over their seconds; the first, which
    builds the learner's first batch, is left out as :func:`measure` leaves out the
    first update.
    """
    from liars_train import rllib
    from liars_train.config import load_settings

    if iterations < 2:
        raise ValueError(f"--rllib needs at least 2 iterations, got {iterations}")
    with tempfile.TemporaryDirectory() as runs:
        args = load_settings(rllib.RLlibArgs, config, [f"runs_dir={runs}"])
        rllib.start_ray()
        algo = rllib.build_algorithm_config(args).build_algo()
        try:
            steps, seconds = [], []
            for _ in range(iterations):
                start = time.perf_counter()
                result = algo.train()
                seconds.append(time.perf_counter() - start)
                steps.append(result["env_runners"]["num_env_steps_sampled_lifetime"])
        finally:
            algo.stop()
    return (steps[-1] - steps[0]) / sum(seconds[1:])


def quickstart(config: str, workers: int) -> dict:
    """Trains ``config`` to its end with ``workers``; its training seconds and final table."""
    with tempfile.TemporaryDirectory() as runs:
        args = ppo.load_args(config, [f"runs_dir={runs}", f"workers={workers}", "progress=false"])
        # the final table is played after the clock stops, without the shipped comparison
        trainer = make_trainer(dataclasses.replace(args, final_eval_games=0))
        start = time.perf_counter()
        trainer.train()  # to total_steps, its last evaluation booked
        seconds = time.perf_counter() - start
        table = ppo.evaluate.final_table(
            trainer.policy,
            trainer.rules,
            dataclasses.replace(args, compare_checkpoint=""),
            trainer.run_dir,
            "cpu",
            args.torch_threads,
        )
    return {"seconds": seconds, "steps": trainer.global_step, "rows": table["rows"]}


def print_quickstart(runs: dict[int, dict]) -> None:
    """Each quickstart run's seconds and final win rates, side by side."""
    counts = sorted(runs)
    print()
    print("time to the quickstart's final strength (training seconds; final table)")
    head = " ".join(f"{f'workers {n}':>22s}" for n in counts)
    print(f"{'':16s} {head}")
    seconds = " ".join(f"{runs[n]['seconds']:22.0f}" for n in counts)
    print(f"{'seconds':16s} {seconds}")
    ratio = " ".join(f"{runs[counts[0]]['seconds'] / runs[n]['seconds']:21.2f}x" for n in counts)
    print(f"{'speed-up':16s} {ratio}")
    for i, row in enumerate(runs[counts[0]]["rows"]):
        cells = []
        for n in counts:
            other = runs[n]["rows"][i]
            lo, hi = other["ci95"]
            cells.append(f"{other['win_rate']:.3f} [{lo:.3f}, {hi:.3f}]".rjust(22))
        print(f"{'vs ' + row['bot']:16s} {' '.join(cells)}")


def main() -> None:
    """Entry point."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", default="configs/perudo_3p.yaml")
    parser.add_argument("--workers", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument(
        "--updates", type=int, default=8, help="PPO updates a run (>= 2; 0: no rate table)"
    )
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--busy", action="store_true", help="also measure with a core busy")
    parser.add_argument("--set", action="append", default=[], help="key=value for every run")
    parser.add_argument(
        "--rllib", type=int, default=0, metavar="N", help="also RLlib's rate over N iterations"
    )
    parser.add_argument("--rllib-config", default="configs/rllib_perudo_3p.yaml")
    parser.add_argument(
        "--quickstart",
        action="store_true",
        help="also train the quickstart to its end at workers 0 and max(--workers)",
    )
    parser.add_argument("--quickstart-config", default="configs/quickstart.yaml")
    ns = parser.parse_args()
    if any(n > 0 for n in ns.workers):
        connect(max(ns.workers))  # one Ray for every count (shut down at exit)
    if ns.updates:  # --updates 0: only --rllib and --quickstart
        print_rates(ns)
    if ns.rllib:
        rate = rllib_rate(ns.rllib_config, ns.rllib)
        print(f"\nRLlib backend, {ns.rllib_config}, {ns.rllib} iterations: {rate:,.0f} env steps/s")
        print("(every seat's moves; the rates above count the learner's decisions only)")
    if ns.quickstart:
        counts = sorted({0, max(ns.workers)})
        print_quickstart({n: quickstart(ns.quickstart_config, n) for n in counts})


def print_rates(ns: argparse.Namespace) -> None:
    """The steady rate at each count of ``--workers`` (idle, and busy with ``--busy``)."""
    loads = [False, True] if ns.busy else [False]
    results: dict[tuple[int, bool], list[Timing]] = {(n, b): [] for n in ns.workers for b in loads}
    for _ in range(ns.repeats):
        for load in loads:
            with busy_core(load):
                for n in ns.workers:
                    sets = [*ns.set, f"workers={n}"]
                    results[n, load].append(measure(ns.config, sets, ns.updates))
    print(f"{ns.config}, {os.cpu_count()} CPUs, {ns.updates} updates, {ns.repeats} repeat(s)")
    print(f"{'workers':>8s} {'load':>10s} {'steady/s':>10s} {'ratio':>7s} {'whole/s':>9s}")
    for load in loads:
        first = None
        for n in ns.workers:
            steady = statistics.median(r.steady for r in results[n, load])
            whole = statistics.median(r.whole for r in results[n, load])
            first = first or steady
            label = "1 busy" if load else "idle"
            print(f"{n:8d} {label:>10s} {steady:10,.0f} {steady / first:6.2f}x {whole:9,.0f}")


if __name__ == "__main__":
    main()
