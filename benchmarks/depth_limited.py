"""Latency of one depth-limited re-solve at a round of any size (the call leaf).

At each of a round's first decisions (a fixed line of bids), builds the round's head
``depth`` bids below the node (:meth:`RoundTree.head`), puts it behind the opponent's
re-solving gadget (stopping values: the call leaf's values at the node, from the
chance ranges) and runs CFR+ with the call leaf at its leaves; prints the median and
the largest time per decision, tree building and call settling included. The next
rounds are valued by a stand-in (the dice difference, not a solve), which does not
change the cost. This measures the solve that ``SubgameResolver(depth=N)`` runs per
decision; that class itself still needs the whole game's round trees, so it does not
play 5x5 yet.

With ``--exploit DEPTH:LEAF ...`` (``full:call`` for full depth) it prints instead the
exact exploitability of ``SubgameResolver(belief, depth=DEPTH, leaf=LEAF)`` on a game
the solver builds (seat 0's tables, as ``tests/test_resolve.py`` measures).

Usage:
    python benchmarks/depth_limited.py --dice 5 --faces 6 --depths 1 2 3 --iterations 100
    python benchmarks/depth_limited.py --dice 1 --faces 4 --exploit full:call 2:exact
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

from liars_env import LiarsDiceGame, RuleSet
from liars_env.solver.best_response import opener_payoff
from liars_env.solver.cfr import RoundSolver
from liars_env.solver.graph import RoundTree, start_state
from liars_env.solver.leaves import CallLeaf
from liars_env.solver.resolve import Leaves, subtree, with_gadget


class _Guess(dict):
    """A stand-in round value: the opener's share of the dice, centred."""

    def get(self, key, default=None):
        return (key.opener_dice - key.responder_dice) / (key.opener_dice + key.responder_dice)


def decision_seconds(game, key, bids, depth, iterations):
    """Seconds for one depth-limited solve at the node ``bids`` reach."""
    t = time.perf_counter()
    actor = len(bids) % 2
    head = RoundTree.head(game, key, bids[-1] if bids else -1, actor, depth)
    m = head.payoffs(opener_payoff(_Guess()))
    probs = head.probs
    sub = subtree(head, 0, 0, probs, leaf=CallLeaf())
    if bids:
        leaves = Leaves(
            key,
            head,
            np.array([bids[-1]]),
            actor,
            (probs[0][None], probs[1][None]),
            m,
            (1 - actor,),
            (-1, np.array([0])),
            {},
        )
        stop = CallLeaf()(leaves)[1 - actor][0]
        tree, m = with_gadget(sub, 1 - actor, stop, probs[1 - actor], m)
    else:
        tree = sub
    solver = RoundSolver(tree, m)
    solver.iterate(iterations)
    solver.average()
    return time.perf_counter() - t


def exploitability(rules, specs, iterations):
    """Prints the exact exploitability of each ``DEPTH:LEAF`` re-solver on ``rules``."""
    from liars_env.agents import make_agent
    from liars_env.solver import exploit
    from liars_env.solver.resolve import SubgameResolver

    for spec in specs:
        depth, _, leaf = spec.partition(":")
        start = time.perf_counter()
        resolver = SubgameResolver(
            make_agent("belief", rules),
            rules,
            iterations=iterations,
            depth=None if depth == "full" else int(depth),
            leaf=leaf or "call",
        )
        value = exploit(resolver, rules, seats=(0,)).exploitability
        print(
            f"{rules.dice_per_player}x{rules.faces} depth={depth} leaf={leaf}: "
            f"exploitability {value:.4f} ({time.perf_counter() - start:.0f} s)",
            flush=True,
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dice", type=int, default=5)
    parser.add_argument("--faces", type=int, default=6)
    parser.add_argument("--preset", default="perudo")
    parser.add_argument("--depths", type=int, nargs="+", default=[1, 2, 3])
    parser.add_argument("--iterations", type=int, default=100)
    parser.add_argument("--decisions", type=int, default=5)
    parser.add_argument("--exploit", nargs="*", default=None, metavar="DEPTH:LEAF")
    args = parser.parse_args()
    rules = RuleSet.preset(args.preset, num_players=2, dice_per_player=args.dice, faces=args.faces)
    if args.exploit is not None:
        exploitability(rules, args.exploit, args.iterations)
        return
    game = LiarsDiceGame(rules)
    key = start_state(rules)
    codec = game.codec
    # a plausible opening line: each bid one more die of the next face up
    line, quantity, face = [], 1, 2
    for _ in range(args.decisions - 1):
        line.append(codec.encode_bid(quantity, face))
        quantity, face = quantity + 1, face % rules.faces + 1 if face < rules.faces else 2
    for depth in args.depths:
        times = [
            decision_seconds(game, key, tuple(line[:k]), depth, args.iterations)
            for k in range(args.decisions)
        ]
        print(
            f"{args.preset} {args.dice}x{args.faces} depth={depth} leaf=call "
            f"iterations={args.iterations}: median {statistics.median(times):.2f} s, "
            f"max {max(times):.2f} s per decision over {len(times)}",
            flush=True,
        )


if __name__ == "__main__":
    main()
