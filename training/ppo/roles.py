"""The trainer's roles as protocols, and the in-process set of them (:class:`InProcess`).

The training loop (:class:`~liars_train.ppo.trainer.Trainer`) uses three roles and nothing
else of where they run:

- a :class:`RolloutSource` collects batches of learner decisions with the weights of now;
- an :class:`EvaluationService` measures the policy against the bots, now or beside
  training, and hands back what finished;
- an :class:`ExploiterTrainer` trains a best response to the frozen main policy.

A :class:`Roles` builds the three for a run, once, where the run is built (Sample
Factory's serial and parallel runners): :class:`InProcess` here (every role in this
process, the run of ``workers: 0``), and :class:`~liars_train.distributed.roles.OnRay` in
:mod:`liars_train.distributed` (rollout actors, evaluation tasks, an exploiter actor).
:func:`liars_train.runner.roles_for` picks one from the settings.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

import numpy as np
import torch

from liars_env.agents.policy import PolicyNet
from liars_env.batched import BatchedEnv
from liars_env.rules import RuleSet
from liars_train.league import League
from liars_train.ppo.evaluate import Evaluation, LocalEvaluations
from liars_train.ppo.exploiters import ExploiterResult, LocalExploiter
from liars_train.ppo.rollout import Batch, Rollout
from liars_train.ppo.settings import Args

__all__ = [
    "Evaluation",
    "EvaluationService",
    "ExploiterResult",
    "ExploiterTrainer",
    "InProcess",
    "Roles",
    "RolloutSource",
    "RunContext",
]


@runtime_checkable
class RolloutSource(Protocol):
    """Collects the learner's batches (:class:`~liars_train.ppo.rollout.Rollout` in-process)."""

    lag: int
    """Updates between the weights that played a batch and the learner of now (0 or 1)."""

    def start(self, policy: PolicyNet) -> None:
        """New games in every slot (called once, before the first :meth:`collect`)."""

    def collect(self, policy: PolicyNet, num_steps: int, teaching: float = 0.0) -> Batch:
        """A batch of ``num_steps`` learner decisions in every game."""

    def stats(self) -> dict[str, float]:
        """Figures for TensorBoard beside the update's (``train/<name>``)."""

    def describe(self) -> str:
        """A short note for the progress bar (may be empty)."""

    def saved_state(self) -> dict[str, Any]:
        """Generator states to save beside the trainer's own (they win over its)."""

    def restore(self, state: dict[str, Any]) -> None:
        """Takes back what :meth:`saved_state` saved (a resumed run's ``trainer_state``)."""

    def close(self) -> None:
        """Stops what the source started; a run stopped here stays resumable."""


@runtime_checkable
class EvaluationService(Protocol):
    """Periodic evaluations of the policy (see :mod:`liars_train.ppo.evaluate`)."""

    def submit(self, policy: PolicyNet, update: int, step: int) -> None:
        """Measures ``policy``'s weights of now (update ``update``, ``step`` decisions)."""

    def done(self, wait: bool = False) -> list[Evaluation]:
        """The evaluations finished since the last call, oldest first (``wait``: all)."""

    def close(self) -> None:
        """Drops what is still in flight."""


@runtime_checkable
class ExploiterTrainer(Protocol):
    """Trains exploiters of the main policy, one at a time (:mod:`liars_train.ppo.exploiters`)."""

    @property
    def busy(self) -> bool:
        """Whether an exploiter was started and not yet handed back by :meth:`done`."""

    def start(self, k: int, policy: PolicyNet, step: int) -> None:
        """Starts exploiter ``k`` against ``policy``'s weights of now (``step`` decisions)."""

    def done(self, template: PolicyNet) -> list[ExploiterResult]:
        """The exploiter that finished since the last call, if any (networks like ``template``)."""

    def close(self) -> None:
        """Stops an exploiter in training (it is dropped)."""


@dataclass
class RunContext:
    """What a run hands its roles when they are built (everything by argument)."""

    args: Args
    """The run's settings."""
    rules: RuleSet
    """The game."""
    env: BatchedEnv
    """The driver's games (the in-process rollout plays them)."""
    league: League
    """The driver's league."""
    generator: torch.Generator
    """The learner's sampling generator."""
    np_rng: np.random.Generator
    """The league's generator."""
    device: torch.device
    """Where the learner runs."""
    threads: int | None
    """Torch threads of evaluations and matches."""
    teacher: Any
    """The batched teacher bot, or ``None``."""
    train_exploiter: Callable[[int, PolicyNet, int], ExploiterResult]
    """Trains exploiter ``k`` in this process against ``main`` at ``step`` and judges it."""


class Roles(Protocol):
    """Builds a run's roles (:class:`InProcess`, or the Ray set of ``distributed``)."""

    def rollouts(self, ctx: RunContext) -> RolloutSource:
        """The rollout source of the run."""

    def evaluations(self, ctx: RunContext) -> EvaluationService:
        """The evaluation service of the run."""

    def exploiter(self, ctx: RunContext) -> ExploiterTrainer:
        """The exploiter trainer of the run."""


class InProcess:
    """Every role in this process, in order: the run of ``workers: 0``.

    Raises:
        ValueError: From :meth:`rollouts`, for settings that ask for rollout actors
            (``workers`` > 0): build those runs with :func:`liars_train.runner.roles_for`.
    """

    def rollouts(self, ctx: RunContext) -> RolloutSource:
        """A :class:`~liars_train.ppo.rollout.Rollout` on the driver's games."""
        if ctx.args.workers:
            raise ValueError(
                f"workers: {ctx.args.workers} asks for rollout actors, but the trainer was "
                "given in-process roles (expected workers: 0); build the run with "
                "liars_train.runner.make_trainer(args) or roles_for(args)"
            )
        a = ctx.args
        return Rollout(ctx.env, ctx.league, ctx.generator, a.dice_shaping, ctx.teacher)

    def evaluations(self, ctx: RunContext) -> EvaluationService:
        """Evaluations played when asked (:class:`~liars_train.ppo.evaluate.LocalEvaluations`)."""
        return LocalEvaluations(ctx.args, ctx.rules, ctx.threads)

    def exploiter(self, ctx: RunContext) -> ExploiterTrainer:
        """Exploiters trained when asked (:class:`~liars_train.ppo.exploiters.LocalExploiter`)."""
        return LocalExploiter(ctx.train_exploiter)
