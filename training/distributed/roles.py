"""The trainer's roles on Ray (:class:`OnRay`): what ``workers`` > 0 builds.

The Ray side of :class:`~liars_train.ppo.roles.Roles`: rollout actors
(:class:`~liars_train.distributed.rollouts.RemoteRollouts`) always; with ``overlap``
(the default) evaluations on an actor and the exploiter on another, beside
training; without it both run in the driver, in order, as in one process (so
``workers: 1`` writes the in-process run's checkpoints bit for bit).
"""

from __future__ import annotations

from liars_train.distributed.evaluation import RemoteEvaluations
from liars_train.distributed.exploiters import RemoteExploiter
from liars_train.distributed.rollouts import RemoteRollouts
from liars_train.ppo.evaluate import LocalEvaluations
from liars_train.ppo.exploiters import LocalExploiter
from liars_train.ppo.roles import (
    EvaluationService,
    ExploiterTrainer,
    RolloutSource,
    RunContext,
)


class OnRay:
    """Rollout actors, and with ``overlap`` evaluations and exploiters beside training.

    Ray is started (or joined, where ``RAY_ADDRESS`` says so) by :meth:`rollouts`, the
    first role a trainer builds, before it writes anything.
    """

    def rollouts(self, ctx: RunContext) -> RolloutSource:
        """``workers`` rollout actors (:class:`RemoteRollouts`)."""
        return RemoteRollouts(ctx.args, ctx.league, ctx.generator, ctx.device)

    def evaluations(self, ctx: RunContext) -> EvaluationService:
        """An actor of their own with ``overlap``; in the driver, in order, without."""
        if ctx.args.overlap:
            return RemoteEvaluations(ctx.args)
        return LocalEvaluations(ctx.args, ctx.rules, ctx.threads)

    def exploiter(self, ctx: RunContext) -> ExploiterTrainer:
        """An actor of its own with ``overlap``; in the driver, in order, without."""
        if ctx.args.overlap and ctx.args.exploiter_every:
            return RemoteExploiter(ctx.args)
        return LocalExploiter(ctx.train_exploiter)
