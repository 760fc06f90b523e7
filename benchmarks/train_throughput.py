"""Learner decisions per second of ``liars-train``, for a config and variants of it.

Runs a few PPO updates of each variant (evaluation, checkpoints and exploiters off) and
prints the median over repeats, interleaved so that a noisy machine affects every
variant alike. Example::

    python benchmarks/train_throughput.py --config configs/perudo_3p.yaml
        --variant "belief_features=false" --variant "league=[probabilistic]" --repeats 3

Each ``--variant`` is a space-separated list of ``key=value`` settings applied on top of
the config; the config itself is always measured first.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time

from training import ppo


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
    ns = parser.parse_args()
    variants = [[]] + [v.split() for v in ns.variant]
    results: dict[int, list[float]] = {i: [] for i in range(len(variants))}
    for _ in range(ns.repeats):
        for i, sets in enumerate(variants):
            results[i].append(measure(ns.config, sets, ns.updates))
    first = statistics.median(results[0])
    print(f"{'variant':60s} {'decisions/s (median)':>22s} {'ratio':>7s}")
    for i, sets in enumerate(variants):
        med = statistics.median(results[i])
        label = " ".join(sets) or f"{ns.config} as is"
        print(f"{label:60s} {med:22,.0f} {med / first:7.2f}")


if __name__ == "__main__":
    main()
