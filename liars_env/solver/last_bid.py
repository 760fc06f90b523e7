"""CFR+ on the last-bid abstraction of every round: a blueprint for any dice count.

A round's public tree holds every sequence of rising bids, about ``2 ** B`` nodes for
``B`` bids: 2 × 5 dice of 6 faces have 60 bids, far beyond any exact solve. In the
*last-bid abstraction* a player decides from its own hand and the bid standing only,
forgetting the bids before it (an imperfect-recall abstraction, as in Lanctot et al.,
"No-Regret Learning in Extensive-Form Games with Imperfect Recall", ICML 2012, whose
test game was Bluff, i.e. Liar's Dice). The rest of the round below a bid is then the
same whatever led to it, so the round becomes a graph of ``2 (B + 1)`` public nodes
(the bid standing, whose turn it is) and CFR+ runs on it in time linear in its edges:

* forward, each player's reach of every node, summed over the bid sequences into it;
* backward, ``W[node, hand0, hand1]``, the opener's expected payoff from a node on
  (the same for every sequence into it), and each action's counterfactual value for the
  player to move: ``W`` of the child against the other player's summed reach.

These are exactly the counterfactual values of the abstraction's information sets (the
other player's reach summed over the sequences each set holds), so the regrets are
those of CFR on the abstract game. CFR has no convergence guarantee under imperfect
recall; what the abstraction costs is measured, not assumed: the exact exploitability
of its strategy in the real game is measured on the games small enough to solve (see
``docs/strength.md``), and the local best response bounds it at five dice.

The whole game is a ladder of rounds (the payoffs of a round are the values of the
rounds that follow), solved from the last rounds back as :mod:`~liars_env.solver.solution`
does, each round's value for its opener under its blueprint.

A 5 × 5 round has 252 × 252 hand pairs and 122 nodes: ``W`` is 31 MB in float32 and one
CFR+ iteration touches each of its 3,600 edges' 63,504 hand pairs twice (compiled with
numba, a second or so).
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
import time
import zipfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from liars_env.engine import LiarsDiceGame
from liars_env.rules import RuleSet
from liars_env.solver.best_response import _sweep, opener_payoff
from liars_env.solver.graph import RoundState, RoundTree, check_supported, hands_of, start_state

try:  # numba is a dependency of the package; plain Python runs the same loops (slowly)
    from numba import njit
except ImportError:  # pragma: no cover

    def njit(*args, **kwargs):
        """Identity decorator standing in for numba's."""
        return args[0] if args and callable(args[0]) else (lambda f: f)


@njit(cache=True)
def _forward(order, legal_bids, nbids, sigma0, sigma1, reach0, reach1):  # pragma: no cover
    """Each player's reach of every node, summed over the bid sequences into it."""
    reach0[:] = 0.0
    reach1[:] = 0.0
    reach0[0, 0, :] = 1.0
    reach1[0, 0, :] = 1.0
    for k in range(order.shape[0]):
        row = order[k]
        for a in range(2):
            if a == 1 and row == 0:
                continue
            for j in range(nbids[a, row]):
                x = legal_bids[a, row, j]
                child = x + 1
                if a == 0:
                    for h in range(reach0.shape[2]):
                        reach0[1, child, h] += reach0[0, row, h] * sigma0[row, h, x]
                    for h in range(reach1.shape[2]):
                        reach1[1, child, h] += reach1[0, row, h]
                else:
                    for h in range(reach1.shape[2]):
                        reach1[0, child, h] += reach1[1, row, h] * sigma1[row, h, x]
                    for h in range(reach0.shape[2]):
                        reach0[0, child, h] += reach0[1, row, h]


@njit(cache=True)
def _backward(
    order, legal, ttype, m0, sigma0, sigma1, reach0, reach1, p0, p1, total, q0, q1, who
):  # pragma: no cover
    """``total = W`` of every node, and the counterfactual action values of ``who``'s nodes.

    ``q0[row, h0, x]`` is the opener's value of action ``x`` at its node ``row`` against
    the responder's summed reach; ``q1`` the responder's (its payoff: the negative).
    """
    n0, n1 = p0.shape[0], p1.shape[0]
    num_actions = legal.shape[2]
    num_bids = total.shape[1] - 1
    w = np.empty(max(n0, n1))
    for k in range(order.shape[0] - 1, -1, -1):
        row = order[k]
        for a in range(2):
            if a == 1 and row == 0:
                continue
            out = total[a, row]
            out[:] = 0.0
            if a == 0:
                for h in range(n1):
                    w[h] = p1[h] * reach1[0, row, h]
            else:
                for h in range(n0):
                    w[h] = p0[h] * reach0[1, row, h]
            for x in range(num_actions):
                if not legal[a, row, x]:
                    continue
                values = total[1 - a, x + 1] if x < num_bids else m0[ttype[a, row, x]]
                if a == 0:
                    for i in range(n0):
                        s = sigma0[row, i, x]
                        acc = 0.0
                        for j in range(n1):
                            v = values[i, j]
                            acc += v * w[j]
                            out[i, j] += s * v
                        if who == 0:
                            q0[row, i, x] = acc
                else:
                    if who == 1:
                        for j in range(n1):
                            q1[row, j, x] = 0.0
                    for i in range(n0):
                        wi = w[i]
                        for j in range(n1):
                            v = values[i, j]
                            out[i, j] += sigma1[row, j, x] * v
                            if who == 1:
                                q1[row, j, x] -= wi * v


def _regret_matching(regret: np.ndarray, legal: np.ndarray) -> np.ndarray:
    """The current strategy ``[row, hand, action]`` of positive regrets (uniform where none)."""
    positive = np.maximum(regret, 0.0) * legal[:, None, :]
    total = positive.sum(axis=2, keepdims=True)
    uniform = np.broadcast_to(
        legal[:, None, :] / np.maximum(legal.sum(axis=1), 1)[:, None, None], positive.shape
    )
    return np.where(total > 0, positive / np.where(total > 0, total, 1.0), uniform)


@dataclass
class AbstractRound:
    """One round's last-bid graph: its nodes' legal actions and every call's payoff type.

    Node ``(actor, row)``: ``actor`` (0: the opener) to move after bid ``row - 1`` (row 0:
    the round's first bid, the opener's only).

    Attributes:
        tree: A one-bid head of the round (hands, chance and call settling).
        legal: ``legal[actor, row, action]``.
        ttype: Each call's type in ``tree`` (``-1``: a bid or illegal).
        order: The rows in an order where every bid's rows come after its parents'.
    """

    tree: RoundTree
    legal: np.ndarray
    ttype: np.ndarray
    order: np.ndarray
    legal_bids: np.ndarray = field(init=False)
    nbids: np.ndarray = field(init=False)

    def __post_init__(self) -> None:
        num_bids = self.tree.num_bids
        bids = self.legal[:, :, :num_bids]
        self.nbids = bids.sum(axis=2).astype(np.int64)
        self.legal_bids = np.zeros((2, num_bids + 1, max(1, int(self.nbids.max()))), np.int64)
        for a in range(2):
            for row in range(num_bids + 1):
                found = np.flatnonzero(bids[a, row])
                self.legal_bids[a, row, : len(found)] = found

    @classmethod
    def build(cls, game: LiarsDiceGame, key: RoundState) -> AbstractRound:
        """The graph of round ``key`` (any dice count; common-hand rules)."""
        tree = RoundTree.head(game, key, -1, 0, 1)
        num_bids, num_actions = tree.num_bids, game.codec.num_actions
        legal = np.zeros((2, num_bids + 1, num_actions), dtype=bool)
        for a in range(2):
            legal[a] = tree.legal[a]
        legal[1, 0] = False  # the responder never opens
        types: dict[tuple[int, int, int], int] = {}
        ttype = np.full(legal.shape, -1, dtype=np.int64)
        for a, row, x in zip(*np.nonzero(legal[:, :, num_bids:]), strict=True):
            x = int(x) + num_bids
            ttype[a, row, x] = types.setdefault((x, int(row) - 1, int(a)), len(types))
        tree._type_keys = sorted(types, key=types.get)
        tree.outcomes = None
        tree.resolve_outcomes()
        return cls(tree, legal, ttype, _topological_rows(legal[:, :, :num_bids]))


def _topological_rows(bids: np.ndarray) -> np.ndarray:
    """Rows ordered so that a bid's row comes after the rows that can bid it (Kahn).

    Raises:
        ValueError: if bids can cycle (a rule set whose bids do not rise).
    """
    rows = bids.shape[1]
    edges = bids.any(axis=0)  # edges[row, bid]: row -> bid + 1
    indegree = np.zeros(rows, dtype=np.int64)
    for r in range(rows):
        indegree[np.flatnonzero(edges[r]) + 1] += 1
    ready = [r for r in range(rows) if indegree[r] == 0]
    order = []
    while ready:
        r = ready.pop()
        order.append(r)
        for c in np.flatnonzero(edges[r]) + 1:
            indegree[c] -= 1
            if indegree[c] == 0:
                ready.append(int(c))
    if len(order) != rows:
        raise ValueError("the bids of this rule set can repeat: no last-bid graph")
    return np.array(order, dtype=np.int64)


class AbstractSolver:
    """CFR+ (alternating updates, linear averaging) on one round's last-bid graph.

    Args:
        graph: The round's graph.
        m0: The opener's payoff per call type and hand pair (``tree.payoffs``).
    """

    def __init__(self, graph: AbstractRound, m0: np.ndarray) -> None:
        self.graph = graph
        tree = graph.tree
        self.p = (tree.probs[0].astype(np.float64), tree.probs[1].astype(np.float64))
        n0, n1 = len(self.p[0]), len(self.p[1])
        rows, num_actions = graph.legal.shape[1:]
        self.m0 = np.ascontiguousarray(m0, dtype=np.float64)
        self.regret = [np.zeros((rows, n, num_actions)) for n in (n0, n1)]
        self.avg = [np.zeros((rows, n, num_actions)) for n in (n0, n1)]
        self.sigma = [_regret_matching(r, graph.legal[a]) for a, r in enumerate(self.regret)]
        self.reach = [np.zeros((2, rows, n0)), np.zeros((2, rows, n1))]
        self.W = np.zeros((2, rows, n0, n1))
        self.q = [np.zeros((rows, n0, num_actions)), np.zeros((rows, n1, num_actions))]
        self.t = 0

    def _passes(self, who: int, sigma: list[np.ndarray]) -> None:
        g = self.graph
        _forward(g.order, g.legal_bids, g.nbids, sigma[0], sigma[1], *self.reach)
        _backward(
            g.order, g.legal, g.ttype, self.m0, sigma[0], sigma[1], *self.reach,
            self.p[0], self.p[1], self.W, self.q[0], self.q[1], who,
        )  # fmt: skip

    def iterate(self, n: int = 1) -> None:
        """Runs ``n`` CFR+ iterations."""
        legal = self.graph.legal
        for _ in range(n):
            self.t += 1
            for a in (0, 1):
                self._passes(a, self.sigma)
                q, sigma = self.q[a], self.sigma[a]
                cfv = (q * sigma).sum(axis=2, keepdims=True)
                self.regret[a] = np.maximum(self.regret[a] + (q - cfv) * legal[a][:, None, :], 0)
                own = self.reach[a][a]
                self.avg[a] += self.t * own[:, :, None] * sigma
                self.sigma[a] = _regret_matching(self.regret[a], legal[a])

    def average(self) -> list[np.ndarray]:
        """Each role's average strategy ``[row, hand, action]`` (uniform where unreached)."""
        return [_normalized(s, self.graph.legal[a]) for a, s in enumerate(self.avg)]

    def value(self, sigma: list[np.ndarray] | None = None) -> float:
        """The opener's expected payoff when both play ``sigma`` (default: the average)."""
        self._passes(-1, sigma or self.average())
        return float(self.p[0] @ self.W[0, 0] @ self.p[1])


def _normalized(weights: np.ndarray, legal: np.ndarray) -> np.ndarray:
    total = weights.sum(axis=2, keepdims=True)
    uniform = legal[:, None, :] / np.maximum(legal.sum(axis=1), 1)[:, None, None]
    return np.where(total > 0, weights / np.where(total > 0, total, 1.0), uniform)


BLUEPRINT_VERSION = 1
"""Bumped when the blueprint's solve or file format changes (files of another refused)."""


@dataclass
class Blueprint:
    """Every round's last-bid strategy and value, for one rule set.

    Attributes:
        rules: The rule set.
        start: The first round's state.
        strategies: ``key -> [opener's, responder's]`` strategy ``[row, hand, action]``
            (row ``r``: after bid ``r - 1``; row 0: the opening bid).
        values: ``key -> the opener's value`` under the blueprint.
        iterations: CFR+ iterations per round.
        seconds: The solve's time.
    """

    rules: RuleSet
    start: RoundState
    strategies: dict[RoundState, list[np.ndarray]]
    values: dict[RoundState, float]
    iterations: int = 0
    seconds: float = 0.0
    _index: dict = field(default_factory=dict, repr=False, compare=False)

    def probabilities(self, key: RoundState, role: int, last: int, hand) -> np.ndarray:
        """``role``'s action distribution with ``hand`` after bid ``last`` (-1: none).

        Raises:
            ValueError: for a round state the blueprint does not hold.
        """
        if key not in self.strategies:
            raise ValueError(f"the blueprint has no round {key.label()} ({key})")
        if key not in self._index:
            dice = (key.opener_dice, key.responder_dice)
            self._index[key] = [
                {h: i for i, h in enumerate(hands_of(d, self.rules.faces)[0])} for d in dice
            ]
        probs = self.strategies[key][role][last + 1, self._index[key][role][tuple(sorted(hand))]]
        probs = probs.astype(np.float64)
        return probs / probs.sum()

    def save(self, path: str | Path) -> Path:
        """Writes the blueprint as ``.npz``, atomically (temp file, rename).

        No pickles; the probabilities in float16, the legal entries only.
        """
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        keys = list(self.strategies)
        meta = {
            "version": BLUEPRINT_VERSION,
            "rules": self.rules.to_dict(),
            "start": list(self.start),
            "keys": [list(k) for k in keys],
            "values": [self.values[k] for k in keys],
            "shapes": [[list(s.shape) for s in self.strategies[k]] for k in keys],
            "iterations": self.iterations,
            "seconds": self.seconds,
        }
        arrays = {"meta": np.array(json.dumps(meta))}
        for i, key in enumerate(keys):
            for role, probs in enumerate(self.strategies[key]):
                legal = probs.sum(axis=1) > 0  # [row, action]: legal for every hand
                arrays[f"legal{i}_{role}"] = np.packbits(legal)
                arrays[f"p{i}_{role}"] = probs.transpose(1, 0, 2)[:, legal].astype(np.float16)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name, suffix=".tmp")
        try:
            with os.fdopen(fd, "wb") as fh:
                np.savez_compressed(fh, **arrays)
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        return path

    @classmethod
    def load(cls, path: str | Path, rules: RuleSet | None = None) -> Blueprint:
        """Reads :meth:`save` output; ``rules``, if given, must match the file's.

        Raises:
            ValueError: for a file that is not a blueprint, of another version or of
                other rules.
        """
        try:
            data = np.load(path, allow_pickle=False)
            meta = json.loads(str(data["meta"]))
        except (OSError, KeyError, ValueError, zipfile.BadZipFile) as err:
            raise ValueError(f"{path} is not a readable blueprint file: {err}") from err
        with data:
            if meta.get("version") != BLUEPRINT_VERSION:
                raise ValueError(
                    f"{path}: blueprint version {meta.get('version')!r}, expected "
                    f"{BLUEPRINT_VERSION} (solve it again)"
                )
            saved = RuleSet.from_dict(meta["rules"])
            if rules is not None and saved != rules:
                raise ValueError(f"{path} is a blueprint of {saved}, not of {rules}")
            keys = [RoundState(*k) for k in meta["keys"]]
            strategies = {}
            for i, key in enumerate(keys):
                strategies[key] = []
                for role, shape in enumerate(meta["shapes"][i]):
                    rows, hands, actions = shape
                    bits = data[f"legal{i}_{role}"]
                    legal = np.unpackbits(bits, count=rows * actions).reshape(rows, actions)
                    probs = np.zeros((hands, rows, actions), dtype=np.float32)
                    probs[:, legal.astype(bool)] = data[f"p{i}_{role}"]
                    strategies[key].append(probs.transpose(1, 0, 2))
        return cls(
            rules=saved,
            start=RoundState(*meta["start"]),
            strategies=strategies,
            values=dict(zip(keys, meta["values"], strict=True)),
            iterations=meta["iterations"],
            seconds=meta["seconds"],
        )


def round_graphs(rules: RuleSet) -> tuple[RoundState, dict[RoundState, AbstractRound]]:
    """The first round's state and the last-bid graph of every round reachable from it."""
    game = LiarsDiceGame(rules)
    start = start_state(rules)
    graphs: dict[RoundState, AbstractRound] = {}
    todo = [start]
    while todo:
        key = todo.pop()
        if key not in graphs:
            graphs[key] = AbstractRound.build(game, key)
            todo += graphs[key].tree.successors()
    return start, graphs


def solve_blueprint(
    rules: RuleSet,
    iterations: int = 400,
    log: Callable[[str], None] | None = None,
    resume: str | Path | None = None,
) -> Blueprint:
    """CFR+ on every round's last-bid graph, from the last rounds back.

    Args:
        rules: A 2-player, common-hand rule set (any dice count).
        iterations: CFR+ iterations per round.
        log: Called with a line per solved round (its value and time).
        resume: A folder where each solved round is kept (``.npz``, written atomically)
            and read back by a later call with the same rules and settings, so an
            interrupted solve goes on from its last finished round.

    Raises:
        ValueError: for rules it cannot solve (not 2 players, individual hands) or a
            non-positive ``iterations``.
    """
    check_supported(rules)
    if rules.hand != "common":
        raise ValueError("the blueprint needs common-hand rules (hand='common')")
    if type(iterations) is not int or iterations < 1:
        raise ValueError(f"iterations must be a positive int, got {iterations!r}")
    began = time.perf_counter()
    start, graphs = round_graphs(rules)
    values: dict[RoundState, float] = {}
    strategies: dict[RoundState, list[np.ndarray]] = {}
    folder = Path(resume) if resume is not None else None

    def evaluate(key: RoundState) -> float:
        t0 = time.perf_counter()
        graph = graphs[key]
        m0 = graph.tree.payoffs(opener_payoff(values))
        kept = _kept_round(folder, rules, key, m0, iterations) if folder else None
        if kept is not None:
            strategies[key], value = kept
        else:
            solver = AbstractSolver(graph, m0)
            solver.iterate(iterations)
            strategies[key] = [s.astype(np.float32) for s in solver.average()]
            value = solver.value()
            if folder:
                _keep_round(folder, rules, key, m0, iterations, strategies[key], value)
        if log:
            how = "kept" if kept is not None else f"{time.perf_counter() - t0:.1f} s"
            log(f"round {key.label()}: value {value:+.4f} for the opener ({how})")
        return value

    trees = {k: g.tree for k, g in graphs.items()}
    _sweep(trees, values, evaluate, 200, tolerance=1e-5)
    return Blueprint(rules, start, strategies, values, iterations, time.perf_counter() - began)


def _round_file(folder: Path, rules: RuleSet, key: RoundState, m0: np.ndarray, iterations: int):
    """The file of a round's solve: named by the rules, the round, its payoffs, settings."""
    digest = hashlib.sha256()
    digest.update(json.dumps([BLUEPRINT_VERSION, rules.to_dict(), list(key), iterations]).encode())
    digest.update(np.ascontiguousarray(m0, dtype=np.float64).tobytes())
    return folder / f"round-{key.opener_dice}v{key.responder_dice}-{digest.hexdigest()[:16]}.npz"


def _kept_round(folder, rules, key, m0, iterations):
    path = _round_file(folder, rules, key, m0, iterations)
    if not path.exists():
        return None
    try:
        with np.load(path, allow_pickle=False) as data:
            return [data["s0"], data["s1"]], float(data["value"])
    except (OSError, KeyError, ValueError, zipfile.BadZipFile):
        return None  # a damaged file: solve the round again


def _keep_round(folder, rules, key, m0, iterations, strategy, value) -> None:
    path = _round_file(Path(folder), rules, key, m0, iterations)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name, suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            np.savez(fh, s0=strategy[0], s1=strategy[1], value=np.float64(value))
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
