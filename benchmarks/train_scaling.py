"""Learner decisions per second of ``liars-train`` at ``workers`` 0, 1, 2, ... in one run.

Each count of rollout actors trains a few PPO updates of the same config (evaluation,
checkpoints and exploiters off) and the steady rate is printed beside the in-process
one (``workers: 0``) with their ratio. One local Ray (127.0.0.1) serves every count. ::

    python benchmarks/train_scaling.py --config configs/perudo_3p.yaml --workers 0 1 2
    python benchmarks/train_scaling.py --busy        # also with one core busy

The rate is :mod:`train_throughput`'s steady rate (the end of the first update to the end
of the last). With ``overlap`` (the default when ``workers > 0``) the actors collect the
next batch while the learner updates, so the rate can pass the in-process ceiling of
``batch / update seconds``; ``--set overlap=false`` measures the actors alone.
"""

from __future__ import annotations

import argparse
import os
import statistics

from report import busy_core
from train_throughput import Timing, measure

from liars_train.distributed import connect


def main() -> None:
    """Entry point."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", default="configs/perudo_3p.yaml")
    parser.add_argument("--workers", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--updates", type=int, default=8, help="PPO updates a run (>= 2)")
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--busy", action="store_true", help="also measure with a core busy")
    parser.add_argument("--set", action="append", default=[], help="key=value for every run")
    ns = parser.parse_args()
    if any(n > 0 for n in ns.workers):
        connect(max(ns.workers))  # one Ray for every count (shut down at exit)
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
