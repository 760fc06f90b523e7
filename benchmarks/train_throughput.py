"""Learner decisions per second of ``liars-train``, for a config and variants of it.

Runs a few PPO updates of each variant (evaluation, checkpoints and exploiters off) and
prints the median over repeats, interleaved so that a noisy machine affects every
variant alike. Example::

    python benchmarks/train_throughput.py --config configs/perudo_3p.yaml
        --variant "belief_features=false" --variant "league=[probabilistic]" --repeats 3

The figure is the steady rate of training: learner decisions per second from the end of
the first update to the end of the last (rollouts and updates), leaving out what a run
does once (loading the compiled engine, the first update's fresh memory, the learning
curve's matplotlib import and the last checkpoint); a run of millions of decisions
spends well under 1% on those. The whole run's rate (start to finish of ``train()``) is
printed beside it, and so is the split of one update's time: the PPO update
(``Trainer._learn``: GAE and the epochs of minibatch forward, backward and Adam steps)
and the rest (rollouts against the league). The update alone bounds the rate:
``batch / update seconds`` is the ceiling the trainer cannot pass with rollouts free.

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
from typing import NamedTuple

from report import busy_core, print_idle_busy_table

from liars_train import ppo
from liars_train.runner import make_trainer


class Timing(NamedTuple):
    """One run's figures (see :func:`measure`)."""

    steady: float
    """Learner decisions/s over updates 2 … N (end of each learning step to the next)."""
    whole: float
    """Learner decisions/s from the start of ``train()`` to its end."""
    update_s: float
    """Median seconds of a PPO update (``Trainer._learn``), the first left out."""
    rollout_s: float
    """Median seconds between one update's end and the next one's start."""
    batch: int
    """Learner decisions per update (``num_envs × num_steps``)."""

    @property
    def ceiling(self) -> float:
        """Learner decisions/s with rollouts free: ``batch ÷ update_s``."""
        return self.batch / self.update_s


def measure(config: str, sets: list[str], updates: int) -> Timing:
    """Learner decisions per second of ``config`` + ``sets``, and where an update goes."""
    if updates < 2:
        raise ValueError(f"updates must be at least 2, got {updates}")
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
        trainer = make_trainer(args)
        starts: list[float] = []
        ends: list[float] = []
        learn = trainer._learn

        def timed_learn(*a, **k):
            starts.append(time.perf_counter())
            out = learn(*a, **k)
            ends.append(time.perf_counter())
            return out

        trainer._learn = timed_learn
        start = time.perf_counter()
        trainer.train()
        whole = trainer.global_step / (time.perf_counter() - start)
        steady = batch * (len(ends) - 1) / (ends[-1] - ends[0])
        update_s = statistics.median(e - s for s, e in zip(starts[1:], ends[1:], strict=True))
        rollout_s = statistics.median(s - e for s, e in zip(starts[1:], ends[:-1], strict=True))
        return Timing(steady, whole, update_s, rollout_s, batch)


def main() -> None:
    """Entry point."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", default="configs/perudo_3p.yaml")
    parser.add_argument("--variant", action="append", default=[], help="key=value ...")
    parser.add_argument("--updates", type=int, default=6, help="PPO updates a run (>= 2)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--busy", action="store_true", help="also measure with a core busy")
    ns = parser.parse_args()
    variants = [[]] + [v.split() for v in ns.variant]
    loads = [False, True] if ns.busy else [False]
    results: dict[tuple[int, bool], list[Timing]] = {
        (i, load): [] for i in range(len(variants)) for load in loads
    }
    for _ in range(ns.repeats):
        for load in loads:
            with busy_core(load):
                for i, sets in enumerate(variants):
                    results[i, load].append(measure(ns.config, sets, ns.updates))
    labels = [" ".join(sets) or f"{ns.config} as is" for sets in variants]

    def median(i: int, load: bool, which: str) -> float:
        return statistics.median(getattr(r, which) for r in results[i, load])

    idle = {labels[i]: median(i, False, "steady") for i in range(len(variants))}
    whole = {labels[i]: median(i, False, "whole") for i in range(len(variants))}
    first = idle[labels[0]]
    print(f"{'variant':60s} {'steady (median)':>16s} {'ratio':>7s} {'whole run':>11s}")
    for label, med in idle.items():
        print(f"{label:60s} {med:16,.0f} {med / first:7.2f} {whole[label]:11,.0f}")
    print()
    print(f"{'variant':60s} {'update s':>9s} {'rollout s':>10s} {'ceiling (update alone)':>23s}")
    for i, label in enumerate(labels):
        update_s, rollout_s = median(i, False, "update_s"), median(i, False, "rollout_s")
        print(f"{label:60s} {update_s:9.3f} {rollout_s:10.3f} {median(i, False, 'ceiling'):23,.0f}")
    if ns.busy:
        busy = {labels[i]: median(i, True, "steady") for i in range(len(variants))}
        print()
        print_idle_busy_table(idle, busy, "variant")


if __name__ == "__main__":
    main()
