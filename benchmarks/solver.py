"""Exploitability against wall time: our solver and OpenSpiel's C++ CFR+, in one run.

OpenSpiel's ``liars_dice`` (1 die each, 6 sides, ``reset-face`` bidding) has the highest
face wild and bids of it allowed; none of our rule sets counts that way. Its public tree
is exactly that of our ``ones_not_wild`` preset at 2 players and 1 die (every rising
sequence of the 12 bids, then a challenge), which only counts differently, so we time
that, and our ``perudo`` 1-die game too. For each we time CFR+ (our vectorized
:class:`~liars_env.solver.RoundSolver`) and the exact sequence-form LP, and report the
time each needs to reach the exploitability OpenSpiel's CFR+ ends at, and the ratio.
Exploitability checks are not counted in either side's time.

Run: ``python benchmarks/solver.py [--iterations 200] [--out bench.json]``
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from liars_env.rules import PRESETS
from liars_env.solver import RoundSolver, round_states, solve

CHECKPOINTS = (1, 2, 5, 10, 20, 50, 100, 150, 200, 300, 400, 600, 800, 1000)


def openspiel_curve(iterations: int) -> list[tuple[int, float, float]]:
    """``(iterations, solve seconds, exploitability)`` of ``pyspiel.CFRPlusSolver``."""
    import pyspiel

    game = pyspiel.load_game("liars_dice", {"numdice": 1, "dice_sides": 6})
    solver = pyspiel.CFRPlusSolver(game)
    curve, spent, done = [], 0.0, 0
    for target in [c for c in CHECKPOINTS if c <= iterations]:
        start = time.perf_counter()
        for _ in range(target - done):
            solver.evaluate_and_update_policy()
        spent += time.perf_counter() - start
        done = target
        curve.append((done, spent, pyspiel.exploitability(game, solver.average_policy())))
        print(f"  openspiel  {done:5d} it  {spent:7.2f}s  exploitability {curve[-1][2]:.5f}")
    return curve


def our_curve(preset: str, iterations: int) -> list[tuple[int, float, float]]:
    """The same for our CFR+ on ``preset`` at 2 players, 1 die (6 faces)."""
    rules = PRESETS[preset].with_options(num_players=2, dice_per_player=1)
    start, trees = round_states(rules)
    tree = trees[start]  # with one die a round ends the game: one round state
    m0 = tree.payoffs(lambda kind, key: (1.0 if key == 0 else -1.0) if kind == "end" else 0.0)
    solver = RoundSolver(tree, m0)
    curve, spent = [], 0.0
    for target in [c for c in CHECKPOINTS if c <= iterations]:
        t0 = time.perf_counter()
        solver.iterate(target - solver.iterations)
        spent += time.perf_counter() - t0
        curve.append((target, spent, solver.exploitability()))
        print(f"  {preset:10s} {target:5d} it  {spent:7.2f}s  exploitability {curve[-1][2]:.5f}")
    return curve


def time_to(curve: list[tuple[int, float, float]], level: float) -> float | None:
    """Seconds until the curve's exploitability is at most ``level`` (None: never)."""
    return next((sec for _, sec, expl in curve if expl <= level), None)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--iterations", type=int, default=200, help="OpenSpiel CFR+ iterations")
    parser.add_argument("--ours", type=int, default=1000, help="our CFR+ iterations")
    parser.add_argument("--out", help="write the curves as JSON here")
    args = parser.parse_args()

    print("OpenSpiel C++ CFRPlusSolver on pyspiel liars_dice (1 die, 6 sides):")
    theirs = openspiel_curve(args.iterations)
    target = theirs[-1][2]
    results = {"openspiel": theirs, "target": target}
    print(f"\ntarget: OpenSpiel's final exploitability {target:.5f} in {theirs[-1][1]:.2f}s")
    for preset in ("ones_not_wild", "perudo"):
        print(f"\nours, CFR+ on {preset} (2 players, 1 die, 6 faces):")
        curve = our_curve(preset, args.ours)
        rules = PRESETS[preset].with_options(num_players=2, dice_per_player=1)
        lp = solve(rules, method="lp")
        ours = time_to(curve, target)
        results[preset] = {
            "cfr+": curve,
            "lp_seconds": lp.seconds,
            "lp_exploitability": lp.exploitability,
        }
        print(f"  LP: exploitability {lp.exploitability:.1e} in {lp.seconds:.2f}s (with its check)")
        if ours is None:
            print(f"  CFR+ did not reach {target:.5f} in {args.ours} iterations")
            continue
        print(
            f"  reaching {target:.5f}: ours {ours:.2f}s vs OpenSpiel {theirs[-1][1]:.2f}s, "
            f"{theirs[-1][1] / ours:.0f}x faster by CFR+, {theirs[-1][1] / lp.seconds:.0f}x by LP"
        )
        results[preset]["speedup_cfr+"] = theirs[-1][1] / ours
        results[preset]["speedup_lp"] = theirs[-1][1] / lp.seconds
    if args.out:
        Path(args.out).write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
