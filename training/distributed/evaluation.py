"""Periodic evaluations as Ray tasks, beside training rather than in pauses of it.

With ``workers`` and ``overlap``, the trainer hands each periodic evaluation (the policy's
win rate against every ``eval_opponents`` entry) to a Ray task with the weights of that
update, and books the result when it is done, in the order they were asked: the row of
``metrics.csv`` carries the update and step it measured, and a new best writes the
``best`` checkpoint with the weights that were measured. What a task runs is
:func:`liars_train.ppo.evaluate.evaluate_weights` (re-exported here); this module is only
its transport. The tasks ask Ray for no CPU
of their own (the rollout actors hold one each), so they run beside them.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import torch

from liars_env.agents.policy import PolicyNet
from liars_train.distributed.cluster import require_ray
from liars_train.distributed.league_sync import state_dict_cpu
from liars_train.ppo.evaluate import Evaluation, evaluate_weights
from liars_train.ppo.settings import Args

__all__ = ["Evaluation", "RemoteEvaluations", "evaluate_weights"]


class RemoteEvaluations:
    """Periodic evaluations in flight (see the module docstring).

    Args:
        args: The run's settings.
    """

    def __init__(self, args: Args) -> None:
        self.ray = require_ray(args.workers)
        self.settings = dataclasses.asdict(args)
        self.task = self.ray.remote(num_cpus=0)(evaluate_weights)
        self.pending: list[tuple[Any, int, int, dict[str, torch.Tensor]]] = []

    def submit(self, policy: PolicyNet, update: int, step: int) -> None:
        """Starts evaluating ``policy``'s weights of now (update ``update``, ``step``)."""
        weights = state_dict_cpu(policy)
        ref = self.task.remote(self.settings, weights, 10_000 + update)
        self.pending.append((ref, update, step, weights))

    def done(self, wait: bool = False) -> list[Evaluation]:
        """The evaluations finished so far, oldest first (``wait``: all of them)."""
        out = []
        while self.pending:
            ref, update, step, weights = self.pending[0]
            if not wait and not self.ray.wait([ref], timeout=0)[0]:
                break
            out.append(Evaluation(update, step, weights, self.ray.get(ref)))
            self.pending.pop(0)
        return out

    def close(self) -> None:
        """Drops the evaluations in flight (a stopped run books none of them)."""
        for ref, *_ in self.pending:
            self.ray.cancel(ref)
        self.pending = []
