"""Exploitability against wall time: our solver and OpenSpiel's C++ CFR+, in one run.

Both solve the same game: OpenSpiel's ``liars_dice`` (2 players, 1 die each, F sides,
``reset-face`` bidding) is our ``openspiel_liars_dice`` preset. For each F we run
OpenSpiel's ``pyspiel.CFRPlusSolver`` and our CFR+ (the vectorized
:class:`~liars_env.solver.RoundSolver` on the game's one round) for the same iteration
checkpoints, and our exact sequence-form LP, and report the time each needs to reach the
exploitability OpenSpiel's CFR+ ends at, and the ratio. Exploitability checks are not
counted in either side's time. Both run CFR+ with alternating updates and linear
averaging, so their iterates (and exploitability curves) agree; only the time differs.

Run: ``python benchmarks/solver.py [--faces 4 6] [--iterations 200] [--out bench.json]``
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from liars_env.rules import RuleSet
from liars_env.solver import RoundSolver, round_states, solve

CHECKPOINTS = (1, 2, 5, 10, 20, 50, 100, 150, 200, 300, 400, 600, 800, 1000)


def openspiel_curve(faces: int, iterations: int) -> list[tuple[int, float, float, float]]:
    """``(iterations, solve seconds, exploitability, player 0's value)`` of OpenSpiel's CFR+."""
    import pyspiel

    game = pyspiel.load_game("liars_dice", {"numdice": 1, "dice_sides": faces})
    solver = pyspiel.CFRPlusSolver(game)
    curve, spent, done = [], 0.0, 0
    for target in [c for c in CHECKPOINTS if c <= iterations]:
        start = time.perf_counter()
        for _ in range(target - done):
            solver.evaluate_and_update_policy()
        spent += time.perf_counter() - start
        done = target
        average = solver.average_policy()
        expl = pyspiel.exploitability(game, average)
        value = pyspiel.expected_returns(game.new_initial_state(), average, -1, True)[0]
        curve.append((done, spent, expl, value))
        print(f"  openspiel  {done:5d} it  {spent:7.2f}s  exploitability {expl:.6f}")
    return curve


def our_curve(rules: RuleSet, iterations: int) -> list[tuple[int, float, float, float]]:
    """The same for our CFR+ on ``rules`` (one round: a call ends the game)."""
    start, trees = round_states(rules)
    tree = trees[start]
    m0 = tree.payoffs(lambda kind, key: (1.0 if key == 0 else -1.0) if kind == "end" else 0.0)
    solver = RoundSolver(tree, m0)
    curve, spent = [], 0.0
    for target in [c for c in CHECKPOINTS if c <= iterations]:
        t0 = time.perf_counter()
        solver.iterate(target - solver.iterations)
        spent += time.perf_counter() - t0
        curve.append((target, spent, solver.exploitability(), solver.value()))
        print(f"  ours       {target:5d} it  {spent:7.2f}s  exploitability {curve[-1][2]:.6f}")
    return curve


def time_to(curve: list[tuple[int, float, float, float]], level: float) -> float | None:
    """Seconds until the curve's exploitability is at most ``level`` (None: never).

    Up to a relative 1e-9: both solvers' iterates are the same, but their floats may
    differ in the last bits.
    """
    return next((sec for _, sec, expl, _ in curve if expl <= level * (1 + 1e-9)), None)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--faces", type=int, nargs="+", default=[4, 6], help="die faces F")
    parser.add_argument("--iterations", type=int, default=200, help="OpenSpiel CFR+ iterations")
    parser.add_argument("--ours", type=int, default=1000, help="our CFR+ iterations")
    parser.add_argument("--out", help="write the curves as JSON here")
    args = parser.parse_args()

    results = {}
    for faces in args.faces:
        print(f"\nOpenSpiel C++ CFRPlusSolver on pyspiel liars_dice (1 die, {faces} sides):")
        theirs = openspiel_curve(faces, args.iterations)
        target = theirs[-1][2]
        rules = RuleSet.preset("openspiel_liars_dice", faces=faces)
        print(f"ours, CFR+ on openspiel_liars_dice 1x{faces}:")
        curve = our_curve(rules, args.ours)
        lp = solve(rules, method="lp")
        ours = time_to(curve, target)
        row = {
            "openspiel": theirs,
            "target": target,
            "cfr+": curve,
            "lp_seconds": lp.seconds,
            "lp_value": lp.value,
            "lp_exploitability": lp.exploitability,
        }
        results[f"1x{faces}"] = row
        print(
            f"  LP: value {lp.value:+.6f}, exploitability {lp.exploitability:.1e} in "
            f"{lp.seconds:.2f}s (with its check); OpenSpiel's CFR+ value {theirs[-1][3]:+.6f}"
        )
        if ours is None:
            print(f"  our CFR+ did not reach {target:.6f} in {args.ours} iterations")
            continue
        row["speedup_cfr+"] = theirs[-1][1] / ours
        row["speedup_lp"] = theirs[-1][1] / lp.seconds
        print(
            f"  reaching {target:.6f}: ours {ours:.2f}s vs OpenSpiel {theirs[-1][1]:.2f}s, "
            f"{row['speedup_cfr+']:.0f}x faster by CFR+, {row['speedup_lp']:.0f}x by the LP"
        )
        same = {it: (sec, expl) for it, sec, expl, _ in curve}.get(theirs[-1][0])
        if same is not None:
            row["same_iterations"] = [theirs[-1][0], same[0], same[1]]
            print(
                f"  at {theirs[-1][0]} iterations: exploitability {same[1]:.6f} (OpenSpiel "
                f"{target:.6f}) in {same[0]:.2f}s, {theirs[-1][1] / same[0]:.0f}x faster"
            )
    if args.out:
        Path(args.out).write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
