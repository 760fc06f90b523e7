"""Ray RLlib backend: env adapter, loopback-only Ray, a smoke run, save/restore, export."""

from __future__ import annotations

import numpy as np
import pytest

ray = pytest.importorskip("ray")
psutil = pytest.importorskip("psutil")

from liars_env import RuleSet  # noqa: E402
from liars_env.agents.policy import load_policy  # noqa: E402
from liars_train import rllib  # noqa: E402
from liars_train.rllib import RLlibArgs, RLlibLiarsDiceEnv  # noqa: E402


@pytest.fixture(scope="module")
def local_ray():
    rllib.start_ray()
    yield
    ray.shutdown()


def test_env_adapter_masks_and_zero_sum_returns():
    env = RLlibLiarsDiceEnv({"rules": "perudo", "num_players": 3})
    rng = np.random.default_rng(0)
    for seed in range(5):
        obs, _ = env.reset(seed=seed)
        returns = dict.fromkeys(env.possible_agents, 0.0)
        last_reward = {}
        done = False
        while not done:
            (agent,) = [a for a in obs if not env.env.terminations.get(a, True)] or list(obs)
            o = obs[agent]
            assert o["observations"].dtype == np.float32 and o["action_mask"].dtype == np.float32
            assert env.observation_space[agent].contains(o)
            action = int(rng.choice(np.flatnonzero(o["action_mask"])))
            obs, rewards, terminateds, _, _ = env.step({agent: action})
            for a, r in rewards.items():
                returns[a] += r
                last_reward[a] = r
            done = terminateds["__all__"]
        assert sum(returns.values()) == pytest.approx(0.0)  # every final reward arrived
        assert sorted(last_reward.values()) == [-0.5, -0.5, 1.0]


def test_local_ray_listens_on_loopback_only(local_ray):
    assert {node["NodeManagerAddress"] for node in ray.nodes()} == {"127.0.0.1"}
    listening = []
    for proc in psutil.process_iter(["name"]):
        try:
            listening += [
                (proc.info["name"], c.laddr.ip)
                for c in proc.net_connections("inet")
                if c.status == psutil.CONN_LISTEN
            ]
        except (psutil.AccessDenied, psutil.NoSuchProcess):
            continue
    ray_sockets = [(n, ip) for n, ip in listening if "ray" in n or n in ("gcs_server", "python")]
    assert ray_sockets
    for name, ip in ray_sockets:
        assert ip in ("127.0.0.1", "::1", "::ffff:127.0.0.1"), (name, ip)


def test_smoke_train_save_restore_export_and_evaluate(local_ray, tmp_path):
    from ray.rllib.algorithms.algorithm import Algorithm

    from liars_train.evaluation.tournament import evaluate

    args = RLlibArgs(
        run_name="smoke",
        runs_dir=str(tmp_path),
        iterations=2,
        train_batch_size=256,
        minibatch_size=128,
        num_epochs=1,
        hidden_size=32,
        num_envs_per_env_runner=4,
        rollout_fragment_length=32,
    )
    out = rllib.train(args, progress=False)
    assert [row["iteration"] for row in out["history"]] == [1, 2]
    assert out["history"][-1]["env_steps"] >= 256
    model, meta = load_policy(out["exported"], RuleSet.preset("perudo"))
    assert meta["backend"] == "rllib" and meta["iterations"] == 2
    restored = Algorithm.from_checkpoint(out["rllib_checkpoint"])
    try:
        module = restored.get_module(rllib.MAIN)
        for key, value in model.state_dict().items():
            assert np.allclose(value.numpy(), module.net.state_dict()[key].numpy())
    finally:
        restored.stop()
    result = evaluate(
        "perudo", [f"checkpoint:{out['exported']}", "random", "random"], games=3, progress=False
    )
    assert result.games == 3 and sum(a.wins for a in result.agents) == 3


def test_rllib_config_loads():
    from liars_train.config import load_settings

    args = load_settings(RLlibArgs, "configs/rllib_perudo_3p.yaml")
    assert args.num_players == 3 and args.num_envs_per_env_runner > 1


def test_cli_rejects_bad_rllib_configs(tmp_path, capsys):
    from liars_train.train import main

    assert main(["--backend", "rllib", "--set", "iterations=0"]) == 2
    assert "iterations must be at least 1" in capsys.readouterr().err
    assert main(["--backend", "rllib", "--set", "num_env_runners=-1"]) == 2
    assert "num_env_runners must be >= 0, got -1" in capsys.readouterr().err
    assert main(["--backend", "rllib", "--set", "colour=red"]) == 2
    assert "unknown setting 'colour'" in capsys.readouterr().err
