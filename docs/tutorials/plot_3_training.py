"""
Training with ``liars-train``
=============================

``liars-train`` runs masked PPO on the batched engine against a league: the current
policy, its frozen snapshots and the bots, drawn by how hard each is for the learner
(:doc:`the training guide </training>` explains every setting). This page trains for a
few seconds on the course's small game, two players with one die each, and shows where
the results land. Run it longer by raising ``total_steps`` (500k decisions take about 40
seconds on one core: ``configs/course_tiny.yaml``).

"""

# %%
# A tiny run
# ----------
#
# The command line is ``liars-train --config FILE --set key=value ...``; the same from
# Python is ``liars_train.train.main`` with those arguments. Here every setting is
# given with ``--set`` (the defaults of the rest are in
# :class:`liars_train.ppo.Args`), and the run goes to a temporary folder instead of
# ``runs/``.

import tempfile
from pathlib import Path

from liars_train.train import main

runs = Path(tempfile.mkdtemp())
settings = {
    "rules": "perudo",
    "num_players": 2,
    "rule_overrides": "{dice_per_player: 1}",
    "total_steps": 49152,
    "num_envs": 128,
    "num_steps": 16,
    "num_minibatches": 2,
    "hidden_size": 64,
    "league": "[random, probabilistic]",
    "eval_opponents": "[random, probabilistic]",
    "eval_every": 4,
    "eval_games": 100,
    "checkpoint_every": 8,
    "final_eval_games": 200,
    "torch_threads": 1,
    "seed": 0,
    "progress": "false",
    "runs_dir": runs,
    "run_name": "tutorial",
}
status = main(["--set" if i % 2 == 0 else f"{k}={v}" for k, v in settings.items() for i in (0, 1)])
assert status == 0

# %%
# What a run leaves
# -----------------
#
# Everything lands in ``runs/<run_name>/``: TensorBoard events, ``metrics.csv``,
# checkpoints, ``learning_curve.png`` and ``final_eval.json``.

run = runs / "tutorial"
print(sorted(p.name for p in run.iterdir()))
print(sorted(p.name for p in (run / "checkpoints").iterdir()))

# %%
# The learning curve
# ------------------
#
# ``metrics.csv`` holds one row per update; the evaluation columns are filled every
# ``eval_every`` updates.

import csv

import matplotlib.pyplot as plt

with open(run / "metrics.csv") as file:
    rows = list(csv.DictReader(file))
print(list(rows[0]))

evaluated = [r for r in rows if r["win_rate_vs_probabilistic"]]
fig, ax = plt.subplots(figsize=(6, 3))
for bot in ("random", "probabilistic"):
    steps = [int(r["step"]) for r in evaluated]
    rate = [float(r[f"win_rate_vs_{bot}"]) for r in evaluated]
    low = [float(r[f"ci95_lo_vs_{bot}"]) for r in evaluated]
    high = [float(r[f"ci95_hi_vs_{bot}"]) for r in evaluated]
    ax.plot(steps, rate, marker="o", label=f"vs {bot}")
    ax.fill_between(steps, low, high, alpha=0.2)
ax.axhline(0.5, color="k", ls="--", lw=1)
ax.set_xlabel("learner decisions")
ax.set_ylabel("win rate (95% interval)")
ax.legend()
fig.tight_layout()

# %%
# A checkpoint plays like any agent
# ---------------------------------
#
# ``checkpoint:PATH`` is an agent spec, in ``liars-eval`` as in ``evaluate``::
#
#     liars-eval --rules perudo --players 2 --rule dice_per_player=1 \
#         --agents checkpoint:runs/tutorial/checkpoints/best probabilistic --games 400

from liars_train.evaluation.tournament import evaluate

result = evaluate(
    "perudo",
    [f"checkpoint:{run / 'checkpoints' / 'best'}", "probabilistic"],
    games=400,
    progress=False,
    num_players=2,
    dice_per_player=1,
)
for agent in result.agents:
    print(f"{agent.name:14s} {agent.win_rate:.3f} {agent.ci95[0]:.3f}-{agent.ci95[1]:.3f}")

# %%
# How far from the equilibrium?
# -----------------------------
#
# This game is small enough for the exact solver: :func:`liars_env.solver.exploit` gives
# what a best response gains against the policy (0 at an equilibrium; the ``random`` bot
# is at 0.83). :doc:`Lab (c) </course>` follows it over a whole run, beside CFR+.

from liars_env.agents.checkpoint import CheckpointAgent
from liars_env.rules import RuleSet
from liars_env.solver import exploit

rules = RuleSet.preset("perudo", num_players=2, dice_per_player=1)
policy = CheckpointAgent.load(run / "checkpoints" / "best", rules)
print(f"exploitability: {exploit(policy, rules, seats=(0,)).exploitability:.3f}")

# %%
# Going further
# -------------
#
# * ``liars-train --config configs/course_tiny.yaml`` trains this game for 500k decisions;
#   ``--resume course_tiny`` continues a stopped run.
# * TensorBoard reads the run folder: ``tensorboard --logdir runs``.
# * :doc:`The training guide </training>` describes the league, exploiters and every
#   setting; :doc:`the convergence page </convergence>` the recipe that approaches the
#   equilibrium.
