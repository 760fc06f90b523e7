"""
Lab (a): write a bot that beats ``probabilistic``
=================================================

**What you learn:** the agent interface, reasoning with the binomial distribution of
the dice you cannot see, and measuring a bot honestly: seats rotated, a win rate with
its confidence interval rather than one lucky match.

**The game:** perudo for 3 players, five dice each, ones wild (:doc:`the rules </rules>`).
Your bot plays against two copies of the built-in ``probabilistic`` bot.

**The check:** 600 games with the seats rotated, as ``liars-eval`` plays them; your bot
passes when the lower end of the 95% interval of its win rate is above 1/3 (a fair
share at three players). The games are seeded: the same bot gets the same figures on
every machine. About 45 minutes; no GPU.

Start from :doc:`the bot tutorial </_generated/tutorials/plot_2_write_a_bot>`. Fill in
the two cells that raise ``NotImplementedError``, then run the last cell.
"""

# %%
# What a bot sees
# ---------------
#
# A bot's ``act(view)`` gets a ``PlayerView``: ``view.dice`` (your faces),
# ``view.dice_left`` (every seat's dice count), ``view.bids`` (this round's
# ``(seat, quantity, face)``), ``view.current_bid``, ``view.palifico``,
# ``view.legal_actions`` and ``view.codec`` (``codec.is_bid``, ``codec.decode_bid``,
# ``codec.challenge``). Here is one view from a real game:

import numpy as np

from liars_env import LiarsDiceGame, ObservationLayout
from liars_env.agents import view_of
from liars_env.probability import binomial_tail, match_probability
from liars_env.rules import counts_as_match
from liars_train.course import check_lab
from liars_train.course.checks import BOT_RULES, check_bot

game, layout = LiarsDiceGame(BOT_RULES), ObservationLayout(BOT_RULES)
rng = np.random.default_rng(0)
state = game.new_game(rng)
game.apply(state, game.codec.encode_bid(3, 4), rng)  # the opener bids three 4s
view = view_of(game, layout, state)
print("my dice:", view.dice, "dice per seat:", view.dice_left, "bids:", view.bids)
print("some legal actions:", [view.codec.describe(a) for a in view.legal_actions[:4]], "...")

# %%
# Exercise 1: how likely is a bid?
# --------------------------------
#
# A bid "``quantity`` ``face``\ s" is true when at least ``quantity`` dice on the table
# count toward ``face``. Yours you know; each unseen die counts with probability
# ``match_probability(rules, face, palifico=...)`` (1/3 for a face other than 1 in a
# normal round: the face or a wild one), independently. So the number of unseen matches is
# binomial, and ``binomial_tail(n, p)[k]`` is ``P(X >= k)``. ``counts_as_match(rules,
# die, face, palifico=...)`` says whether one of your dice counts.


def bid_probability(view, quantity: int, face: int) -> float:
    """The chance, given your dice, that at least ``quantity`` dice count for ``face``."""
    # BEGIN SOLUTION
    rules = view.rules
    mine = sum(counts_as_match(rules, die, face, palifico=view.palifico) for die in view.dice)
    unseen = sum(view.dice_left) - len(view.dice)
    need = quantity - mine
    if need <= 0:
        return 1.0
    if need > unseen:
        return 0.0
    p = match_probability(rules, face, palifico=view.palifico)
    return float(binomial_tail(unseen, p)[need])
    # END SOLUTION


print(f"three 4s: {bid_probability(view, 3, 4):.3f}, eight 4s: {bid_probability(view, 8, 4):.3f}")

# %%
# Exercise 2: the bot
# -------------------
#
# A simple plan that works: challenge when the current bid is unlikely (below some
# threshold, which you choose), otherwise make the legal bid most likely to be true.
# Other ideas: read the previous bidder's bid as a hint about its dice, bluff now and
# then, challenge more readily late in the game. Any bot that passes the check is
# right.


class MyBot:
    """Your bot (``act`` must return a legal action id)."""

    name = "my-bot"

    def __init__(self, seed=None):
        self.rng = np.random.default_rng(seed)

    def reset(self, seed=None):
        self.rng = np.random.default_rng(seed)

    def act(self, view) -> int:
        # BEGIN SOLUTION
        codec = view.codec
        threshold = 0.2
        if view.current_bid is not None and bid_probability(view, *view.current_bid) < threshold:
            return codec.challenge
        best, best_p = None, -1.0
        for action in view.legal_actions:
            if codec.is_bid(action):
                p = bid_probability(view, *codec.decode_bid(action))
                if p > best_p + 1e-9:
                    best, best_p = int(action), p
        if best is None or (view.current_bid is not None and best_p < threshold):
            return codec.challenge
        return best
        # END SOLUTION


# %%
# A first match
# -------------
#
# 120 games against two ``probabilistic`` bots, seats rotated, with the check's own
# function; the interval is wide at this size (the check plays 600).

print(check_bot(MyBot, games=120))

# %%
# Questions (not graded by the check)
# -----------------------------------
#
# 1. How does the win rate move with your threshold? Try three values.
# 2. ``probabilistic`` is described in :mod:`liars_env.agents.probabilistic`: what does
#    your bot exploit in it?
# 3. How does your bot do against ``bayes`` or ``belief``? ``evaluate`` (in
#    :mod:`liars_train.evaluation.tournament`) plays any agents; the bot tutorial shows
#    how to give a notebook's class a module name for it.

# %%
# The check
# ---------

check_lab("bot", globals())
