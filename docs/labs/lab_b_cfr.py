"""
Lab (b): regret matching and CFR on a one-die game
==================================================

**What you learn:** regret matching, counterfactual regret minimization (CFR) and CFR+,
and how to measure a strategy *exactly* instead of by playing matches.

**The game:** perudo for 2 players with one four-faced die each. Each player sees only
their own die; they bid in turn (``two 3s``: "there are at least two 3s on the table,
ones wild") until one challenges, and the first challenge ends the game: +1 to the
winner, -1 to the loser. 16 deals, 253 bid sequences: small enough to solve exactly,
big enough to bluff in.

**The check:** the exact exploitability of your CFR strategy, measured by
:func:`liars_env.solver.exploit` (what a best response gains against it; 0 at an
equilibrium), must be below 0.01. About 45 minutes; no GPU.

Fill in the cells that raise ``NotImplementedError`` (three exercises), then run the last
cell.
"""

# %%
# The game as a tree
# ------------------
#
# :class:`~liars_train.course.one_round.OneRoundGame` gives what a textbook CFR needs:
# the deals with their chance probabilities, the legal actions after a bid sequence, and
# the opener's payoff of a challenge. Actions are the engine's ids: bids ``0..7``, the
# challenge ``8``. Role 0 opens, role 1 responds; role ``len(bids) % 2`` acts.

import matplotlib.pyplot as plt
import numpy as np

from liars_env.rules import RuleSet
from liars_env.solver import exploit
from liars_train.course import OneRoundGame, TabularAgent, check_lab

RULES = RuleSet.preset("perudo", num_players=2, dice_per_player=1, faces=4)
game = OneRoundGame(RULES)
print(game.deals()[:3])
print([game.describe(a) for a in game.legal_actions(())])
bids = (5,)  # "two 2s"
print([game.describe(a) for a in game.legal_actions(bids)])
print("opener holds a 2, responder a 3, the responder challenges:", game.payoff(2, 3, bids, 8))

# %%
# An *information set* is what the player to act knows: its own die and the bids so far,
# ``(die, bids)``. A strategy maps each information set to probabilities over
# ``game.legal_actions(bids)``. :class:`~liars_train.course.one_round.TabularAgent` turns
# such a table into an agent, and ``exploit`` measures it exactly. The uniform strategy:

uniform = TabularAgent(game, {}, name="uniform")  # missing information sets: uniform
print(f"uniform random play: {exploit(uniform, RULES).exploitability:.3f}")

# %%
# Exercise 1: regret matching
# ---------------------------
#
# Regret matching plays each action in proportion to its *positive* cumulative regret,
# and uniformly when no regret is positive. Write it for one information set:
# ``regrets`` is an array with one entry per legal action.


def regret_matching(regrets: np.ndarray) -> np.ndarray:
    """Probabilities proportional to the positive part of ``regrets`` (uniform if none)."""
    # BEGIN SOLUTION
    positive = np.maximum(regrets, 0.0)
    total = positive.sum()
    if total > 0:
        return positive / total
    return np.full(len(regrets), 1.0 / len(regrets))
    # END SOLUTION


# %%
# Exercise 2: CFR
# ---------------
#
# One CFR iteration walks the whole tree once per player (*alternating updates*), for
# every deal, carrying each player's probability of reaching the current node. At a node
# of the updating player, with strategy ``sigma`` (regret matching on its regrets),
# action values ``v[a]`` and node value ``v = sum(sigma * v)``:
#
# * the counterfactual regret of action ``a`` grows by ``opponent_reach * (v[a] - v)``
#   (values from the updating player's point of view: the opener's payoff for role 0,
#   its negative for role 1), times the deal's chance probability;
# * the strategy sum grows by ``own_reach * sigma`` (its normalization is the *average
#   strategy*, the one that converges to an equilibrium).
#
# Within one pass every node must use the strategy from before the pass: the class
# caches it per pass (``self.current``). Fill in ``walk``; the rest is given. CFR+ (two
# changes, see ``plus``): regrets clipped at zero after each pass, and the average
# weighted by the iteration number.


class CFR:
    """Tabular CFR (``plus=False``) or CFR+ (``plus=True``) on a ``OneRoundGame``."""

    def __init__(self, game: OneRoundGame, plus: bool = False) -> None:
        self.game = game
        self.plus = plus
        self.regrets: dict = {}
        self.strategy_sums: dict = {}
        self.iterations = 0

    def strategy(self, infoset) -> np.ndarray:
        """This pass's regret-matching strategy at ``infoset`` (created on first visit)."""
        if infoset not in self.current:
            n = len(self.game.legal_actions(infoset[1]))
            self.regrets.setdefault(infoset, np.zeros(n))
            self.strategy_sums.setdefault(infoset, np.zeros(n))
            self.current[infoset] = regret_matching(self.regrets[infoset])
        return self.current[infoset]

    def walk(self, dice, bids, reach, player, weight) -> float:
        """The opener's expected payoff below ``bids``; updates ``player``'s regrets.

        Args:
            dice: ``(opener's die, responder's die)``.
            bids: The bid ids so far (a tuple).
            reach: ``[opener's reach, responder's reach]``: each one's probability of
                playing to this node (chance not included).
            player: The role being updated (0 or 1).
            weight: The deal's chance probability.
        """
        actor = self.game.actor(bids)
        sigma = self.strategy((dice[actor], bids))
        actions = self.game.legal_actions(bids)
        # BEGIN SOLUTION
        values = np.empty(len(actions))
        for i, action in enumerate(actions):
            if self.game.is_bid(action):
                child = list(reach)
                child[actor] *= sigma[i]
                values[i] = self.walk(dice, (*bids, action), child, player, weight)
            else:
                values[i] = self.game.payoff(dice[0], dice[1], bids, action)
        value = float(sigma @ values)
        if actor == player:
            sign = 1.0 if actor == 0 else -1.0
            infoset = (dice[actor], bids)
            self.regrets[infoset] += weight * reach[1 - actor] * sign * (values - value)
            average_weight = self.iterations if self.plus else 1.0
            self.strategy_sums[infoset] += average_weight * reach[actor] * sigma
        return value
        # END SOLUTION

    def iterate(self, n: int = 1) -> None:
        """Runs ``n`` iterations: a pass over every deal for each player in turn."""
        for _ in range(n):
            self.iterations += 1
            for player in (0, 1):
                self.current: dict = {}
                for die0, die1, p in self.game.deals():
                    self.walk((die0, die1), (), [1.0, 1.0], player, p)
                if self.plus:
                    for regrets in self.regrets.values():
                        np.maximum(regrets, 0.0, out=regrets)

    def average_strategy(self) -> dict:
        """The normalized strategy sums: ``(die, bids) → probabilities``."""
        return {
            infoset: total / total.sum() if total.sum() > 0 else np.full(len(total), 1 / len(total))
            for infoset, total in self.strategy_sums.items()
        }


# %%
# CFR against its exact exploitability
# ------------------------------------
#
# Run CFR and measure the average strategy every few iterations. (The numbers are the
# same on every machine: there is no randomness in CFR.)

import os

QUICK = os.environ.get("LIARS_COURSE_QUICK") == "1"  # the course's tests: fewer iterations
checkpoints = [1, 5, 10, 20] if QUICK else [1, 5, 10, 20, 50, 100, 200]
cfr = CFR(game)
curve = []
for n in checkpoints:
    cfr.iterate(n - cfr.iterations)
    agent = TabularAgent(game, cfr.average_strategy(), name="cfr")
    curve.append((n, exploit(agent, RULES).exploitability))
    print(f"CFR, {n:4d} iterations: exploitability {curve[-1][1]:.4f}")

# %%
# Exercise 3: CFR+
# ----------------
#
# Vanilla CFR approaches the equilibrium slowly (about as one over the square root of
# the iterations). Run CFR+ (``CFR(game, plus=True)``) and keep, in ``STRATEGY``, an
# average strategy whose exact exploitability is below 0.01; plot both curves.

# BEGIN SOLUTION -> STRATEGY = ...  # your CFR+ average strategy
cfr_plus = CFR(game, plus=True)
curve_plus = []
for n in [1, 5, 10, 20, 50]:
    cfr_plus.iterate(n - cfr_plus.iterations)
    agent = TabularAgent(game, cfr_plus.average_strategy(), name="cfr+")
    curve_plus.append((n, exploit(agent, RULES).exploitability))
    print(f"CFR+, {n:4d} iterations: exploitability {curve_plus[-1][1]:.4f}")
STRATEGY = cfr_plus.average_strategy()

fig, ax = plt.subplots(figsize=(6, 3.5))
ax.loglog(*zip(*curve, strict=True), marker="o", label="CFR")
ax.loglog(*zip(*curve_plus, strict=True), marker="o", label="CFR+")
ax.axhline(0.01, color="k", ls="--", lw=1, label="the lab's target")
ax.set_xlabel("iterations")
ax.set_ylabel("exact exploitability")
ax.legend()
fig.tight_layout()
# END SOLUTION

# %%
# Questions (not graded by the check)
# -----------------------------------
#
# 1. How does the *current* strategy (``regret_matching`` of the regrets, not the
#    average) do? Measure it at a few iterations.
# 2. Look at ``STRATEGY`` for the opener's first bid with each die: does the equilibrium
#    bluff? With which dice?

# %%
# The check
# ---------
#
# It runs ``regret_matching`` on hidden cases and measures ``STRATEGY`` exactly.

check_lab("cfr", globals())
