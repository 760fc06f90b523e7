"""Solving the whole game: every round from the end backwards; the :class:`Solution`."""

from __future__ import annotations

import importlib.util
import json
import os
import tempfile
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from liars_env.engine import LiarsDiceGame
from liars_env.rules import RuleSet
from liars_env.solver.best_response import best_response_values, opener_payoff
from liars_env.solver.cfr import RoundSolver
from liars_env.solver.graph import RoundState, RoundTree, _components, _longest_path, round_states
from liars_env.solver.lp import LP_MAX_CELLS, solve_round_lp

METHODS = ("auto", "lp", "cfr+")
"""Ways to solve a round: the exact sequence-form LP, CFR+ iterations, or ``auto``: the
LP for rounds of at most :data:`LP_MAX_CELLS` edge-hand cells, CFR+ for larger ones."""


SOLVER_VERSION = 1
"""Bumped when a change makes cached solutions stale."""


@dataclass
class Solution:
    """An equilibrium of a whole 2-player game and its exact exploitability.

    Attributes:
        rules: The variant.
        value: Expected return of the first round's opener at the equilibrium (of
            ``player_0`` under ``first_opener="player_0"``).
        exploitability: NashConv / 2 of the strategy, by an exact best response.
        iterations: CFR+ iterations run, summed over the round states.
        seconds: Wall time of the solve (exploitability included).
        start: The first round's state.
        strategies: Per round state, per depth, the actor's ``prob[edge, hand]``.
        values: Per round state, the opener's expected return.
        trace: ``(iterations, seconds, round exploitability)`` points of the first
            round's solve, for convergence plots.
    """

    rules: RuleSet
    value: float
    exploitability: float
    iterations: int
    seconds: float
    start: RoundState
    strategies: dict[RoundState, list[np.ndarray]]
    values: dict[RoundState, float]
    trace: list[tuple[int, float, float]] = field(default_factory=list)
    _trees: dict[RoundState, RoundTree] = field(default_factory=dict, repr=False)

    def tree(self, key: RoundState) -> RoundTree:
        """The public tree of a round state (rebuilt on first use after loading)."""
        if key not in self._trees:
            self._trees[key] = RoundTree(LiarsDiceGame(self.rules), key)
        return self._trees[key]

    def trees(self) -> dict[RoundState, RoundTree]:
        """The public tree of every round state."""
        return {k: self.tree(k) for k in self.strategies}

    def to_dict(self) -> dict[str, Any]:
        """The summary as a JSON-able dict (no strategies)."""
        return {
            "rules": self.rules.to_dict(),
            "value": self.value,
            "exploitability": self.exploitability,
            "iterations": self.iterations,
            "seconds": self.seconds,
            "round_states": len(self.strategies),
            "round_values": {k.label(): v for k, v in self.values.items()},
        }

    # -------------------------------------------------------------- files
    def save(self, path: str | Path) -> Path:
        """Writes the solution as ``.npz`` (no pickles), atomically (temp file, rename)."""
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        keys = list(self.strategies)
        meta = {
            "version": SOLVER_VERSION,
            "rules": self.rules.to_dict(),
            "value": self.value,
            "exploitability": self.exploitability,
            "iterations": self.iterations,
            "seconds": self.seconds,
            "start": list(self.start),
            "keys": [list(k) for k in keys],
            "values": [self.values[k] for k in keys],
            "depths": [len(self.strategies[k]) for k in keys],
        }
        arrays = {"meta": np.array(json.dumps(meta))}
        for i, key in enumerate(keys):
            for d, probs in enumerate(self.strategies[key]):
                arrays[f"s{i}_{d}"] = probs
        write_npz(path, arrays, compressed=True)
        return path

    @classmethod
    def load(cls, path: str | Path, rules: RuleSet | None = None) -> Solution:
        """Reads :meth:`save` output; ``rules``, if given, must match the file's.

        Raises:
            ValueError: if the file is from another solver version or other rules.
        """
        with np.load(path, allow_pickle=False) as data:
            meta = json.loads(str(data["meta"]))
            if meta.get("version") != SOLVER_VERSION:
                raise ValueError(
                    f"{path}: solver version {meta.get('version')}, expected {SOLVER_VERSION}"
                )
            saved = RuleSet.from_dict(meta["rules"])
            if rules is not None and saved != rules:
                raise ValueError(f"{path} solves {saved}, not {rules}")
            keys = [RoundState(*k) for k in meta["keys"]]
            strategies = {
                k: [data[f"s{i}_{d}"] for d in range(meta["depths"][i])] for i, k in enumerate(keys)
            }
        return cls(
            rules=saved,
            value=meta["value"],
            exploitability=meta["exploitability"],
            iterations=meta["iterations"],
            seconds=meta["seconds"],
            start=RoundState(*meta["start"]),
            strategies=strategies,
            values=dict(zip(keys, meta["values"], strict=True)),
        )

    # -------------------------------------------------------------- play
    def probabilities(self, key: RoundState, role: int, bids: Iterable[int], hand) -> np.ndarray:
        """The equilibrium's action probabilities (length ``num_actions``).

        Args:
            key: The round state.
            role: 0 for the opener, 1 for the responder.
            bids: This round's bid ids so far.
            hand: The acting player's dice.
        """
        tree = self.tree(key)
        d, node = tree.node_of(bids)
        depth = tree.depths[d]
        if depth.actor != role:
            raise ValueError(f"role {role} does not act after bids {list(bids)}")
        h = tree.hand_index[role][tuple(sorted(hand))]
        lo = depth.starts[node]
        hi = lo + depth.num_actions[node]
        out = np.zeros(tree.game.codec.num_actions)
        out[depth.action[lo:hi]] = self.strategies[key][d][lo:hi, h]
        return out


def solve(
    rules: RuleSet,
    *,
    iterations: int = 2000,
    tolerance: float = 1e-4,
    check_every: int = 25,
    max_sweeps: int = 200,
    method: str = "auto",
    progress: Callable[[str], None] | None = None,
) -> Solution:
    """Computes an equilibrium of the whole game by CFR+ on each round state.

    Args:
        rules: A 2-player rule set small enough (see the module docstring).
        iterations: Most CFR+ iterations per round state (per sweep when states repeat).
        tolerance: Stop a round once its own exploitability is below ``tolerance``
            divided by the most rounds a game can take.
        check_every: Iterations between those checks (grows by half each check).
        max_sweeps: Most fixed-point sweeps over repeating round states (calza).
        method: ``"lp"`` (exact sequence-form LP per round, :func:`solve_round_lp`),
            ``"cfr+"`` (iterative, :class:`RoundSolver`) or ``"auto"`` (see
            :data:`METHODS`).
        progress: Called with a line of text after each round state is solved.

    Returns:
        The :class:`Solution`, its exploitability computed by an exact best response.

    Raises:
        ValueError: for unsupported rules, a round too large, or bad arguments.

    Example:
        >>> rules = RuleSet(num_players=2, dice_per_player=1, faces=3, ones="natural")
        >>> s = solve(rules)  # the exact LP
        >>> s.exploitability < 1e-9, round(s.value * 9, 6)
        (True, -1.0)
    """
    if type(iterations) is not int or iterations < 1:
        raise ValueError(f"iterations must be a positive int, got {iterations!r}")
    if not isinstance(tolerance, (int, float)) or not tolerance > 0:
        raise ValueError(f"tolerance must be a positive number, got {tolerance!r}")
    if method not in METHODS:
        raise ValueError(f"method must be one of {', '.join(METHODS)}, got {method!r}")
    t0 = time.perf_counter()
    start, trees = round_states(rules)
    per_round = tolerance / _longest_path(trees, start)
    values: dict[RoundState, float] = {}
    solvers: dict[RoundState, RoundSolver] = {}
    strategies: dict[RoundState, list[np.ndarray]] = {}
    trace: list[tuple[int, float, float]] = []
    total_iterations = 0
    for comp in _components(trees):
        repeats = len(comp) > 1 or comp[0] in trees[comp[0]].successors()
        for _sweep in range(max_sweeps if repeats else 1):
            change = 0.0
            for key in comp:
                m0 = trees[key].payoffs(opener_payoff(values))
                if _use_lp(method, trees[key]):
                    strategies[key], new = solve_round_lp(trees[key], m0)
                    how = "LP"
                else:
                    if key in solvers:
                        solvers[key].set_payoff(m0)
                    else:
                        solvers[key] = RoundSolver(trees[key], m0)
                    rec = trace if key == start else None
                    n = _run(solvers[key], iterations, per_round, check_every, rec, t0)
                    total_iterations += n
                    new = solvers[key].value()
                    how = f"{n} CFR+ iterations"
                change = max(change, abs(new - values.get(key, 0.0)))
                values[key] = new
                if progress:
                    progress(f"{key.label()}: value {new:+.6f} ({how})")
            if change < per_round / 10:
                break
    strategies.update({k: s.average() for k, s in solvers.items()})
    sol = Solution(
        rules=rules,
        value=values[start],
        exploitability=float("nan"),
        iterations=total_iterations,
        seconds=0.0,
        start=start,
        strategies=strategies,
        values=values,
        trace=trace,
        _trees=trees,
    )
    br = best_response_values(trees, lambda key, role: strategies[key])
    # NashConv / 2 whoever opens first: both seats play the same strategy per role, so a
    # best response against either seat meets each role once, random opener or not
    sol.exploitability = 0.5 * (br[start][0] + br[start][1])
    sol.seconds = time.perf_counter() - t0
    return sol


def _use_lp(method: str, tree: RoundTree) -> bool:
    if method != "auto":
        return method == "lp"
    if importlib.util.find_spec("scipy") is None:  # the LP needs scipy; CFR+ does not
        return False
    return tree.size[1] * max(len(h) for h in tree.hands) <= LP_MAX_CELLS


def _run(
    solver: RoundSolver,
    iterations: int,
    tolerance: float,
    check_every: int,
    trace: list | None,
    t0: float,
) -> int:
    """Iterates one round until its exploitability is below ``tolerance``."""
    done = 0
    step = check_every
    while done < iterations:
        n = min(step, iterations - done)
        solver.iterate(n)
        done += n
        expl = solver.exploitability()
        if trace is not None:
            trace.append((solver.iterations, time.perf_counter() - t0, expl))
        if expl < tolerance:
            break
        step = max(check_every, int(step * 1.5))
    return done


def write_npz(path: Path, arrays: dict[str, np.ndarray], compressed: bool = False) -> None:
    """Writes ``arrays`` to ``path`` as ``.npz`` atomically (temp file beside it, rename)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name, suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            (np.savez_compressed if compressed else np.savez)(fh, **arrays)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
