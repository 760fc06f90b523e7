"""Shared helpers for the tests: scripted games and preset/player grids."""

from __future__ import annotations

import numpy as np

from liars_env import PRESETS, LiarsDiceGame, RuleSet
from liars_env.rules import PRESET_PLAYERS


def preset_grid(players=range(2, 7)):
    """Every (preset name, num_players) pair the presets allow among ``players``."""
    grid = []
    for name in PRESETS:
        lo, hi = PRESET_PLAYERS.get(name, (2, 8))
        grid += [(name, n) for n in players if lo <= n <= hi]
    return grid


def scripted(rules: RuleSet, dice, *, first_player=0, dice_left=None, seed=0):
    """A game started with fixed first-round dice; returns ``(game, state, rng)``."""
    game = LiarsDiceGame(rules)
    rng = np.random.default_rng(seed)
    state = game.new_game(rng, dice=dice, dice_left=dice_left, first_player=first_player)
    return game, state, rng


def bid(game: LiarsDiceGame, quantity: int, face: int) -> int:
    """Action id of a bid."""
    return game.codec.encode_bid(quantity, face)


TINY = [  # a tiny PPO run (the tiny_run fixture of conftest.py)
    "total_steps=2048",
    "num_envs=64",
    "num_steps=8",
    "num_minibatches=2",
    "update_epochs=1",
    "hidden_size=32",
    "eval_every=2",
    "eval_games=30",
    "checkpoint_every=2",
    "final_eval_games=12",
    "snapshot_every=1",
    "progress=false",
    "torch_threads=1",
]
