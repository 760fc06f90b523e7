"""Decisions per second of each bot's ``act`` (single process, 3-player perudo).

Games are played with every seat taken by the bot under test; only the time spent in
``act`` (including building its view) is counted. The vectorized probabilistic bot on a
BatchedEnv of 4096 games is timed too.

Run: ``python benchmarks/bot_speed.py [--seconds 2]``
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import torch

from liars_env import LiarsDiceGame, ObservationLayout, RuleSet
from liars_env.agents import BOT_PRESETS, make_agent, view_of
from liars_env.agents.batched import BatchedProbabilisticBot
from liars_env.batched import BatchedEnv


def scalar_rate(spec: str, rules: RuleSet, seconds: float) -> float:
    """Decisions per second of one bot spec (time inside act and view_of only)."""
    game, layout = LiarsDiceGame(rules), ObservationLayout(rules)
    agent = make_agent(spec, rules, seed=0)
    decisions, spent, seed = 0, 0.0, 0
    while spent < seconds:
        rng = np.random.default_rng(seed)
        seed += 1
        state = game.new_game(rng)
        while not state.is_over:
            start = time.perf_counter()
            action = agent.act(view_of(game, layout, state))
            spent += time.perf_counter() - start
            game.apply(state, action, rng)
            decisions += 1
    return decisions / spent


def batched_rate(rules: RuleSet, seconds: float) -> float:
    """Decisions per second of the vectorized bot deciding for 4096 games at once."""
    env = BatchedEnv(rules, num_envs=4096, seed=0, check_actions=False)
    bot = BatchedProbabilisticBot(env, "probabilistic")
    _, mask = env.reset()
    rows = torch.arange(env.num_envs)
    decisions, spent = 0, 0.0
    while spent < seconds:
        start = time.perf_counter()
        actions = bot.act(mask, rows)
        spent += time.perf_counter() - start
        _, mask, _, _, _ = env.step(actions)
        decisions += env.num_envs
    return decisions / spent


def main() -> None:
    """Prints decisions per second per bot."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=2.0)
    args = parser.parse_args()
    rules = RuleSet.preset("perudo", num_players=3)
    print(f"{'bot':<28}{'decisions/s':>14}")
    for spec in ["random", *BOT_PRESETS]:
        print(f"{spec:<28}{scalar_rate(spec, rules, args.seconds):>14,.0f}")
    print(f"{'probabilistic (batched)':<28}{batched_rate(rules, args.seconds):>14,.0f}")


if __name__ == "__main__":
    main()
