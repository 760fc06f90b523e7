"""Bit for bit, on whatever machine runs the tests: a seeded run repeats, and Ray changes nothing.

The golden run of :mod:`test_trainer_golden` (league, teacher, EMA magnet and KL term,
dice shaping, exploiters, periodic evaluations) is trained here and compared with itself
on this machine, so the check can fail on any CI machine, unlike recorded hashes (which
depend on the processor and the libraries, and stay an extra in
``tests/test_trainer_golden.py``):

- the same seed twice writes the same checkpoints (every tensor: weights, optimizer,
  league snapshots, exploiters, generators);
- ``workers: 1`` without ``overlap`` (one Ray rollout actor, the learner in the driver)
  writes the checkpoints of the in-process run.
"""

from __future__ import annotations

import os

import pytest
from test_trainer_golden import checkpoint_hashes, golden_run

from liars_env.agents.policy import load_trainer_state


@pytest.fixture(scope="module")
def in_process(tmp_path_factory):
    """The golden run's checkpoint hashes, in this process."""
    return checkpoint_hashes(golden_run(tmp_path_factory.mktemp("first")))


def test_the_same_seed_writes_the_same_checkpoints_twice(in_process, tmp_path):
    assert len(in_process) == 14  # step_512, step_1024, best; 4 exploiters' step_256
    again = checkpoint_hashes(golden_run(tmp_path))
    assert again == in_process


def test_another_seed_writes_other_checkpoints(in_process, tmp_path):
    """The comparison can fail: a changed seed changes every hash."""
    other = checkpoint_hashes(golden_run(tmp_path, "seed=1"))
    assert other.keys() == in_process.keys()
    assert all(other[k] != in_process[k] for k in in_process)


def test_one_worker_without_overlap_writes_the_in_process_checkpoints(in_process, tmp_path):
    ray = pytest.importorskip("ray")
    from liars_train.distributed import cluster

    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    started = not ray.is_initialized()
    if started:
        cluster.loopback_only()
        ray.init(address="local", num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        run = golden_run(tmp_path, "workers=1", "overlap=false")
    finally:
        if started:
            ray.shutdown()
    assert checkpoint_hashes(run) == in_process
    state = load_trainer_state(run / "checkpoints" / "step_0000001024")
    assert len(state["workers"]) == 1  # the actor's generators, for --resume
