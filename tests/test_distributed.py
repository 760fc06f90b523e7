"""The trainer's rollouts on Ray: the same run bit for bit, a killed actor, bad input.

One local Ray (127.0.0.1 only, two CPUs, no dashboard) serves the tests that need one.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys

import pytest
from test_trainer_golden import GOLDEN, checkpoint_hashes

from liars_env.agents.policy import load_trainer_state
from liars_train import ppo
from liars_train.distributed import cluster
from liars_train.runner import make_trainer

try:
    import ray
except ImportError:  # the tests of bad input still run
    ray = None


@pytest.fixture(scope="module")
def local_ray():
    if ray is None:
        pytest.skip("needs the ray extra")
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    cluster.loopback_only()  # as the trainer's own local Ray: 127.0.0.1 only
    ray.init(address="local", num_cpus=2, include_dashboard=False, log_to_driver=False)
    assert ray.nodes()[0]["NodeManagerAddress"] == "127.0.0.1"
    yield
    ray.shutdown()


def test_a_killed_actor_is_restarted_and_its_share_collected_again(local_ray, tmp_path, capsys):
    sets = [f"runs_dir={tmp_path}", "run_name=kill", *GOLDEN, "workers=2"]
    sets += ["exploiter_every=0", "eval_every=0", "teacher=", "total_steps=1536"]
    args = ppo.load_args(None, sets)
    trainer = make_trainer(args)
    learn = trainer._learn
    killed, updates = [], []

    def learn_then_kill(*a, **k):
        out = learn(*a, **k)
        updates.append(out)
        if not killed:  # mid-run, while the actors collect the next batch (overlap)
            pid = trainer.rollout.pids()[1]
            os.kill(pid, signal.SIGKILL)
            killed.append(pid)
        return out

    trainer._learn = learn_then_kill
    trainer.train()
    assert killed and trainer.rollout.restarts >= 1
    # with overlap each update is decoupled: centred on the learner of now
    assert all("behaviour_kl" in stats for stats in updates)
    assert max(stats["behaviour_kl"] for stats in updates) > 0
    assert trainer.global_step == ppo.last_step(args) == 1536
    assert trainer.update == 6
    last = tmp_path / "kill" / "checkpoints" / "step_0000001536"
    assert json.loads((last / "meta.json").read_text())["step"] == 1536
    # the last evaluation ran on the evaluation actor, and was booked before the last checkpoint
    rows = (tmp_path / "kill" / "metrics.csv").read_text().splitlines()
    assert len(rows) == 2 and rows[1].startswith("6,1536,")
    best = json.loads((tmp_path / "kill" / "checkpoints" / "best" / "meta.json").read_text())
    assert best["step"] == 1536
    assert "rollout actor 1 died" in capsys.readouterr().out
    # each host's CPU share of its last collection, and the actors' time in the log
    stats = trainer.rollout.stats()
    assert {"actor0_cpu_share", "actor1_cpu_share"} <= set(stats)
    assert all(0 < stats[f"actor{i}_cpu_share"] < 4 for i in (0, 1))
    assert stats["actor_cpu_s"] > 0 and stats["actor_busy_s"] > 0
    log = (tmp_path / "kill" / "actors.log").read_text()
    assert "collecting " in log and ", CPU share " in log


def test_a_run_with_workers_repeats_and_resumes_with_its_actors_generators(local_ray, tmp_path):
    sets = [f"runs_dir={tmp_path}", "run_name=res", *GOLDEN, "workers=2", "exploiter_every=0"]
    sets += ["teacher=", "eval_every=0", "overlap=false"]
    make_trainer(ppo.load_args(None, [*sets, "total_steps=512"])).train()
    again = [*sets, "total_steps=512", "run_name=again"]
    make_trainer(ppo.load_args(None, again)).train()  # a fixed N and seed repeat their run
    assert checkpoint_hashes(tmp_path / "res") == checkpoint_hashes(tmp_path / "again")
    saved = load_trainer_state(tmp_path / "res" / "checkpoints" / "step_0000000512")["workers"]
    resumed = make_trainer(ppo.load_args(None, sets), resume=True)
    assert resumed.global_step == 512 and len(resumed.rollout.saved) == 2
    assert [a["np_rng"] for a in resumed.rollout.saved] == [json.loads(a["np_rng"]) for a in saved]
    resumed.train()
    assert resumed.global_step == 1024 and resumed.update == 4


def test_an_exploiter_trains_in_its_own_actor_beside_the_run(local_ray, tmp_path, capsys):
    sets = [f"runs_dir={tmp_path}", "run_name=ex", *GOLDEN, "workers=1", "exploiter_every=2"]
    sets += ["teacher=", "eval_every=0", "total_steps=1024"]
    trainer = make_trainer(ppo.load_args(None, sets))
    learn = trainer._learn

    def learn_after_the_exploiter(*a, **k):
        if trainer.exploiter.busy and trainer.update == 3:  # let it finish before the end
            ray.wait([trainer.exploiter.pending], timeout=120)
        return learn(*a, **k)

    trainer._learn = learn_after_the_exploiter
    trainer.train()
    out = capsys.readouterr().out
    assert "exploiter 0: training beside the main run" in out
    assert "exploiter 0: win rate" in out  # booked by the driver when done
    assert trainer.exploiters == 1  # one at a time: update 4 found none to book and none busy
    assert (tmp_path / "ex" / "exploiters" / "0" / "checkpoints").is_dir()


def test_more_workers_than_cpus_is_refused_and_writes_nothing(local_ray, tmp_path):
    args = ppo.load_args(None, [f"runs_dir={tmp_path}", "run_name=big", *GOLDEN, "workers=3"])
    with pytest.raises(ValueError, match="workers: 3 is more than the 2 CPUs Ray sees"):
        make_trainer(args)
    assert not (tmp_path / "big").exists()


@pytest.mark.parametrize(
    ("sets", "message"),
    [
        (["workers=-1"], "workers must be >= 0, got -1"),
        (["workers=40"], r"workers \(40\) must not exceed num_envs \(32\)"),
        (["rollout_split=turns"], "rollout_split: unknown split 'turns'; expected one of games"),
        (
            ["workers=2", "rollout_split=batches", "overlap=false"],
            "rollout_split: batches needs overlap: true",
        ),
    ],
)
def test_bad_worker_counts_are_refused(sets, message):
    with pytest.raises(ValueError, match=message):
        ppo.load_args(None, [*GOLDEN, *sets])


def test_an_unreachable_ray_address_fails_fast():
    with pytest.raises(ValueError, match=r"RAY_ADDRESS '127.0.0.1:9' is unreachable"):
        cluster._check_reachable("127.0.0.1:9")  # the discard port: nobody listens
    with pytest.raises(ValueError, match="must be host:port"):
        cluster._check_reachable("nowhere")


def test_workers_without_ray_name_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "ray", None)  # as if not installed
    with pytest.raises(ValueError, match=r'workers: 2 needs Ray.*pip install -e "\.\[ray\]"'):
        cluster.require_ray(2)


def test_the_in_process_trainer_never_imports_ray():
    code = "import sys, liars_train.ppo, liars_train.train; assert 'ray' not in sys.modules"
    subprocess.run([sys.executable, "-c", code], check=True)


def _crash_outside(driver: int):
    """A task whose worker process dies, as one on a node that is lost.

    It kills only a process other than ``driver`` (the test's own): should Ray ever run it
    in the driver, the test fails with a message instead of ending the whole test run.
    """

    def crash(*args, **kwargs):
        if os.getpid() == driver:
            raise RuntimeError("the crashing task ran in the test's own process")
        os.kill(os.getpid(), signal.SIGKILL)

    return crash


def _evaluation_policy():
    """The settings of the evaluation tests (one worker) and a fresh policy."""
    from liars_env.agents.policy import PolicyNet
    from liars_env.batched import BatchedEnv
    from liars_train.ppo.settings import game_rules, network_shape

    args = ppo.load_args(None, [*GOLDEN, "workers=1", "ray_timeout=60"])
    rules = game_rules(args)
    return args, PolicyNet(network_shape(args, BatchedEnv(rules, num_envs=1, seed=0)), rules)


def test_an_evaluation_lost_with_its_node_is_run_again_then_skipped(local_ray, capsys):
    from liars_train.distributed.evaluation import RemoteEvaluations

    args, policy = _evaluation_policy()
    evaluations = RemoteEvaluations(args, evaluate=_crash_outside(os.getpid()))
    evaluations.submit(policy, 2, 512)
    assert evaluations.done(wait=True) == []  # no row: run again once, then skipped
    out = capsys.readouterr().out
    assert "evaluation of update 2 lost (ActorDiedError); run again" in out
    assert "evaluation of update 2 lost again (ActorDiedError); skipped" in out
    assert evaluations.pending == []
    evaluations.close()


def test_every_evaluation_plays_in_one_process_and_those_queued_on_a_lost_one_run_again(
    local_ray, tmp_path, capsys
):
    """One actor serves the run's evaluations (no process started per evaluation); when
    it is lost, the evaluations queued on it run again on the next, in order."""
    from liars_train.distributed.evaluation import RemoteEvaluations

    marker = tmp_path / "crashed"

    def pid_once_crashed(settings, weights, seed):
        if seed == 10_002 and not marker.exists():  # update 2's first try: the node goes
            marker.touch()
            os.kill(os.getpid(), signal.SIGKILL)
        return [{"pid": os.getpid(), "seed": seed}]

    args, policy = _evaluation_policy()
    evaluations = RemoteEvaluations(args, evaluate=pid_once_crashed)
    evaluations.submit(policy, 1, 256)
    (first,) = evaluations.done(wait=True)
    for update in (2, 3, 4):
        evaluations.submit(policy, update, 256 * update)
    done = evaluations.done(wait=True)
    evaluations.close()
    assert [e.update for e in done] == [2, 3, 4] and [e.step for e in done] == [512, 768, 1024]
    assert [e.results[0]["seed"] for e in done] == [10_002, 10_003, 10_004]
    pids = {e.results[0]["pid"] for e in done}
    assert len(pids) == 1 and first.results[0]["pid"] not in pids | {os.getpid()}
    out = capsys.readouterr().out
    assert "evaluation of update 2 lost (ActorDiedError); run again" in out
    assert "evaluations of updates 3, 4 (queued on the lost actor) run again" in out


def _kill_actor_after(trainer, update: int):
    """Wraps the trainer's update: after update ``update``, actor 1's process is killed."""
    learn = trainer._learn

    def learn_then_kill(*a, **k):
        out = learn(*a, **k)
        if trainer.update == update - 1:  # (the counter moves on after the update)
            os.kill(trainer.rollout.pids()[1], signal.SIGKILL)
        return out

    trainer._learn = learn_then_kill


def test_the_same_seed_and_the_same_capacity_changes_write_the_same_checkpoints(
    local_ray, tmp_path
):
    sets = [f"runs_dir={tmp_path}", *GOLDEN, "workers=2", "overlap=false", "exploiter_every=0"]
    sets += ["teacher=", "eval_every=0", "total_steps=1536"]
    for name in ("a", "b"):
        trainer = make_trainer(ppo.load_args(None, [*sets, f"run_name={name}"]))
        _kill_actor_after(trainer, 2)
        trainer.train()
        assert trainer.rollout.restarts == 1 and trainer.rollout.generations == [0, 1]
    assert checkpoint_hashes(tmp_path / "a") == checkpoint_hashes(tmp_path / "b")
    calm = make_trainer(ppo.load_args(None, [*sets, "run_name=calm"]))
    calm.train()  # without the change: other games for share 1 from update 3 on
    assert checkpoint_hashes(tmp_path / "calm") != checkpoint_hashes(tmp_path / "a")


def _lose_every_actor_with_no_room(trainer, monkeypatch, refusals: int) -> list:
    """After update 1 every actor's process is killed, and the first ``refusals``
    replacements find no CPU. Returns what is seen before each update from then on:
    ``(actors live, shares the driver plays)``, filled as the run trains."""
    place = trainer.rollout._await_placement
    refused = []

    def no_room(waiting, room=False):
        if trainer.update and len(refused) < refusals:
            refused.append(True)
            for actor, _ in waiting.values():
                ray.kill(actor.handle, no_restart=True)
            return {}
        return place(waiting, room)

    monkeypatch.setattr(trainer.rollout, "_await_placement", no_room)
    learn = trainer._learn
    seen = []

    def learn_and_watch(*a, **k):
        if trainer.update == 1:
            for pid in trainer.rollout.pids():
                os.kill(pid, signal.SIGKILL)
        if trainer.rollout.pending:  # let the actors started again finish their start
            pings = [ping for _, ping, _ in trainer.rollout.pending.values()]
            ray.wait(pings, num_returns=len(pings), timeout=120)
        seen.append((len(trainer.rollout.actors), sorted(trainer.rollout.local_shares)))
        return learn(*a, **k)

    trainer._learn = learn_and_watch
    return seen


def test_with_no_actor_left_the_driver_plays_and_an_actor_comes_back(
    local_ray, tmp_path, capsys, monkeypatch
):
    from liars_train.distributed import rollouts

    monkeypatch.setattr(rollouts, "REGROW_EVERY_S", 0.0)
    sets = [f"runs_dir={tmp_path}", "run_name=driver", *GOLDEN, "workers=1", "overlap=false"]
    sets += ["exploiter_every=0", "teacher=", "eval_every=0", "total_steps=2048"]
    trainer = make_trainer(ppo.load_args(None, sets))
    seen = _lose_every_actor_with_no_room(trainer, monkeypatch, refusals=1)
    trainer.train()
    out = capsys.readouterr().out
    assert trainer.global_step == 2048  # every update's full decisions
    assert (0, [0]) in seen and seen[-1] == (1, []), seen
    assert "shares moved: driver: shares [0] (32 games)" in out
    assert "rollout actor 0 joined on node" in out and "1 of 1 actors" in out


def test_whole_batches_in_turn_repeat_and_survive_a_killed_actor(local_ray, tmp_path, capsys):
    # rollout_split: batches: each share holds num_envs games and the shares play whole
    # batches in turn, two in flight (a lag of 2 updates); the same seed, the same run
    sets = [f"runs_dir={tmp_path}", *GOLDEN, "workers=2", "rollout_split=batches"]
    sets += ["exploiter_every=0", "teacher=", "eval_every=0", "total_steps=1536"]
    shown = []
    for name in ("a", "b"):
        trainer = make_trainer(ppo.load_args(None, [*sets, f"run_name={name}"]))
        assert trainer.rollout.lag == 2 and trainer.rollout.shares == [32, 32]
        learn = trainer._learn

        def learn_and_look(*a, rollout=trainer.rollout, learn=learn, **k):
            shown.append((rollout.describe(), set(rollout.stats())))
            return learn(*a, **k)

        trainer._learn = learn_and_look
        trainer.train()
        assert trainer.global_step == 1536 and trainer.update == 6
    assert checkpoint_hashes(tmp_path / "a") == checkpoint_hashes(tmp_path / "b")
    # each share's games are booked on the driver's league, all of them
    booked = sum(m.booked_games for m in trainer.league.members)
    assert 0 < sum(m.games for m in trainer.league.members) <= booked
    # the progress bar and TensorBoard show each actor's rate, from its last batch
    line, keys = shown[-1]
    assert re.fullmatch(r"actors: 32g [\d.]+k/s 32g [\d.]+k/s", line), line
    assert {"actor0_steps_per_second", "actor1_steps_per_second"} <= keys

    trainer = make_trainer(ppo.load_args(None, [*sets, "run_name=kill"]))
    _kill_actor_after(trainer, 2)
    trainer.train()
    assert trainer.rollout.restarts == 1 and trainer.global_step == 1536
    assert "rollout actor 1 died" in capsys.readouterr().out


def test_whole_batches_in_flight_on_the_driver_move_to_an_actor_that_comes_back(
    local_ray, tmp_path, capsys, monkeypatch
):
    from liars_train.distributed import rollouts

    monkeypatch.setattr(rollouts, "REGROW_EVERY_S", 0.0)
    sets = [f"runs_dir={tmp_path}", "run_name=whole", *GOLDEN, "workers=2"]
    sets += ["rollout_split=batches", "exploiter_every=0", "teacher=", "eval_every=0"]
    trainer = make_trainer(ppo.load_args(None, [*sets, "total_steps=2560"]))
    seen = _lose_every_actor_with_no_room(trainer, monkeypatch, refusals=2)
    trainer.train()
    out = capsys.readouterr().out
    assert trainer.global_step == 2560  # every update's full decisions
    assert any(shares == [0, 1] for _, shares in seen), seen  # the driver played both
    assert seen[-1] == (2, []), seen  # and the actors took them back
    assert re.search(r"shares moved: driver: shares \[[01], [01]\] \(64 games\)", out), out
    assert "rollout actor 0 joined" in out and "rollout actor 1 joined" in out


def test_the_shares_games_are_booked_on_the_drivers_league_as_in_one_process():
    from types import SimpleNamespace

    from liars_train.distributed.league_sync import add_booked, booked_since, merge_results
    from liars_train.league import WIN_WINDOW, Member

    def league_of(*figures):
        members = [Member(name, "bot", wins=w, games=g) for name, w, g in figures]
        return SimpleNamespace(members=members)

    # a share's league: what it booked is counted apart from its halved window
    share = league_of(("a", WIN_WINDOW / 2, WIN_WINDOW - 2), ("b", 1.0, 2.0))
    start = {m.name: (m.booked_wins, m.booked_games) for m in share.members}
    share.members[0].record(3, 4)  # past the window: its figures halve
    share.members.append(Member("new", "bot"))  # joined on the share, played nothing
    assert share.members[0].games == (WIN_WINDOW + 2) / 2
    assert booked_since(share, start) == {"a": (3.0, 4.0)}
    # whole batches: the games are booked on top of the driver's, halved as in one process
    driver = league_of(("a", 12.0, 20.0), ("b", 1.0, 2.0))
    add_booked(driver, [{"a": (3.0, 4.0), "gone": (1.0, 1.0)}])  # "gone" left the driver
    assert [(m.wins, m.games) for m in driver.members] == [(15.0, 24.0), (1.0, 2.0)]
    driver = league_of(("a", WIN_WINDOW - 2.0, WIN_WINDOW))
    add_booked(driver, [{"a": (4.0, 4.0)}])
    assert (driver.members[0].wins, driver.members[0].games) == (
        (WIN_WINDOW + 2.0) / 2,
        (WIN_WINDOW + 4.0) / 2,
    )
    # halves of a batch, both from the driver's (1000, 1990): the first share's figures
    # stand (halved on it), the second's 20 games go on top; the difference of its halved
    # figures would have taken back 985 games it never played
    driver = league_of(("a", 1000.0, 1990.0))
    first, second = (1010.0 / 2, 2010.0 / 2), (1008.0 / 2, 2010.0 / 2)
    merge_results(driver, [{"a": first}, {"a": second}], [{"a": (10.0, 20.0)}, {"a": (8.0, 20.0)}])
    assert (driver.members[0].wins, driver.members[0].games) == (513.0, 1025.0)
    merge_results(driver, [{"a": (7.0, 9.0)}], [{"a": (7.0, 9.0)}])  # one share: its figures
    assert (driver.members[0].wins, driver.members[0].games) == (7.0, 9.0)
