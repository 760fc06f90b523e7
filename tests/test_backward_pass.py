"""The blueprint solver's backward pass: the parallel kernel against the serial one.

Each output cell of the parallel kernel is summed by one thread in the serial kernel's
order, so the two must agree exactly, whatever the number of threads."""

from __future__ import annotations

import json

import numba
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from liars_env.rules import RuleSet
from liars_env.solver import backward_pass
from liars_env.solver.backward_pass import (
    BackwardPass,
    _backward_parallel,
    _backward_serial,
    _grouped_by_target,
)
from liars_env.solver.best_response import opener_payoff
from liars_env.solver.last_bid import AbstractSolver
from liars_env.solver.recall_graph import round_graphs

THREADS = min(2, numba.config.NUMBA_NUM_THREADS)


def _strategy(solver: AbstractSolver, role: int, rng: np.random.Generator) -> np.ndarray:
    """A random strategy of ``role``: each node's actions get positive weights, normalized."""
    return solver._matching(role, rng.random(solver.regret[role].shape) + 0.01)


def _round(preset: str, dice: int, faces: int, memory: int, which: int):
    """One round's graph and a solver on it (the round ``which`` in key order)."""
    rules = RuleSet.preset(preset, num_players=2, dice_per_player=dice, faces=faces)
    _, graphs = round_graphs(rules, memory=memory)
    keys = sorted(graphs, key=lambda k: k.label())
    key = keys[which % len(keys)]
    graph = graphs[key]
    m0 = graph.tree.payoffs(opener_payoff({k: 0.3 for k in graphs}))
    return graph, AbstractSolver(graph, m0)


def _outputs(kernel, solver: AbstractSolver, sigma, who: int, *extra):
    g = solver.graph
    total = np.full_like(solver.W, np.nan)
    q = [np.full_like(x, np.nan) for x in solver.q]
    kernel(
        g.order, g.actor, g.start, g.child, g.local, g.etype, solver.m0, sigma[0], sigma[1],
        *solver.reach, solver.p[0], solver.p[1], total, q[0], q[1], who, *extra,
    )  # fmt: skip
    return total, q


def _assert_same(a, b, who: int) -> None:
    np.testing.assert_array_equal(a[0], b[0])
    if who >= 0:
        np.testing.assert_array_equal(a[1][who], b[1][who])


@settings(max_examples=12, deadline=None)
@given(
    preset=st.sampled_from(["perudo", "jokers", "openspiel_liars_dice", "perudo_palifico"]),
    dice=st.integers(1, 2),
    faces=st.integers(3, 5),
    memory=st.integers(1, 2),
    which=st.integers(0, 10),
    seed=st.integers(0, 2**16),
    blocks=st.integers(1, 7),
)
def test_the_parallel_kernel_sums_as_the_serial_one(
    preset, dice, faces, memory, which, seed, blocks
):
    """Any round, any strategies, any number of blocks: ``W`` and both roles' values are
    the serial kernel's, bit for bit (rounds of unequal hands included)."""
    graph, solver = _round(preset, dice, faces, memory, which)
    rng = np.random.default_rng(seed)
    sigma = [_strategy(solver, role, rng) for role in (0, 1)]
    solver._passes(-1, sigma)  # the reach of these strategies
    blocks = min(blocks, len(solver.p[0]))
    for who in (-1, 0, 1):
        serial = _outputs(_backward_serial, solver, sigma, who)
        groups = _grouped_by_target(graph)
        parallel = _outputs(_backward_parallel, solver, sigma, who, blocks, *groups)
        assert not np.isnan(serial[0]).any()
        _assert_same(serial, parallel, who)


@pytest.mark.skipif(THREADS < 2, reason="numba has one thread on this machine")
def test_the_thread_count_changes_no_bit_of_a_solve(monkeypatch):
    """A round of 4 dice each (126 × 126 hands, past ``PARALLEL_PAIRS``): ten CFR+
    iterations on one thread and on two give the same average strategy and value."""
    assert backward_pass.PARALLEL_PAIRS <= 126 * 126
    results = []
    before = numba.get_num_threads()
    try:
        for threads in (1, THREADS):
            numba.set_num_threads(threads)
            assert backward_pass.parallel(126, 126) == (threads > 1)
            _, solver = _round("perudo", 4, 6, 1, 0)
            solver.iterate(10)
            results.append((solver.average(), solver.value()))
    finally:
        numba.set_num_threads(before)
    (avg1, value1), (avg2, value2) = results
    assert value1 == value2
    for a, b in zip(avg1, avg2, strict=True):
        np.testing.assert_array_equal(a, b)


def test_small_rounds_stay_on_one_thread():
    """Starting threads costs more than the small games' passes: they run serially."""
    assert not backward_pass.parallel(6, 6)
    assert not backward_pass.parallel(21, 56)


@pytest.mark.parametrize("who", [-1, 0, 1])
def test_backward_writes_what_the_serial_kernel_writes(monkeypatch, who):
    """``BackwardPass`` on the parallel path (forced) and the serial kernel agree."""
    _, solver = _round("perudo", 2, 6, 1, 3)
    rng = np.random.default_rng(who + 1)
    sigma = [_strategy(solver, role, rng) for role in (0, 1)]
    solver._passes(-1, sigma)
    serial = _outputs(_backward_serial, solver, sigma, who)
    monkeypatch.setattr(backward_pass, "PARALLEL_PAIRS", 0)
    total = np.full_like(solver.W, np.nan)
    q = [np.full_like(x, np.nan) for x in solver.q]
    BackwardPass(solver.graph)(solver.m0, sigma, solver.reach, solver.p, total, q, who)
    _assert_same(serial, (total, q), who)


_THREADS_AT_ONCE = """
from concurrent.futures import ThreadPoolExecutor
import numpy as np
from liars_env.rules import RuleSet
from liars_env.solver import backward_pass
from liars_env.solver.best_response import opener_payoff
from liars_env.solver.last_bid import AbstractSolver
from liars_env.solver.recall_graph import round_graphs

backward_pass.PARALLEL_PAIRS = 0
rules = RuleSet.preset("perudo", num_players=2, dice_per_player=3)
_, graphs = round_graphs(rules)
values = opener_payoff({g: 0.3 for g in graphs})
keys = sorted(graphs, key=lambda k: -k.opener_dice - k.responder_dice)[:2]
solvers = [AbstractSolver(graphs[k], graphs[k].tree.payoffs(values)) for k in keys]

def run(solver):
    totals = []
    for _ in range(50):
        solver._passes(0, solver.sigma)
        totals.append(solver.W.copy())
    return totals

with ThreadPoolExecutor(2) as pool:
    results = list(pool.map(run, solvers))
assert all(np.array_equal(r[0], t) for r in results for t in r)
print("agree", backward_pass.get_num_threads())
"""


def test_solves_in_several_threads_at_once_run_and_agree():
    """Two Python threads in the parallel kernel at once (a web server's or an
    evaluation's threads), with numba's ``workqueue`` threading layer, the one it falls
    back on without OpenMP or TBB, which aborts the process on concurrent launches:
    ``BackwardPass`` takes turns, and every pass gives the same numbers."""
    import os
    import subprocess
    import sys

    env = dict(os.environ, NUMBA_THREADING_LAYER="workqueue", NUMBA_NUM_THREADS=str(THREADS))
    done = subprocess.run(
        [sys.executable, "-c", _THREADS_AT_ONCE], env=env, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["agree", str(THREADS)]


def test_the_threads_benchmark_times_each_count_and_checks_they_agree(tmp_path, capsys):
    from helpers import load_script

    bench = load_script("benchmarks/blueprint_threads.py")
    out = tmp_path / "threads.json"
    argv = ["--dice", "4", "--memory", "1", "--threads", str(max(THREADS, 2))]
    results = bench.main([*argv, "--repeats", "1", "--iterations", "1", "--out", str(out)])
    assert json.loads(out.read_text()) == results
    assert list(results["idle"]) == ["1 thread", f"{max(THREADS, 2)} threads"]
    assert all(seconds > 0 for seconds in results["idle"].values())
    assert "round 4v4, memory 1: 96 nodes, 2,344 edges" in capsys.readouterr().out


def _numpy_iterate(solver: AbstractSolver) -> None:
    """One CFR+ iteration in array expressions: the update as it was written before
    the compiled one (the oracle of the next test)."""
    solver.t += 1
    for a in (0, 1):
        solver._passes(a, solver.sigma)
        q, sigma = solver.q[a], solver.sigma[a]
        cfv = solver._node_sums(a, q * sigma)
        solver.regret[a] = np.maximum(solver.regret[a] + q - cfv, 0.0)
        own = solver.reach[a][solver._edges[a][1]]
        solver.avg[a] += solver.t * own * sigma
        solver.sigma[a] = solver._matching(a, solver.regret[a])


@pytest.mark.parametrize(
    ("preset", "dice", "faces", "memory"),
    [("perudo", 2, 4, 2), ("openspiel_liars_dice", 1, 6, 1), ("jokers", 3, 6, 1)],
)
def test_the_compiled_update_is_the_array_expressions(preset, dice, faces, memory):
    """Regrets, averages and strategies after several iterations: those of the array
    expressions, up to rounding (numpy's ``reduceat`` sums a node's edges in an order
    of its own; the kernel sums them in order)."""
    for which in (0, 1):
        _, compiled = _round(preset, dice, faces, memory, which)
        _, arrays = _round(preset, dice, faces, memory, which)
        for _ in range(4):
            compiled.iterate(1)
            _numpy_iterate(arrays)
        for a in (0, 1):
            for name in ("regret", "avg", "sigma"):
                got, want = getattr(compiled, name)[a], getattr(arrays, name)[a]
                np.testing.assert_allclose(got, want, rtol=1e-11, atol=1e-13, err_msg=name)
