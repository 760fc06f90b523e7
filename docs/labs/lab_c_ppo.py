"""
Lab (c): PPO against the equilibrium
====================================

**What you learn:** to measure a trained policy by its exact exploitability rather than
by whom it beats; why a policy trained against a league of bots, or by plain
self-play, stays exploitable; and how regularized self-play (entropy, a magnet policy,
a KL to the previous policy) closes much of the gap to an equilibrium. CFR+ on the
same game is the yardstick.

**The game:** the one of ``configs/course_tiny.yaml``: perudo for 2 players with one
six-faced die each. The exact solver measures any policy on it in a few seconds.

**The check:** your ``exploitability_curve`` against exact values on your own run, and
your regularized run: below 0.35 and below the league run, at the same 500k learner
decisions and seed. Three training runs of about 40 seconds each on one CPU core, and
the measurements: about 10 minutes of computing, 60 to 90 minutes in all; no GPU.
Training is seeded (seed 0, one torch thread): everyone's curves match closely.
"""

# %%
# Training runs
# -------------
#
# ``train(name, **changes)`` trains ``configs/course_tiny.yaml``'s settings (written out
# here so the notebook needs no file; a test of the course keeps them equal to the
# file's) with some changed, through the ``liars-train`` command, and returns the run
# folder. Every run keeps all its checkpoints, one every 10 updates (40,960 decisions).

import os
import time
from pathlib import Path

import matplotlib.pyplot as plt

from liars_env.solver import solve
from liars_train.course import check_lab
from liars_train.course.checks import PPO_RULES, PPO_STEPS, checkpoint_exploitability
from liars_train.train import main as liars_train

COURSE_TINY = {
    "run_name": "course_tiny",
    "rules": "perudo",
    "rule_overrides": {"dice_per_player": 1},
    "num_players": 2,
    "total_steps": 500000,
    "num_envs": 256,
    "num_steps": 16,
    "num_minibatches": 4,
    "hidden_size": 64,
    "bid_features": True,
    "belief_features": True,
    "self_play": 0.3,
    "league": ["random", "probabilistic", "bayes"],
    "pool_size": 5,
    "snapshot_every": 10,
    "eval_every": 20,
    "eval_games": 400,
    "eval_opponents": ["random", "probabilistic", "bayes"],
    "checkpoint_every": 20,
    "final_eval_games": 1000,
    "torch_threads": 1,
}
QUICK = os.environ.get("LIARS_COURSE_QUICK") == "1"  # the course's tests: a tiny budget
LAB = {
    "total_steps": 16384 if QUICK else PPO_STEPS,
    "checkpoint_every": 4 if QUICK else 10,
    "keep_checkpoints": 1000,
    "eval_every": 0,  # the exact measure replaces the matches against bots
    "final_eval_games": 0,
    "seed": 0,
    "progress": False,
    "overwrite": True,
}


def _value(value) -> str:
    """A setting as ``--set`` reads it (YAML)."""
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, (list, dict)):
        return str(value).replace("'", "").replace("True", "true").replace("False", "false")
    return str(value)


def train(name: str, **changes) -> Path:
    """Trains course_tiny with ``changes``; returns ``runs/<name>``."""
    settings = {**COURSE_TINY, **LAB, **changes, "run_name": name}
    sets = [arg for key, value in settings.items() for arg in ("--set", f"{key}={_value(value)}")]
    if liars_train(sets) != 0:
        raise RuntimeError(f"liars-train failed for run {name} ({changes})")
    return Path("runs") / name


LEAGUE_RUN = train("league")
print(sorted(p.name for p in (LEAGUE_RUN / "checkpoints").iterdir()))

# %%
# Exercise 1: the exploitability curve
# ------------------------------------
#
# Write ``exploitability_curve(run)``: one ``(learner decisions, exact exploitability)``
# per ``checkpoints/step_*`` folder of the run, sorted by decisions (the folder name is
# ``step_`` and the decisions, zero-padded). ``checkpoint_exploitability(path)`` loads a
# checkpoint as an agent and measures it with :func:`liars_env.solver.exploit` (read it:
# it is five lines).


def exploitability_curve(run: Path) -> list[tuple[int, float]]:
    """``(learner decisions, exact exploitability)`` of every checkpoint of ``run``."""
    # BEGIN SOLUTION
    steps = sorted(Path(run).glob("checkpoints/step_*"))
    return [(int(p.name.split("_")[1]), checkpoint_exploitability(p)) for p in steps]
    # END SOLUTION


league_curve = exploitability_curve(LEAGUE_RUN)
print(league_curve)

# %%
# The league run beats the bots (``liars-train`` prints the table when
# ``final_eval_games`` is set), yet a best response wins a lot against it. Plain
# self-play (the policy against itself only) is the textbook alternative:

SELF_PLAY_RUN = train("self_play", self_play=1.0, league=[], pool_size=0)
self_play_curve = exploitability_curve(SELF_PLAY_RUN)
print(self_play_curve[-1])

# %%
# Exercise 2: regularized self-play
# ---------------------------------
#
# Plain self-play chases its own last policy: the best response to it changes with every
# update, and the policy cycles instead of settling. :doc:`The training guide
# </training>` (section "Regularized self-play") and :doc:`the convergence page
# </convergence>` describe the trainer's settings that damp the cycling: ``ent_coef``,
# ``magnet``, ``magnet_coef``, ``magnet_ema_rate``, ``kl_coef``, with ``clip_coef``,
# ``learning_rate``, ``update_epochs`` and ``num_minibatches`` for the size of each step.
# Choose settings (a dict of changes to course_tiny, keeping its budget and seed) that
# bring the last checkpoint below 0.35 and below the league run.

# BEGIN SOLUTION -> REGULARIZED = ...  # your changes, e.g. {"self_play": 1.0, ...}
REGULARIZED = {
    "self_play": 1.0,
    "league": [],
    "pool_size": 0,
    "learning_rate": 0.001,
    "clip_coef": 0.05,
    "update_epochs": 8,
    "num_minibatches": 1,
    "ent_coef": 0.05,
    "magnet": "ema",
    "magnet_coef": 0.3,
    "magnet_ema_rate": 0.02,
    "kl_coef": 0.025,
}
# END SOLUTION
REGULARIZED_RUN = train("regularized", **REGULARIZED)
regularized_curve = exploitability_curve(REGULARIZED_RUN)
print(regularized_curve[-1])

# %%
# CFR+ beside PPO
# ---------------
#
# The solver's CFR+ (:func:`liars_env.solver.solve` with ``method="cfr+"``) on the same
# game, for a few iteration budgets: its exploitability against its wall time. PPO's
# checkpoints are placed at the seconds they were written since their run began.


def seconds_curve(run: Path, curve: list[tuple[int, float]]) -> list[tuple[float, float]]:
    """The curve against the seconds since the run's ``config.json`` was written."""
    start = (run / "config.json").stat().st_mtime
    folders = sorted(run.glob("checkpoints/step_*"))
    return [(p.stat().st_mtime - start, e) for p, (_, e) in zip(folders, curve, strict=True)]


cfr_curve = []
for iterations in [1, 3, 10, 30] if QUICK else [1, 3, 10, 30, 100, 300]:
    began = time.perf_counter()
    solution = solve(PPO_RULES, method="cfr+", iterations=iterations, tolerance=1e-12)
    cfr_curve.append((time.perf_counter() - began, solution.exploitability))

runs = {
    "league (course_tiny)": (LEAGUE_RUN, league_curve),
    "plain self-play": (SELF_PLAY_RUN, self_play_curve),
    "regularized self-play": (REGULARIZED_RUN, regularized_curve),
}
fig, (by_decisions, by_seconds) = plt.subplots(1, 2, figsize=(10, 4), sharey=True)
for label, (run, curve) in runs.items():
    by_decisions.plot(*zip(*curve, strict=True), marker=".", label=label)
    by_seconds.plot(*zip(*seconds_curve(run, curve), strict=True), marker=".", label=label)
by_seconds.plot(*zip(*cfr_curve, strict=True), "k--", marker="o", label="CFR+ (exact solver)")
by_decisions.set_xlabel("learner decisions")
by_seconds.set_xlabel("seconds")
by_seconds.set_xscale("log")
by_decisions.set_ylabel("exact exploitability")
for ax in (by_decisions, by_seconds):
    ax.set_yscale("log")
    ax.legend(fontsize=8)
fig.tight_layout()

# %%
# Questions (not graded by the check)
# -----------------------------------
#
# 1. The league run wins against ``probabilistic`` and ``bayes``. Why is it still the most
#    exploitable of the three? What does a best response do against it?
# 2. Plot ``plain self-play`` with every checkpoint: does it decrease steadily? Why not?
# 3. Which of your settings matters most? Change one at a time.
# 4. CFR+ needs the whole game tree; PPO only samples games. On which games would you
#    still choose PPO?

# %%
# The check
# ---------

check_lab("ppo", globals())
