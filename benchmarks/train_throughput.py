"""Learner decisions per second of ``liars-train``, for a config and variants of it.

Runs a few PPO updates of each variant (evaluation, checkpoints and exploiters off) and
prints the median over repeats, interleaved so that a noisy machine affects every
variant alike. Example::

    python benchmarks/train_throughput.py --config configs/perudo_3p.yaml
        --variant "belief_features=false" --variant "league=[probabilistic]" --repeats 3

Each ``--variant`` is a space-separated list of ``key=value`` settings applied on top of
the config; the config itself is always measured first. ``--busy`` measures everything
twice, idle and with a separate process spinning on one core, e.g. the default threads
against torch's: ``--variant "torch_threads=0" --busy``.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time

from report import busy_core, print_idle_busy_table

from liars_train import ppo


def measure(config: str, sets: list[str], updates: int) -> float:
    """Learner decisions per second over ``updates`` PPO updates of ``config`` + ``sets``."""
    with tempfile.TemporaryDirectory() as runs:
        base = ppo.load_args(config, [f"runs_dir={runs}"])
        batch = base.num_envs * base.num_steps
        args = ppo.load_args(
            config,
            [
                f"runs_dir={runs}",
                "run_name=bench",
                f"total_steps={batch * updates}",
                "eval_every=0",
                "eval_opponents=[]",
                "final_eval_games=0",
                "checkpoint_every=1000000",
                "exploiter_every=0",
                "progress=false",
                *sets,
            ],
        )
        trainer = ppo.Trainer(args)
        start = time.perf_counter()
        trainer.train()
        return trainer.global_step / (time.perf_counter() - start)


def main() -> None:
    """Entry point."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", default="configs/perudo_3p.yaml")
    parser.add_argument("--variant", action="append", default=[], help="key=value ...")
    parser.add_argument("--updates", type=int, default=6)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--busy", action="store_true", help="also measure with a core busy")
    ns = parser.parse_args()
    variants = [[]] + [v.split() for v in ns.variant]
    loads = [False, True] if ns.busy else [False]
    results = {(i, load): [] for i in range(len(variants)) for load in loads}
    for _ in range(ns.repeats):
        for load in loads:
            with busy_core(load):
                for i, sets in enumerate(variants):
                    results[i, load].append(measure(ns.config, sets, ns.updates))
    labels = [" ".join(sets) or f"{ns.config} as is" for sets in variants]
    idle = {labels[i]: statistics.median(results[i, False]) for i in range(len(variants))}
    first = idle[labels[0]]
    print(f"{'variant':60s} {'decisions/s (median)':>22s} {'ratio':>7s}")
    for label, med in idle.items():
        print(f"{label:60s} {med:22,.0f} {med / first:7.2f}")
    if ns.busy:
        busy = {labels[i]: statistics.median(results[i, True]) for i in range(len(variants))}
        print()
        print_idle_busy_table(idle, busy, "variant")


if __name__ == "__main__":
    main()
