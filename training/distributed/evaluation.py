"""Periodic evaluations as Ray tasks, beside training rather than in pauses of it.

With ``workers`` and ``overlap``, the trainer hands each periodic evaluation (the policy's
win rate against every ``eval_opponents`` entry) to a Ray task with the weights of that
update, and books the result when it is done, in the order they were asked: the row of
``metrics.csv`` carries the update and step it measured, and a new best writes the
``best`` checkpoint with the weights that were measured. The tasks ask Ray for no CPU
of their own (the rollout actors hold one each), so they run beside them.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

import torch

from liars_env.agents.policy import PolicyNet
from liars_env.batched import BatchedEnv
from liars_train.distributed.cluster import require_ray
from liars_train.distributed.league_sync import state_dict_cpu
from liars_train.evaluation.policy_eval import evaluate_policy
from liars_train.ppo.settings import Args, game_rules, network_shape


def evaluate_weights(
    settings: dict[str, Any], weights: dict[str, torch.Tensor], seed: int
) -> list[dict[str, Any]]:
    """The win rates of a policy with ``weights`` against each of ``eval_opponents``.

    Args:
        settings: The run's settings as a dict (the game, the network, the opponents).
        weights: The policy's weights.
        seed: The evaluation's seed (``10_000 + update``, as in one process).

    Returns:
        One :func:`~liars_train.evaluation.policy_eval.evaluate_policy` result per
        opponent.
    """
    args = Args(**settings)
    torch.set_num_threads(1)
    rules = game_rules(args)
    env = BatchedEnv(rules, num_envs=1, device="cpu", seed=0)
    shape = network_shape(args, env)
    policy = PolicyNet(shape, rules)
    policy.load_state_dict(weights)
    policy.eval()
    return [
        evaluate_policy(policy, rules, opponent, args.eval_games, seed=seed, threads=1)
        for opponent in args.eval_opponents
    ]


@dataclass
class Evaluation:
    """A finished periodic evaluation, and what it measured."""

    update: int
    step: int
    weights: dict[str, torch.Tensor]
    results: list[dict[str, Any]]


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
