"""Win rates of a policy network against bots and checkpoints, on the batched engine."""

from __future__ import annotations

from typing import Any

from liars_env.agents.policy import PolicyNet
from liars_env.agents.probabilistic import BOT_PRESETS
from liars_env.batched.threads import DEFAULT_THREADS
from liars_env.rules import RuleSet
from liars_train.league import Member, member_from_spec, play_match


def evaluate_policy(
    policy: PolicyNet,
    rules: RuleSet,
    opponent: str,
    games: int,
    seed: int,
    device: str = "cpu",
    threads: int | None = DEFAULT_THREADS,
) -> dict[str, Any]:
    """Win rate of ``policy`` in one seat against ``opponent`` in all others.

    ``opponent`` is a bot preset or ``checkpoint:PATH``; see
    :func:`liars_train.league.play_match` (and :mod:`liars_env.batched.threads` for ``threads``).
    """
    result = play_match(
        Member("policy", "self"),
        member_from_spec(opponent, rules, device),
        rules,
        games,
        seed,
        device,
        policy=policy,
        threads=threads,
    )
    return {"bot": opponent, **result}


def bot_table(
    players: dict[str, PolicyNet],
    rules: RuleSet,
    games: int,
    seed: int = 99,
    device: str = "cpu",
    threads: int | None = DEFAULT_THREADS,
) -> dict[str, Any]:
    """Each policy in ``players`` against every bot preset: ``{"rules", "rows"}``.

    A row is ``{"agent": name, "bot", "games", "win_rate", "ci95", ...}``.
    """
    rows = [
        {"agent": name, **evaluate_policy(net, rules, bot, games, seed, device, threads)}
        for name, net in players.items()
        for bot in BOT_PRESETS
    ]
    return {"rules": rules.to_dict(), "rows": rows}
