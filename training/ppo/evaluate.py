"""The trainer's evaluations: periodic win rates against the bots, and the final table.

The one home of what the trainer measures. :func:`win_rates` measures a policy against
every ``eval_opponents`` entry and :func:`evaluate_weights` the same from plain weights
(what the evaluation actor runs: :mod:`liars_train.distributed.evaluation` is only its
transport); :class:`LocalEvaluations` is the in-process
:class:`~liars_train.ppo.roles.EvaluationService`; :func:`eval_row` turns the results and
the league's table into a row of ``metrics.csv`` and TensorBoard scalars, and
:func:`final_table` plays the final table against every bot. (The tournament of
``liars-eval`` is ``liars_train.evaluation``, a package of its own.)
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from liars_env.agents.policy import CheckpointError, PolicyNet, load_policy
from liars_env.batched import BatchedEnv
from liars_env.rules import RuleSet
from liars_train.evaluation.policy_eval import bot_table, evaluate_policy
from liars_train.league import League
from liars_train.ppo.settings import Args, game_rules, network_shape


def win_rates(
    policy: PolicyNet,
    rules: RuleSet,
    args: Args,
    update: int,
    threads: int | None = None,
) -> list[dict[str, Any]]:
    """The policy's results against each of ``eval_opponents`` at update ``update``.

    Every evaluation of update ``u`` plays the games of seed ``10_000 + u``.
    """
    return [
        evaluate_policy(
            policy,
            rules,
            opponent,
            args.eval_games,
            seed=10_000 + update,
            device=args.device,
            threads=threads,
        )
        for opponent in args.eval_opponents
    ]


def evaluate_weights(
    settings: dict[str, Any], weights: dict[str, torch.Tensor], seed: int
) -> list[dict[str, Any]]:
    """The win rates of a policy with ``weights`` against each of ``eval_opponents``.

    What a Ray evaluation task runs (on one CPU thread, wherever Ray places it).

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
    """The update evaluated."""
    step: int
    """Its learner decisions."""
    weights: dict[str, torch.Tensor]
    """The weights measured (a new best is written with them)."""
    results: list[dict[str, Any]]
    """:func:`win_rates`'s results."""


class LocalEvaluations:
    """Evaluations played in this process when submitted (an :class:`EvaluationService`).

    Args:
        args: The run's settings (``eval_opponents``, ``eval_games``, ``device``).
        rules: The game.
        threads: Torch threads of the games.
    """

    def __init__(self, args: Args, rules: RuleSet, threads: int | None = None) -> None:
        self.args, self.rules, self.threads = args, rules, threads
        self.finished: list[Evaluation] = []

    def submit(self, policy: PolicyNet, update: int, step: int) -> None:
        """Plays the evaluation of ``policy`` now; :meth:`done` hands it back."""
        results = win_rates(policy, self.rules, self.args, update, self.threads)
        weights = {k: v.detach().clone() for k, v in policy.state_dict().items()}
        self.finished.append(Evaluation(update, step, weights, results))

    def done(self, wait: bool = False) -> list[Evaluation]:
        """Every evaluation submitted since the last call (they are all finished)."""
        out, self.finished = self.finished, []
        return out

    def close(self) -> None:
        """Nothing runs beside the trainer."""
        self.finished = []


def eval_row(
    writer, results: list[dict[str, Any]], args: Args, league: League, update: int, step: int
) -> tuple[dict[str, Any], str]:
    """The ``metrics.csv`` row of an evaluation (logged to ``writer`` too), and a short line.

    Args:
        writer: A TensorBoard writer (``eval/`` and ``league/`` scalars).
        results: :func:`win_rates`'s results.
        args: The settings (``eval_opponents``).
        league: The league whose table goes in the row.
        update: The update evaluated.
        step: Its learner decisions.
    """
    row: dict[str, Any] = {"update": update, "step": step}
    parts = []
    for opponent, result in zip(args.eval_opponents, results, strict=True):
        row[f"win_rate_vs_{opponent}"] = result["win_rate"]
        row[f"ci95_lo_vs_{opponent}"], row[f"ci95_hi_vs_{opponent}"] = result["ci95"]
        writer.add_scalar(f"eval/win_rate_vs_{opponent}", result["win_rate"], step)
        parts.append(f"vs {opponent}: {result['win_rate']:.3f}")
    for member in league.table():
        name = member["name"]
        row[f"league_win_rate_vs_{name}"] = member["win_rate"]
        row[f"league_weight_{name}"] = member["weight"]
        writer.add_scalar(f"league/win_rate_vs_{name}", member["win_rate"], step)
        writer.add_scalar(f"league/weight_{name}", member["weight"], step)
    return row, " ".join(parts)


def final_table(
    policy: PolicyNet,
    rules: RuleSet,
    args: Args,
    run_dir: Path,
    device: torch.device | str,
    threads: int | None = None,
) -> dict[str, Any]:
    """Plays the final table (the policy, and ``compare_checkpoint``, vs each bot).

    Writes ``final_eval.json`` into ``run_dir`` unless ``final_eval_games`` is 0.
    """
    if args.final_eval_games <= 0:
        return {"rules": rules.to_dict(), "rows": []}
    players = {"new policy": policy}
    if args.compare_checkpoint:
        try:
            players["shipped " + args.compare_checkpoint], _ = load_policy(
                args.compare_checkpoint, rules, device=device
            )
        except CheckpointError as exc:
            print(f"(not comparing with {args.compare_checkpoint}: {exc})")
    table = bot_table(players, rules, args.final_eval_games, device=args.device, threads=threads)
    (run_dir / "final_eval.json").write_text(json.dumps(table, indent=2))
    return table
