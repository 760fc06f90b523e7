"""CFR+ on every round with players who remember part of its bids: a blueprint at any size.

A round's public tree holds every sequence of rising bids, about ``2 ** B`` nodes for
``B`` bids: 2 × 5 dice of 6 faces have 60 bids, far beyond any exact solve. Here a
player decides from its own hand and what it *remembers* of the round's bids: the last
``memory`` bids exactly and the faces of the ``faces`` bids before them (with
``memory=1, faces=0``, the *last-bid abstraction*: the bid standing only). This is an
imperfect-recall abstraction, as in Lanctot et al., "No-Regret Learning in
Extensive-Form Games with Imperfect Recall" (ICML 2012), whose test game was Bluff, i.e.
Liar's Dice. The rest of the round below a node is then the same whatever led to it, so
the round becomes a graph of nodes
(:class:`~liars_env.solver.recall_graph.AbstractRound`, in
:mod:`~liars_env.solver.recall_graph`: what is remembered, whose turn it is; 120 at 5
vs 5 dice with ``memory=1``) and CFR+ runs on it in time linear in its edges
(:class:`AbstractSolver`):

* forward, each player's reach of every node, summed over the bid sequences into it;
* backward, ``W[node, hand0, hand1]``, the opener's expected payoff from a node on
  (the same for every sequence into it), and each action's counterfactual value for the
  player to move: ``W`` of the child against the other player's summed reach.

These are exactly the counterfactual values of the abstraction's information sets (the
other player's reach summed over the sequences each set holds), so the regrets are
those of CFR on the abstract game. CFR has no convergence guarantee under imperfect
recall; what the abstraction costs is measured, not assumed: the exact exploitability
of its strategy in the real game on the games small enough to solve, the local best
response at five dice (``docs/blueprint.md``). A memory longer than any round is the
real game.

The whole game is a ladder of rounds (the payoffs of a round are the values of the
rounds that follow), solved from the last rounds back as :mod:`~liars_env.solver.solution`
does (:func:`solve_blueprint`, resumable), each round's value for its opener under its
blueprint (:class:`Blueprint`, saved as ``.npz``). Rounds need not all remember as much:
with ``max_memory``, each round remembers the most bids whose solver fits a
budget (:func:`~liars_env.solver.recall_graph.budgeted_round`), so the rounds with few
dice, near the end of a game, are played with a longer memory than the first.

At 5 vs 5 dice a round has 252 × 252 hand pairs; one CFR+ iteration touches each edge's
pairs twice: 0.3 s with ``memory=1`` (3,650 edges), 2.2 s with ``faces=1`` too
(20,430), compiled with numba, one core.
"""

from __future__ import annotations

import hashlib
import json
import time
import zipfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from liars_env.engine import LiarsDiceGame
from liars_env.rules import RuleSet
from liars_env.solver.backward_pass import BackwardPass
from liars_env.solver.best_response import _sweep, opener_payoff
from liars_env.solver.blueprint_file import (
    LIGHT_MASS,
    LIGHT_STEPS,
    check_light_mass,
    coarsened,
    one_byte,
    read_blueprint_file,
    write_blueprint_file,
)
from liars_env.solver.graph import (
    RoundState,
    check_supported,
    hands_of,
)
from liars_env.solver.recall_graph import (
    MAX_BYTES,
    AbstractRound,
    _forward,
    bid_faces,
    check_max_memory,
    check_memory,
    own_reach,
    remembered,
    round_graphs,
    unreached_cells,
)
from liars_env.solver.solution import write_npz

try:  # numba is a dependency of the package; plain Python runs the same loop (slowly)
    from numba import njit
except ImportError:  # pragma: no cover

    def njit(*args, **kwargs):
        """Identity decorator standing in for numba's."""
        return args[0] if args and callable(args[0]) else (lambda f: f)


@njit(cache=True)
def _update(first, node_of, q, sigma, regret, avg, reach, t):  # pragma: no cover
    """One role's CFR+ update after its pass, in place: regrets, average, next strategy.

    Per node and hand: the node's value ``cfv`` (the sum over its edges, in order, of
    ``q * sigma``), regrets ``max(regret + q - cfv, 0)``, the average grown by ``t``
    times the own reach times ``sigma``, and regret matching (uniform where no regret
    is positive, as :meth:`AbstractSolver._matching`), in one sweep of the arrays
    instead of a dozen array expressions. A node's edges are summed in order, so the
    numbers differ from those expressions (numpy's ``reduceat`` has an order of its
    own) in the last bits only.
    """
    hands = q.shape[1]
    cfv = np.empty(hands)
    total = np.empty(hands)
    for k in range(first.shape[0] - 1):
        lo, hi = first[k], first[k + 1]
        if lo == hi:
            continue
        node = node_of[lo]
        cfv[:] = 0.0
        for e in range(lo, hi):
            for h in range(hands):
                cfv[h] += q[e, h] * sigma[e, h]
        total[:] = 0.0
        for e in range(lo, hi):
            for h in range(hands):
                r = regret[e, h] + q[e, h] - cfv[h]
                r = max(r, 0.0)
                regret[e, h] = r
                avg[e, h] += t * reach[node, h] * sigma[e, h]
                total[h] += r
        uniform = 1.0 / (hi - lo)
        for e in range(lo, hi):
            for h in range(hands):
                sigma[e, h] = regret[e, h] / total[h] if total[h] > 0 else uniform


TOLERANCE = 1e-5
"""The default ``tolerance`` of the values of rounds that repeat (:func:`solve_blueprint`)."""


def check_tolerance(tolerance: float) -> None:
    """Raises ``ValueError`` unless ``tolerance`` is a positive finite number."""
    if (
        isinstance(tolerance, bool)
        or not isinstance(tolerance, (int, float))
        or not (0 < tolerance < float("inf"))
    ):
        raise ValueError(f"tolerance must be a positive number, got {tolerance!r}")


def check_tremble(tremble: float) -> None:
    """Raises ``ValueError`` unless ``tremble`` is a number in [0, 1)."""
    if isinstance(tremble, bool) or not isinstance(tremble, (int, float)) or not (0 <= tremble < 1):
        raise ValueError(f"tremble must be a number in [0, 1), got {tremble!r}")


class AbstractSolver:
    """CFR+ (alternating updates, linear averaging) on one round's graph.

    With ``tremble`` above 0 it solves the *perturbed* game (Selten's trembles; Farina,
    Kroer and Sandholm, "Regret Minimization in Behaviorally-Constrained Zero-Sum
    Games", ICML 2017): at every node each player plays its strategy with probability
    ``1 - tremble`` and a uniformly random action otherwise. Both passes use those
    trembling strategies, so every node is reached and the regrets of a player's
    replies to the other's mistakes have weight; the regrets, the average and so the
    strategy it returns are of the intended play, without the trembles. As ``tremble``
    goes to 0 this approaches an equilibrium refinement that punishes mistakes
    (extensive-form perfect), where plain CFR+ plays anything at a node the other's
    equilibrium play does not reach.

    Args:
        graph: The round's graph.
        m0: The opener's payoff per call type and hand pair (``tree.payoffs``).
        tremble: The probability of a uniformly random action at each node, in [0, 1).

    Raises:
        ValueError: for a ``tremble`` outside [0, 1).
    """

    def __init__(self, graph: AbstractRound, m0: np.ndarray, tremble: float = 0.0) -> None:
        check_tremble(tremble)
        self.tremble = float(tremble)
        self.graph = graph
        tree = graph.tree
        self.p = (tree.probs[0].astype(np.float64), tree.probs[1].astype(np.float64))
        hands = (len(self.p[0]), len(self.p[1]))
        nodes = len(graph.actor)
        self.m0 = np.ascontiguousarray(m0, dtype=np.float64)
        self._edges = [graph.edges_of(a) for a in (0, 1)]
        self._bounds = []  # each role's nodes' first local edges, then its edge count
        for a in (0, 1):
            counts = np.diff(graph.start)[self._edges[a][0]]
            self._bounds.append(np.concatenate([[0], np.cumsum(counts)]).astype(np.int64))
        sizes = [len(self._edges[a][1]) for a in (0, 1)]
        self._backward = BackwardPass(graph)
        self.regret = [np.zeros((sizes[a], hands[a])) for a in (0, 1)]
        self.avg = [np.zeros((sizes[a], hands[a])) for a in (0, 1)]
        self.sigma = [self._matching(a, self.regret[a]) for a in (0, 1)]
        self.reach = [np.zeros((nodes, hands[0])), np.zeros((nodes, hands[1]))]
        self.W = np.zeros((nodes, hands[0], hands[1]))
        self.q = [np.zeros((sizes[a], hands[a])) for a in (0, 1)]
        self.t = 0
        # the strategies the passes use: sigma itself, or its trembling copy, each made
        # again only after its role's update
        self._uniform = [self._matching(a, np.zeros((sizes[a], 1))) for a in (0, 1) if tremble]
        self._play = [self._played(a) for a in (0, 1)] if self.tremble else self.sigma

    def _node_sums(self, a: int, x: np.ndarray) -> np.ndarray:
        """Per node of role ``a``, the sum of ``x[edge]`` over its edges, per edge."""
        first = self._bounds[a][:-1]
        sums = np.add.reduceat(x, first, axis=0) if len(first) else x[:0]
        return np.repeat(sums, np.diff(self._bounds[a]), axis=0)

    def _matching(self, a: int, regret: np.ndarray) -> np.ndarray:
        positive = np.maximum(regret, 0.0)
        total = self._node_sums(a, positive)
        counts = np.diff(self._bounds[a])
        uniform = np.repeat(1.0 / np.maximum(counts, 1), counts)[:, None]
        return np.where(total > 0, positive / np.where(total > 0, total, 1.0), uniform)

    def _passes(self, who: int, sigma: list[np.ndarray]) -> None:
        g = self.graph
        _forward(g.order, g.actor, g.start, g.child, g.local, sigma[0], sigma[1], *self.reach)
        self._backward(self.m0, sigma, self.reach, self.p, self.W, self.q, who)

    def _played(self, a: int) -> np.ndarray:
        """Role ``a``'s trembling strategy: ``sigma``, or a uniform action with ``tremble``."""
        return (1.0 - self.tremble) * self.sigma[a] + self.tremble * self._uniform[a]

    def iterate(self, n: int = 1) -> None:
        """Runs ``n`` CFR+ iterations."""
        for _ in range(n):
            self.t += 1
            for a in (0, 1):
                self._passes(a, self._play)
                _update(
                    self._bounds[a], self._edges[a][1], self.q[a], self.sigma[a],
                    self.regret[a], self.avg[a], self.reach[a], float(self.t),
                )  # fmt: skip
                if self.tremble:  # (sigma is updated in place: _play is sigma otherwise)
                    self._play[a] = self._played(a)

    def average(self) -> list[np.ndarray]:
        """Each role's average strategy ``[edge, hand]`` (uniform where unreached)."""
        out = []
        for a in (0, 1):
            total = self._node_sums(a, self.avg[a])
            uniform = self._matching(a, np.zeros_like(self.avg[a]))
            out.append(np.where(total > 0, self.avg[a] / np.where(total > 0, total, 1.0), uniform))
        return out

    def value(self, sigma: list[np.ndarray] | None = None) -> float:
        """The opener's expected payoff when both play ``sigma`` (default: the average)."""
        self._passes(-1, sigma or self.average())
        return float(self.p[0] @ self.W[0] @ self.p[1])


BLUEPRINT_VERSION = 2
"""Bumped when the blueprint's solve changes: files, cached blueprints and kept rounds of
another version are refused (solved again)."""


@dataclass
class RolePlay:
    """One role's strategy in one round of a blueprint.

    Attributes:
        keys: Its nodes' remembered faces and bids, ``[node, faces + memory]``
            (:data:`~liars_env.solver.recall_graph.NO_BID` padding).
        first: Node ``n``'s edges are ``first[n]:first[n + 1]``.
        action: Each edge's action id.
        probs: ``[edge, hand]``: the probability of the edge's action with each hand
            (float32); read from a file, in steps of 1/255 (uint8, a quarter of the
            memory), renormalized over the node's edges where they are used
            (:meth:`Blueprint.probabilities`), and 0 at the nodes the role's own play
            never reaches with the hand (:func:`~liars_env.solver.recall_graph.unreached_cells`).
    """

    keys: np.ndarray
    first: np.ndarray
    action: np.ndarray
    probs: np.ndarray
    _index: dict = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def of(cls, graph: AbstractRound, role: int, probs: np.ndarray) -> RolePlay:
        """``role``'s part of ``graph`` with its strategy ``probs`` (``[local edge, hand]``)."""
        nodes, edge_node = graph.edges_of(role)
        counts = np.diff(graph.start)[nodes]
        mine = np.flatnonzero(np.repeat(graph.actor, np.diff(graph.start)) == role)
        return cls(
            keys=graph.keys[nodes].astype(np.int16),
            first=np.concatenate([[0], np.cumsum(counts)]).astype(np.int64),
            action=graph.action[mine].astype(np.int16),
            probs=probs.astype(np.float32),
        )

    def node(self, remembered: tuple[int, ...]) -> int:
        """The node of these remembered bids.

        Raises:
            KeyError: if no node has them (a bid sequence the round does not allow).
        """
        if not self._index:
            self._index.update({tuple(int(b) for b in k): n for n, k in enumerate(self.keys)})
        return self._index[remembered]


@dataclass
class Blueprint:
    """Every round's strategy on its graph of remembered bids, and its value.

    Attributes:
        rules: The rule set.
        start: The first round's state.
        memory: Bids a player remembers in every round (1: the bid standing).
        faces: Faces it remembers of the bids before those.
        rounds: ``key -> [opener's, responder's]`` :class:`RolePlay`.
        values: ``key -> the opener's value`` under the blueprint.
        iterations: CFR+ iterations per round.
        seconds: The solve's time, in seconds: the call that made it, plus the
            solve time each round read back from ``resume`` records, so a table
            re-saved from kept rounds still says what solving them took.
        max_memory: The most bids a round remembers where its graph is small enough
            (:func:`~liars_env.solver.recall_graph.budgeted_round`; ``None``:
            ``memory`` in every round);
            :meth:`memory_of` says which each round does.
        max_bytes: The budget of such a round (what its solver holds).
        tremble: The trembles of the perturbed game it was solved in (0: none;
            :func:`solve_blueprint`).
    """

    rules: RuleSet
    start: RoundState
    memory: int
    faces: int
    rounds: dict[RoundState, list[RolePlay]]
    values: dict[RoundState, float]
    iterations: int = 0
    seconds: float = 0.0
    max_memory: int | None = None
    max_bytes: int = MAX_BYTES
    tremble: float = 0.0
    _hands: dict = field(default_factory=dict, repr=False, compare=False)
    _face_of: np.ndarray | None = field(default=None, repr=False, compare=False)

    @property
    def strategies(self) -> dict[RoundState, list[RolePlay]]:
        """The round states it holds (for :func:`~.graph.round_state_of`)."""
        return self.rounds

    def memory_of(self, key: RoundState) -> int:
        """The bids remembered in round ``key`` (``memory``, or more in a small round)."""
        return int(self.rounds[key][0].keys.shape[1]) - self.faces

    def probabilities(self, key: RoundState, role: int, bids, hand, num_actions: int) -> np.ndarray:
        """``role``'s distribution over the ``num_actions`` actions with ``hand``.

        Args:
            key: The round state.
            role: 0 for the round's opener, 1 for the responder.
            bids: The bid ids of the round so far.
            hand: The player's dice.
            num_actions: The length of the distribution.

        A hand that the blueprint's own play never brings to this node (its file holds
        no strategy there: :func:`~liars_env.solver.recall_graph.unreached_cells`)
        gets the uniform distribution over the node's actions.

        Raises:
            ValueError: for a round or a bid sequence the blueprint does not hold.
        """
        if key not in self.rounds:
            raise ValueError(f"the blueprint has no round {key.label()} ({key})")
        play = self.rounds[key][role]
        if self._face_of is None:
            self._face_of = bid_faces(LiarsDiceGame(self.rules))
        key_bids = remembered(bids, self.memory_of(key), self.faces, self._face_of)
        try:
            n = play.node(key_bids)
        except KeyError:
            raise ValueError(f"no node of round {key.label()} after bids {list(bids)}") from None
        dice = (key.opener_dice, key.responder_dice)[role]
        if (dice, role) not in self._hands:
            hands = hands_of(dice, self.rules.faces)[0]
            self._hands[dice, role] = {h: i for i, h in enumerate(hands)}
        h = self._hands[dice, role][tuple(sorted(hand))]
        lo, hi = play.first[n], play.first[n + 1]
        out = np.zeros(num_actions)
        out[play.action[lo:hi]] = play.probs[lo:hi, h]  # uint8 from a file: renormalized
        total = out.sum()
        if total == 0:  # a node its own play never reaches with this hand
            out[play.action[lo:hi]] = 1.0
            total = hi - lo
        return out / total

    def save(self, path: str | Path, light_mass: float = LIGHT_MASS) -> Path:
        """Writes the blueprint as ``.npz``, atomically (temp file, rename).

        No pickles. Each probability in one byte, a multiple of 1/255 (those under
        1/510 become 0; each node's are renormalized when read), and a multiple of 1/5
        in the lightest cells (:func:`~liars_env.solver.blueprint_file.coarsened`: the
        cells of least own reach, capped at 1, times the hand's chance, which together
        hold ``light_mass`` of a round's weight; 0 keeps every cell in steps of 1/255). A
        hand's probabilities at a node that its own play, so rounded, never reaches are
        not kept (:func:`~liars_env.solver.recall_graph.unreached_cells`: about half of
        the cells of the rounds with few dice): it plays the same wherever it can be.
        The probabilities are laid out hand by hand and packed with xz
        (:mod:`~liars_env.solver.blueprint_file`): the ``perudo_2p`` blueprint takes
        4.8 MB, against 7.1 MB with ``light_mass=0`` and 13.8 MB with every cell in
        zip's deflate (the format before; still read). A solve's own files
        (``resume``) keep float32.

        Raises:
            ValueError: for a ``light_mass`` outside [0, 1).
        """
        check_light_mass(light_mass)
        keys = list(self.rounds)
        meta = {
            "version": BLUEPRINT_VERSION,
            "rules": self.rules.to_dict(),
            "start": list(self.start),
            "memory": self.memory,
            "faces": self.faces,
            "max_memory": self.max_memory,
            "max_bytes": self.max_bytes,
            "tremble": self.tremble,
            "keys": [list(k) for k in keys],
            "values": [self.values[k] for k in keys],
            "iterations": self.iterations,
            "seconds": self.seconds,
            "light": {"mass": light_mass, "steps": LIGHT_STEPS},
        }
        game = LiarsDiceGame(self.rules)
        arrays = {}
        for i, key in enumerate(keys):
            plays = self.rounds[key]
            graph = AbstractRound.build(game, key, self.memory_of(key), self.faces)
            probs = [one_byte(play.probs) for play in plays]
            if light_mass > 0:
                for role, reach in enumerate(own_reach(graph, probs)):
                    # summed over the other's bids too, a reach can pass 1: capped, it
                    # bounds how often any opponent can bring the hand to the node
                    dice = (key.opener_dice, key.responder_dice)[role]
                    weight = np.minimum(reach, 1.0) * hands_of(dice, self.rules.faces)[1]
                    edge_node = graph.edges_of(role)[1]
                    probs[role] = coarsened(probs[role], weight, edge_node, light_mass)
            for role, unreached in enumerate(unreached_cells(graph, probs)):
                if not np.array_equal(graph.keys[graph.edges_of(role)[0]], plays[role].keys):
                    raise ValueError(f"round {key.label()}: its nodes are not its graph's")
                probs[role][unreached] = 0
                arrays |= _play_arrays(plays[role], f"{i}_{role}_", probs[role])
        return write_blueprint_file(path, meta, arrays)

    @classmethod
    def load(cls, path: str | Path, rules: RuleSet | None = None) -> Blueprint:
        """Reads :meth:`save` output, or a file of the zip format before it.

        ``rules``, if given, must match the file's.

        Raises:
            ValueError: for a file that is not a blueprint, of another version, format
                or rules, or with an array missing or damaged.
        """
        meta, arrays = read_blueprint_file(path, BLUEPRINT_VERSION, rules)
        keys = [RoundState(*k) for k in meta["keys"]]
        return cls(
            rules=RuleSet.from_dict(meta["rules"]),
            start=RoundState(*meta["start"]),
            memory=meta["memory"],
            faces=meta["faces"],
            rounds={
                key: [_play_from(arrays, f"{i}_{role}_") for role in (0, 1)]
                for i, key in enumerate(keys)
            },
            values=dict(zip(keys, meta["values"], strict=True)),
            iterations=meta["iterations"],
            seconds=meta["seconds"],
            max_memory=meta.get("max_memory"),
            max_bytes=meta.get("max_bytes", MAX_BYTES),
            tremble=meta.get("tremble", 0.0),
        )


def _play_arrays(play: RolePlay, prefix: str, probs: np.ndarray | None = None) -> dict:
    """A role's play as arrays: with ``probs`` (a file's), or float32, every cell.

    Float32 is how a solve keeps a round (``resume``).
    """
    return {
        prefix + "keys": play.keys,
        prefix + "first": play.first,
        prefix + "action": play.action,
        prefix + "probs": play.probs.astype(np.float32) if probs is None else probs,
    }


def _play_from(data, prefix: str) -> RolePlay:
    """A role's play as saved: one byte per probability stays one byte in memory."""
    return RolePlay(
        keys=data[prefix + "keys"],
        first=data[prefix + "first"],
        action=data[prefix + "action"],
        probs=data[prefix + "probs"],
    )


PROGRESS_SECONDS = 60.0
"""How often a round's solve logs how far it is (the 5 vs 5 round takes minutes)."""


def _iterate(
    solver: AbstractSolver, iterations: int, label: str, log: Callable[[str], None] | None
) -> None:
    """``iterations`` CFR+ iterations, with a log line every :data:`PROGRESS_SECONDS`."""
    began = last = time.perf_counter()
    for done in range(1, iterations + 1):
        solver.iterate(1)
        now = time.perf_counter()
        if log and done < iterations and now - last >= PROGRESS_SECONDS:
            left = (now - began) / done * (iterations - done)
            log(f"round {label}: {done}/{iterations} iterations, {now - began:.0f} s, "
                f"about {left:.0f} s left")  # fmt: skip
            last = now


def solve_blueprint(
    rules: RuleSet,
    iterations: int = 400,
    log: Callable[[str], None] | None = None,
    resume: str | Path | None = None,
    memory: int = 1,
    faces: int = 0,
    max_memory: int | None = None,
    max_bytes: int = MAX_BYTES,
    tolerance: float = TOLERANCE,
    tremble: float = 0.0,
) -> Blueprint:
    """CFR+ on every round's graph of remembered bids, from the last rounds back.

    Args:
        rules: A 2-player, common-hand rule set (any dice count).
        iterations: CFR+ iterations per round.
        log: Called with a line per solved round (its value and time), and every
            :data:`PROGRESS_SECONDS` during a long round (iterations done, time left).
        resume: A folder where each solved round is kept (``.npz``, written atomically)
            and read back by a later call with the same rules and settings, so an
            interrupted solve goes on from its last finished round.
        memory: Bids a player remembers: 1 (the bid standing) at any dice count; each
            more multiplies the nodes by about the number of bids. A memory longer than
            any round is the real game (CFR+ on every bid sequence).
        faces: Faces a player remembers of the bids before those (cheap: at most
            ``faces + 1`` values each).
        max_memory: Remember up to this many bids in the rounds small enough
            (:func:`~liars_env.solver.recall_graph.budgeted_round`): closer to exact
            play where the dice are few.
            ``None``: ``memory`` everywhere.
        max_bytes: What small enough means: what a round's solver holds with the
            longer memory (:attr:`~liars_env.solver.recall_graph.AbstractRound.solver_bytes`).
        tolerance: Where rounds can repeat (``calza``: a right call gives a die back),
            their values are fixed points: every such round is solved again, sweep
            after sweep, until no round's value moves by more than this. Each sweep
            costs a whole solve; CFR+'s own error after ``iterations`` is far above
            the default, so a recipe at 5 dice may stop sooner (calza's: ``0.02``).
        tremble: Solve the perturbed game where each player, at each node, plays a
            uniformly random action with this probability (:class:`AbstractSolver`):
            the blueprint then answers the other's mistakes, at some exploitability.
            0 (the default): plain CFR+.

    Raises:
        ValueError: for rules it cannot solve (not 2 players, individual hands), a
            non-positive ``iterations`` or ``memory``, a negative ``faces``, a
            ``max_memory`` below ``memory``, a non-positive ``max_bytes``, a
            ``tolerance`` that is not a positive number or a ``tremble`` outside [0, 1).
    """
    check_supported(rules)
    if rules.hand != "common":
        raise ValueError("the blueprint needs common-hand rules (hand='common')")
    if type(iterations) is not int or iterations < 1:
        raise ValueError(f"iterations must be a positive int, got {iterations!r}")
    began = time.perf_counter()
    check_memory(memory, faces)
    check_max_memory(memory, max_memory, max_bytes)
    check_tolerance(tolerance)
    check_tremble(tremble)
    start, graphs = round_graphs(rules, memory, faces, max_memory, max_bytes)
    values: dict[RoundState, float] = {}
    rounds: dict[RoundState, list[RolePlay]] = {}
    folder = Path(resume) if resume is not None else None
    kept_seconds = 0.0  # what the rounds read back took to solve, when they were
    solved_here: set[Path] = set()  # (read back in a later sweep: already timed)

    def evaluate(key: RoundState) -> float:
        nonlocal kept_seconds
        t0 = time.perf_counter()
        graph = graphs[key]
        m0 = graph.tree.payoffs(opener_payoff(values))
        settings = (iterations, graph.memory, faces) + ((tremble,) if tremble else ())
        path = _round_file(folder, rules, key, m0, settings) if folder else None
        kept = _kept_round(path) if path else None
        if kept is not None:
            rounds[key], value, took = kept
            if path not in solved_here:
                kept_seconds += took
        else:
            solver = AbstractSolver(graph, m0, tremble)
            _iterate(solver, iterations, key.label(), log)
            rounds[key] = [RolePlay.of(graph, a, s) for a, s in enumerate(solver.average())]
            value = solver.value()
            if path:
                took = time.perf_counter() - t0
                arrays = {"value": np.float64(value), "seconds": np.float64(took)}
                for role, play in enumerate(rounds[key]):
                    arrays |= _play_arrays(play, f"{role}_")
                write_npz(path, arrays)
                solved_here.add(path)
        if log:
            how = "kept" if kept is not None else f"{time.perf_counter() - t0:.1f} s"
            log(f"round {key.label()}: value {value:+.4f} for the opener ({how})")
        return value

    trees = {k: g.tree for k, g in graphs.items()}

    def progress(sweep: int, change: float) -> None:
        if log:
            log(
                f"sweep {sweep} of the rounds that repeat: largest change {change:.2e} "
                f"(stops below {tolerance:.0e})"
            )

    _sweep(trees, values, evaluate, 200, tolerance=tolerance, progress=progress)
    seconds = time.perf_counter() - began + kept_seconds
    return Blueprint(
        rules, start, memory, faces, rounds, values, iterations, seconds, max_memory, max_bytes,
        tremble,
    )  # fmt: skip


def _round_file(folder, rules, key, m0, settings) -> Path:
    """The file of a round's solve: named by the rules, the round, its payoffs, settings."""
    digest = hashlib.sha256()
    digest.update(json.dumps([BLUEPRINT_VERSION, rules.to_dict(), list(key), settings]).encode())
    digest.update(np.ascontiguousarray(m0, dtype=np.float64).tobytes())
    name = f"round-{key.opener_dice}v{key.responder_dice}-{digest.hexdigest()[:16]}.npz"
    return Path(folder) / name


def _kept_round(path: Path) -> tuple[list[RolePlay], float, float] | None:
    """A kept round's play, value and solve seconds (0 where its file has none)."""
    if not path.exists():
        return None
    try:
        with np.load(path, allow_pickle=False) as data:
            took = float(data["seconds"]) if "seconds" in data.files else 0.0
            return [_play_from(data, f"{r}_") for r in (0, 1)], float(data["value"]), took
    except (OSError, KeyError, ValueError, zipfile.BadZipFile):
        return None  # a damaged file: solve the round again
