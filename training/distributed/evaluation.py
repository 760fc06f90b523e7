"""Periodic evaluations on a Ray actor, beside training rather than in pauses of it.

With ``workers`` and ``overlap``, the trainer hands each periodic evaluation (the policy's
win rate against every ``eval_opponents`` entry) to one evaluation actor with the weights
of that update, and books the result when it is done, in the order they were asked: the
row of ``metrics.csv`` carries the update and step it measured, and a new best writes the
``best`` checkpoint with the weights that were measured. What the actor runs is
:func:`liars_train.ppo.evaluate.evaluate_weights` (re-exported here); this module is only
its transport.

The actor asks Ray for no CPU of its own (the rollout actors hold one each), so it runs
beside them. It is started with the run, so that its imports overlap the rollout actors'
start, and it serves every evaluation of the run in one warm process: as Ray tasks, each
evaluation started a fresh worker process (Ray ends the idle workers beyond a node's CPUs
within a second), importing torch again, and the run waited for that at its end.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch

from liars_env.agents.policy import PolicyNet
from liars_train.distributed.cluster import require_ray
from liars_train.distributed.league_sync import state_dict_cpu
from liars_train.ppo.evaluate import Evaluation, evaluate_weights
from liars_train.ppo.settings import Args
from liars_train.reports import tqdm_write

__all__ = ["Evaluation", "Evaluator", "RemoteEvaluations", "evaluate_weights"]


class Evaluator:
    """The evaluation actor: runs ``evaluate`` on each call, one call at a time.

    Args:
        evaluate: The evaluation, ``(settings, weights, seed) -> results``
            (:func:`evaluate_weights`; a test passes its own).
    """

    def __init__(self, evaluate: Callable[..., list[dict[str, Any]]]) -> None:
        self.evaluate = evaluate

    def run(
        self, settings: dict[str, Any], weights: dict[str, torch.Tensor], seed: int
    ) -> list[dict[str, Any]]:
        """``evaluate(settings, weights, seed)``."""
        return self.evaluate(settings, weights, seed)


class RemoteEvaluations:
    """Periodic evaluations in flight on one actor (see the module docstring).

    Args:
        args: The run's settings.
        evaluate: What each evaluation runs (:func:`evaluate_weights`).
    """

    def __init__(
        self, args: Args, evaluate: Callable[..., list[dict[str, Any]]] = evaluate_weights
    ) -> None:
        self.ray = require_ray(args.workers)
        self.settings = dataclasses.asdict(args)
        self.timeout = args.ray_timeout
        self.evaluate = evaluate
        # no restarts of Ray's own: an actor lost with its node is replaced here, logged
        self.remote = self.ray.remote(num_cpus=0, max_restarts=0)(Evaluator)
        self.actor = self.remote.remote(evaluate)  # starts now, beside the rollout actors
        self.pending: list[_Pending] = []

    def submit(self, policy: PolicyNet, update: int, step: int) -> None:
        """Starts evaluating ``policy``'s weights of now (update ``update``, ``step``)."""
        job = _Pending(None, update, step, state_dict_cpu(policy))
        self._start(job)
        self.pending.append(job)

    def _start(self, job: _Pending) -> None:
        job.ref = self.actor.run.remote(self.settings, job.weights, 10_000 + job.update)

    def done(self, wait: bool = False) -> list[Evaluation]:
        """The evaluations finished so far, oldest first (``wait``: all of them).

        An evaluation lost with the actor's node (or not done within ``ray_timeout``
        when waited for) is run again once on a new actor, then skipped; the evaluations
        queued behind it on the lost actor are run again there too. The log says which.
        """
        out = []
        while self.pending:
            job = self.pending[0]
            if not wait and not self.ray.wait([job.ref], timeout=0)[0]:
                break
            try:
                results = self.ray.get(job.ref, timeout=self.timeout)
            except (self.ray.exceptions.RayError, TimeoutError) as exc:
                lost = type(exc).__name__
                if job.tries < 2:
                    job.tries += 1
                    tqdm_write(f"evaluation of update {job.update} lost ({lost}); run again")
                else:
                    tqdm_write(
                        f"evaluation of update {job.update} lost again ({lost}); "
                        "skipped (no metrics row for it)"
                    )
                    self.pending.pop(0)
                self._replace_actor(job)
                continue
            out.append(Evaluation(job.update, job.step, job.weights, results))
            self.pending.pop(0)
        return out

    def _replace_actor(self, lost: _Pending) -> None:
        """Ends the actor and starts another, which runs every evaluation in flight again.

        Args:
            lost: The evaluation that failed (already logged).
        """
        self.ray.kill(self.actor, no_restart=True)
        self.actor = self.remote.remote(self.evaluate)
        for job in self.pending:
            self._start(job)
        queued = [str(job.update) for job in self.pending if job is not lost]
        if queued:
            tqdm_write(
                f"evaluations of updates {', '.join(queued)} (queued on the lost actor) run again"
            )

    def close(self) -> None:
        """Ends the actor; the evaluations in flight are dropped (a stopped run books none)."""
        self.ray.kill(self.actor, no_restart=True)
        self.pending = []


@dataclass
class _Pending:
    """An evaluation in flight."""

    ref: Any
    update: int
    step: int
    weights: dict[str, torch.Tensor]
    tries: int = 1
