"""The trainer on a real multi-node Ray cluster: every node a process group on 127.0.0.1.

``ray.cluster_utils.Cluster`` starts a head and worker nodes of one CPU each on this
machine (as Ray's own multi-node tests do), bound to 127.0.0.1; nodes are added and
removed (every process of one killed, as when a spot machine is reclaimed) while a tiny
run trains. Checked: the actors spread over the nodes; a node lost mid-run leaves a run
that finishes with its full decisions (the lost share played by the actor that is left);
a node added mid-run brings the run back to ``workers`` actors.
"""

from __future__ import annotations

import os
import re
import time
from pathlib import Path

import pytest
from test_trainer_golden import GOLDEN

from liars_train import ppo
from liars_train.distributed import cluster as ray_cluster
from liars_train.distributed import rollouts
from liars_train.runner import make_trainer

ray = pytest.importorskip("ray")
cluster_utils = pytest.importorskip("ray.cluster_utils")

FAST_HEALTH = {  # a lost node is noticed in about a second, not half a minute
    "health_check_initial_delay_ms": 0,
    "health_check_period_ms": 300,
    "health_check_failure_threshold": 3,
}
NODE = {"num_cpus": 1, "node_ip_address": "127.0.0.1", "object_store_memory": 80 << 20}


@pytest.fixture(scope="module")
def nodes():
    """A head and one worker node of one CPU each, on 127.0.0.1; the driver joined."""
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    ray_cluster.loopback_only()
    head = {**NODE, "include_dashboard": False, "_system_config": FAST_HEALTH}
    local = cluster_utils.Cluster(initialize_head=True, head_node_args=head)
    local.add_node(**NODE)
    ray.init(address=local.address, log_to_driver=False)
    yield local
    ray.shutdown()
    local.shutdown()


def _two_nodes(local) -> None:
    """Back to a head and one worker node, whatever the test before left, both CPUs free.

    A run starts its actors with ``ray_timeout`` to come up where the cluster has room
    for them, else ``placement_timeout`` (3 s here): the CPUs of the test before's
    actors are freed a moment after they are killed, and on a busy machine an actor
    takes longer than 3 s to start, so a test starting at once would find no room.
    """
    while len(local.worker_nodes) < 1:
        local.add_node(**NODE)
    local.wait_for_nodes()
    deadline = time.monotonic() + 60
    while ray.available_resources().get("CPU", 0) < 2 and time.monotonic() < deadline:
        time.sleep(0.1)


def _args(tmp_path, name: str, *sets: str) -> ppo.Args:
    sets = (f"runs_dir={tmp_path}", f"run_name={name}", *GOLDEN, "workers=2", *sets)
    return ppo.load_args(
        None,
        [*sets, "exploiter_every=0", "teacher=", "eval_every=0", "placement_timeout=3"],
    )


def test_the_actors_spread_over_the_nodes(nodes, tmp_path):
    _two_nodes(nodes)
    assert all(n["NodeManagerAddress"] == "127.0.0.1" for n in ray.nodes())
    trainer = make_trainer(_args(tmp_path, "spread", "total_steps=256"))
    trainer.rollout.start(trainer.policy)
    try:
        hosts = {a.node for a in trainer.rollout.actors.values()}
        assert len(trainer.rollout.actors) == 2 and len(hosts) == 2, hosts
    finally:
        trainer.rollout.close()


def test_a_node_lost_mid_run_leaves_a_run_that_finishes(nodes, tmp_path, capsys):
    _two_nodes(nodes)
    worker = next(iter(nodes.worker_nodes))
    trainer = make_trainer(_args(tmp_path, "lost", "total_steps=1536"))
    learn = trainer._learn

    def learn_then_lose_a_node(*a, **k):
        if trainer.update == 1:  # every process of the node killed, as a spot reclaim
            nodes.remove_node(worker, allow_graceful=False)
        return learn(*a, **k)

    trainer._learn = learn_then_lose_a_node
    trainer.train()
    out = capsys.readouterr().out
    assert trainer.global_step == ppo.last_step(trainer.args) == 1536
    assert "could not be placed again within 3s; 1 of 2 actors left" in out
    # the node lost hosts one actor, whichever Ray placed there: the other takes both
    # shares, its own listed first
    moved = r"shares moved: actor ([01]): shares \[(0, 1|1, 0)\] \(32 games\)"
    found = re.search(moved, out)
    assert found and found.group(2).startswith(found.group(1)), out
    log = (tmp_path / "lost" / "actors.log").read_text()
    assert "could not be placed again" in log and "shares moved" in log


def test_a_node_added_mid_run_grows_the_run_back(nodes, tmp_path, capsys, monkeypatch):
    _two_nodes(nodes)
    monkeypatch.setattr(rollouts, "REGROW_EVERY_S", 0.0)
    worker = next(iter(nodes.worker_nodes))
    trainer = make_trainer(_args(tmp_path, "grow", "total_steps=2048", "overlap=false"))
    learn = trainer._learn
    sizes, held = [], []

    def learn_with_capacity_changes(*a, **k):
        if trainer.update == 1:
            nodes.remove_node(worker, allow_graceful=False)
        if trainer.update == 3:
            nodes.add_node(**NODE)
        if trainer.update >= 3:  # let the new actor finish starting (torch's import)
            pings = [ping for _, ping, _ in trainer.rollout.pending.values()]
            ray.wait(pings, num_returns=len(pings), timeout=120)
        sizes.append(len(trainer.rollout.actors))
        held.append(sorted(sorted(a.shares) for a in trainer.rollout.actors.values()))
        return learn(*a, **k)

    trainer._learn = learn_with_capacity_changes
    trainer.train()
    out = capsys.readouterr().out
    assert trainer.global_step == 2048
    assert 1 in sizes and sizes[-1] == 2, sizes  # shrank, then grew back to workers
    assert "joined on node" in out and "2 of 2 actors" in out
    assert [[0, 1]] in held and held[-1] == [[0], [1]]  # each share back at its home


def test_the_worked_example_of_the_cluster_page_changes_capacity_inside_its_run():
    """docs/cluster.md's example (run by hand: it starts nodes) removes a node and adds
    one at updates its run reaches, the second late enough for a lost actor's placement
    to time out first, as its printed ``actors.log`` shows."""
    page = (Path(__file__).resolve().parents[1] / "docs" / "cluster.md").read_text()
    (code,) = re.findall(r"```py\n(.*?)```", page, re.S)
    overrides = re.search(r'load_args\(\s*"([^"]+)",\s*\[([^\]]*)\]', code)
    settings = re.findall(r'"([^"]+)"', overrides.group(2))
    args = ppo.load_args(str(Path(__file__).resolve().parents[1] / overrides.group(1)), settings)
    updates = ppo.last_step(args) // (args.num_envs * args.num_steps)
    removed, added = (int(u) for u in re.findall(r"trainer\.update == (\d+)", code))
    assert 0 < removed < added < updates - 5, (removed, added, updates)
    log = page.split(code)[1]
    for line in ("could not be placed again within", "shares moved", "joined on node"):
        assert line in log
