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
from dataclasses import dataclass
from typing import Any

import torch

from liars_env.agents.policy import PolicyNet
from liars_train.distributed.cluster import require_ray
from liars_train.distributed.league_sync import state_dict_cpu
from liars_train.ppo.evaluate import Evaluation, evaluate_weights
from liars_train.ppo.settings import Args
from liars_train.reports import tqdm_write

__all__ = ["Evaluation", "RemoteEvaluations", "evaluate_weights"]


class RemoteEvaluations:
    """Periodic evaluations in flight (see the module docstring).

    Args:
        args: The run's settings.
    """

    def __init__(self, args: Args) -> None:
        self.ray = require_ray(args.workers)
        self.settings = dataclasses.asdict(args)
        self.timeout = args.ray_timeout
        # no retries of Ray's own: a task lost with its node is run again here, logged
        self.task = self.ray.remote(num_cpus=0, max_retries=0)(evaluate_weights)
        self.pending: list[_Pending] = []

    def submit(self, policy: PolicyNet, update: int, step: int) -> None:
        """Starts evaluating ``policy``'s weights of now (update ``update``, ``step``)."""
        weights = state_dict_cpu(policy)
        self.pending.append(_Pending(self._start(weights, update), update, step, weights))

    def _start(self, weights: dict[str, torch.Tensor], update: int) -> Any:
        return self.task.remote(self.settings, weights, 10_000 + update)

    def done(self, wait: bool = False) -> list[Evaluation]:
        """The evaluations finished so far, oldest first (``wait``: all of them).

        An evaluation lost with its node (or not done within ``ray_timeout`` when
        waited for) is run again once, then skipped; the log says which.
        """
        out = []
        while self.pending:
            job = self.pending[0]
            if not wait and not self.ray.wait([job.ref], timeout=0)[0]:
                break
            try:
                results = self.ray.get(job.ref, timeout=self.timeout)
            except (self.ray.exceptions.RayError, TimeoutError) as exc:
                self.ray.cancel(job.ref, force=True)
                if job.tries < 2:
                    job.tries += 1
                    job.ref = self._start(job.weights, job.update)
                    tqdm_write(
                        f"evaluation of update {job.update} lost ({type(exc).__name__}); run again"
                    )
                    continue
                tqdm_write(
                    f"evaluation of update {job.update} lost again ({type(exc).__name__}); "
                    "skipped (no metrics row for it)"
                )
                self.pending.pop(0)
                continue
            out.append(Evaluation(job.update, job.step, job.weights, results))
            self.pending.pop(0)
        return out

    def close(self) -> None:
        """Drops the evaluations in flight (a stopped run books none of them)."""
        for job in self.pending:
            self.ray.cancel(job.ref, force=True)
        self.pending = []


@dataclass
class _Pending:
    """An evaluation in flight."""

    ref: Any
    update: int
    step: int
    weights: dict[str, torch.Tensor]
    tries: int = 1
