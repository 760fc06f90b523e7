"""Training meets the solver: exact exploitability of PPO self-play on a tiny game.

Trains our PPO on 2-player, 1-die, 6-face Perudo with each recipe asked for (``self-play``:
``self_play=1``, no league; ``league``: the league recipe of the shipped models, a fifth
of the games against the current policy and the rest against the bots and frozen
snapshots, opponents drawn by PFSP), keeping every checkpoint, then measures each
checkpoint's exact exploitability with :func:`liars_env.solver.exploit` (a best response
computed against its action probabilities at every information state). Beside it, the
solver's own CFR+ curve: exploitability against wall time. Writes a two-panel PNG and
the numbers as JSON.

Run: ``python benchmarks/solver_vs_training.py [--steps 300000] [--recipes self-play league]
[--plot FILE.png]``
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

from liars_env.agents.checkpoint import CheckpointAgent
from liars_env.rules import PRESETS
from liars_env.solver import RoundSolver, exploit, round_states
from liars_train import ppo

RULE_OVERRIDES = {"dice_per_player": 1}


RECIPES = {
    "self-play": ["self_play=1.0", "league=[]", "pool_size=0"],
    "league": [
        "self_play=0.2",
        "league=[probabilistic, bayes, belief]",
        "pool_size=5",
        "snapshot_every=5",
        "pfsp_power=3.0",
    ],
}
"""Opponent settings of each training recipe (on top of the shared ones in :func:`train`)."""


def train(steps: int, runs_dir: str, every: int, seed: int, recipe: str = "self-play") -> Path:
    """Trains PPO with ``recipe``; returns the folder of its checkpoints."""
    args = ppo.load_args(
        sets=[
            "rules=perudo",
            "num_players=2",
            f"rule_overrides={json.dumps(RULE_OVERRIDES)}",
            f"total_steps={steps}",
            "num_envs=64",
            "num_steps=16",
            "hidden_size=64",
            *RECIPES[recipe],
            "eval_opponents=[probabilistic]",
            "eval_every=1000000",
            "eval_games=50",
            "final_eval_games=50",
            f"checkpoint_every={every}",
            "keep_checkpoints=100000",
            f"seed={seed}",
            f"runs_dir={runs_dir}",
            f"run_name=solver_vs_training_{recipe}",
            "progress=false",
        ]
    )
    ppo.Trainer(args).train()
    return Path(runs_dir) / f"solver_vs_training_{recipe}" / "checkpoints"


def training_curve(ckpt_dir: Path) -> list[tuple[int, float]]:
    """``(learner decisions, exact exploitability)`` of every checkpoint."""
    rules = PRESETS["perudo"].with_options(num_players=2, **RULE_OVERRIDES)
    _, trees = round_states(rules)
    curve = []
    for path in sorted(p for p in ckpt_dir.glob("step_*") if p.is_dir()):
        agent = CheckpointAgent.load(path, rules)
        # observations are seat-relative, so one seat stands for both
        result = exploit(agent, rules, trees=trees, seats=(0,))
        step = int(path.name.split("_")[1])
        curve.append((step, result.exploitability))
        print(f"  {step:8d} decisions  exploitability {result.exploitability:.4f}")
    return curve


def solver_curve(iterations: int) -> list[tuple[float, float]]:
    """``(seconds, exploitability)`` of our CFR+ on the same game."""
    rules = PRESETS["perudo"].with_options(num_players=2, **RULE_OVERRIDES)
    start, trees = round_states(rules)
    tree = trees[start]
    m0 = tree.payoffs(lambda kind, key: (1.0 if key == 0 else -1.0) if kind == "end" else 0.0)
    solver = RoundSolver(tree, m0)
    curve, spent = [], 0.0
    for target in (1, 2, 5, 10, 20, 50, 100, 200, 400, 700, 1000):
        if target > iterations:
            break
        t0 = time.perf_counter()
        solver.iterate(target - solver.iterations)
        spent += time.perf_counter() - t0
        curve.append((spent, solver.exploitability()))
    return curve


def plot(training: dict[str, list], solver: list, path: str) -> None:
    """Two panels: PPO against decisions, CFR+ against seconds (log exploitability)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (left, right) = plt.subplots(1, 2, figsize=(9, 3.4), dpi=90)
    for (recipe, curve), colour in zip(training.items(), ("tab:blue", "tab:orange"), strict=False):
        left.plot(*zip(*curve, strict=True), marker="o", color=colour, label=f"PPO {recipe}")
    left.legend(fontsize=8)
    left.set(
        xlabel="learner decisions",
        ylabel="exploitability",
        yscale="log",
        title="PPO (exact best response)",
    )
    left.ticklabel_format(axis="x", style="sci", scilimits=(3, 3))
    right.plot(*zip(*solver, strict=True), marker="o", color="tab:green")
    right.set(xlabel="seconds", xscale="log", yscale="log", title="solver: CFR+")
    for ax in (left, right):
        ax.axhline(1e-3, color="grey", lw=0.8, ls="--")
        ax.grid(alpha=0.3)
    fig.suptitle("2-player Perudo, 1 die, 6 faces", fontsize=10)
    fig.tight_layout()
    fig.savefig(path)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=300_000, help="learner decisions")
    parser.add_argument("--every", type=int, default=30, help="updates between checkpoints")
    parser.add_argument("--iterations", type=int, default=1000, help="solver CFR+ iterations")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--recipes", nargs="+", choices=sorted(RECIPES), default=["self-play", "league"]
    )
    parser.add_argument("--runs-dir", help="where the run goes (default: a temporary folder)")
    parser.add_argument("--plot", default="solver_vs_training.png")
    parser.add_argument("--out", help="write the curves as JSON here")
    args = parser.parse_args()

    training = {}
    with tempfile.TemporaryDirectory() as tmp:
        for recipe in args.recipes:
            t0 = time.perf_counter()
            ckpts = train(args.steps, args.runs_dir or tmp, args.every, args.seed, recipe)
            print(f"{recipe}: trained {args.steps} decisions in {time.perf_counter() - t0:.0f}s")
            training[recipe] = training_curve(ckpts)
    solver = solver_curve(args.iterations)
    plot(training, solver, args.plot)
    print(f"wrote {args.plot}")
    if args.out:
        Path(args.out).write_text(json.dumps({"training": training, "solver": solver}, indent=2))


if __name__ == "__main__":
    main()
