"""
Writing and evaluating a bot
============================

A bot is any object with ``name``, ``reset(seed)`` and ``act(view) -> action``. This
tutorial writes one, plays it against the built-in bots with the engine directly, then
measures it the way ``liars-eval`` does: seats rotated, win rates with 95% Wilson
intervals. :doc:`Lab (a) </course>` asks you to write one that beats ``probabilistic``.

"""

# %%
# A greedy bot
# ------------
#
# The ``PlayerView`` (:mod:`liars_env.observation`) holds your dice, the public round state, the
# mask and the observation. This bot bids one more of the face it holds most, and
# challenges when the bid exceeds half of the dice in play:

import numpy as np

from liars_env.agents import PlayerView


class GreedyBot:
    name = "greedy"

    def reset(self, seed=None):
        pass

    def act(self, view: PlayerView) -> int:
        codec = view.codec
        in_play = sum(view.dice_left)
        if view.current_bid is not None and view.current_bid[0] > in_play // 2:
            return codec.challenge
        for action in view.legal_actions:  # ascending: lowest bids first
            if codec.is_bid(action):
                quantity, face = codec.decode_bid(action)
                if face in view.dice or (face != 1 and 1 in view.dice):
                    return int(action)
        return int(view.legal_actions[0] if view.current_bid is None else codec.challenge)


# %%
# Playing it with the engine
# --------------------------
#
# The engine directly is fast and needs no PettingZoo: a state, the acting player's view,
# ``game.apply``.

from liars_env import LiarsDiceGame, ObservationLayout, RuleSet
from liars_env.agents import make_agent, view_of

rules = RuleSet.preset("perudo", num_players=3)
game, layout = LiarsDiceGame(rules), ObservationLayout(rules)
players = [
    GreedyBot(),
    make_agent("probabilistic", rules, seed=1),
    make_agent("random", rules, seed=2),
]
wins = [0, 0, 0]
for seed in range(30):
    rng = np.random.default_rng(seed)
    state = game.new_game(rng)
    while not state.is_over:
        action = players[state.current_player].act(view_of(game, layout, state))
        game.apply(state, action, rng)
    wins[state.winner] += 1
print(dict(zip(["greedy", "probabilistic", "random"], wins, strict=True)))

# %%
# Evaluating with ``liars-eval``
# ------------------------------
#
# ``liars-eval`` rotates seats, runs games in parallel processes and reports win rates
# with 95% Wilson intervals, mean places and openskill ratings::
#
#     liars-eval --rules perudo --players 3 --agents bayes probabilistic random --games 60
#
# The same from Python, with :func:`liars_train.evaluation.play.evaluate` (also importable
# from ``liars_train.evaluation.tournament``):

from liars_train.evaluation.tournament import evaluate

result = evaluate(
    "perudo", ["bayes", "probabilistic", "random"], games=120, progress=False, num_players=3
)
for agent in result.agents:
    print(f"{agent.name:14s} {agent.win_rate:.2f} {agent.ci95[0]:.2f}-{agent.ci95[1]:.2f}")

# %%
# Your own bot in ``liars-eval``
# ------------------------------
#
# ``evaluate`` and ``liars-eval`` take agent *specs*; your class is one as an import path
# ``MODULE:ATTR``: a bot saved in ``mybot.py`` is ``mybot:GreedyBot`` (run from its
# folder). A class defined in a notebook has no module to import, so give it one
# (``evaluate`` plays in this process with ``workers=1``, its default). The win rates
# with their intervals:

import sys
import types

import matplotlib.pyplot as plt

sys.modules["tutorial_bots"] = types.ModuleType("tutorial_bots")
sys.modules["tutorial_bots"].GreedyBot = GreedyBot
result = evaluate(
    "perudo",
    ["tutorial_bots:GreedyBot", "probabilistic", "random"],
    games=120,
    progress=False,
    num_players=3,
)
names = [a.name for a in result.agents]
rates = np.array([a.win_rate for a in result.agents])
low = rates - np.array([a.ci95[0] for a in result.agents])
high = np.array([a.ci95[1] for a in result.agents]) - rates
fig, ax = plt.subplots(figsize=(5, 3))
ax.bar(names, rates, yerr=[low, high], capsize=6)
ax.axhline(1 / 3, color="k", ls="--", lw=1, label="a fair share (1/3)")
ax.set_ylabel("win rate (95% interval)")
ax.legend()
fig.tight_layout()
