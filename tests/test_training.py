"""Training: a tiny end-to-end run, checkpoints, resume, configs and bad input."""

from __future__ import annotations

import json
import re
import shutil
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
import torch

from liars_env import LiarsDiceGame, ObservationLayout, RuleSet
from liars_env.agents import make_agent, view_of
from liars_env.agents.policy import (
    CheckpointError,
    NetworkShape,
    PolicyNet,
    RulesMismatchError,
    build_meta,
    load_policy,
    load_trainer_state,
    sample_actions,
    transfer_weights,
    write_checkpoint,
)
from liars_env.engine import get_codec
from liars_train import ppo
from liars_train import train as train_cli
from liars_train.config import load_run_settings

TINY = [
    "total_steps=2048",
    "num_envs=64",
    "num_steps=8",
    "num_minibatches=2",
    "update_epochs=1",
    "hidden_size=32",
    "eval_every=2",
    "eval_games=30",
    "checkpoint_every=2",
    "final_eval_games=12",
    "snapshot_every=1",
    "progress=false",
    "torch_threads=1",
]


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory):
    runs = tmp_path_factory.mktemp("runs")
    code = train_cli.main(
        [
            "--set",
            f"runs_dir={runs}",
            "--set",
            "run_name=tiny",
            *[x for item in TINY for x in ("--set", item)],
        ]
    )
    assert code == 0
    return runs / "tiny"


def test_tiny_end_to_end_run_through_the_cli(tiny_run, capsys):
    assert (tiny_run / "learning_curve.png").read_bytes()[:4] == b"\x89PNG"
    rows = (tiny_run / "metrics.csv").read_text().splitlines()
    header = rows[0].split(",")
    assert header[:3] == ["update", "step", "win_rate_vs_probabilistic"] and len(rows) == 3
    assert {"win_rate_vs_bayes", "win_rate_vs_belief", "league_win_rate_vs_belief"} <= set(header)
    assert any(h.startswith("league_weight_snapshot@") for h in header)
    final = json.loads((tiny_run / "final_eval.json").read_text())
    assert {r["bot"] for r in final["rows"]} == {
        "probabilistic",
        "cautious",
        "bold",
        "bayes",
        "belief",
    }
    assert list(tiny_run.glob("events.out.tfevents.*"))
    ckpts = sorted((tiny_run / "checkpoints").glob("step_*"))
    assert len(ckpts) == 2 and (tiny_run / "checkpoints" / "best" / "model.safetensors").exists()
    meta = json.loads((ckpts[-1] / "meta.json").read_text())
    assert meta["step"] == 2048 and meta["observation_version"] == 1
    assert meta["rules"] == RuleSet.preset("perudo").to_dict()
    assert set(meta["packages"]) >= {"torch", "liars_env"}
    assert not list((tiny_run / "checkpoints").glob(".*"))  # no temporary leftovers


def test_resume_continues_the_counters(tiny_run, tmp_path):
    run = tmp_path / "tiny"
    shutil.copytree(tiny_run, run)
    config = json.loads((run / "config.json").read_text())
    config["runs_dir"] = str(tmp_path)
    config["total_steps"] = 4096
    (run / "config.json").write_text(json.dumps(config))
    trainer = ppo.Trainer(ppo.make_args(config), resume=True)
    assert trainer.update == 4 and trainer.global_step == 2048
    snapshots = [m for m in trainer.league.members if m.kind == "snapshot"]
    assert len(snapshots) == 4 and len(trainer.history) == 2
    last = sorted((run / "checkpoints").glob("step_*"))[-1]
    saved = json.loads(load_trainer_state(last)["league"])
    assert [m.name for m in trainer.league.members] == [m["name"] for m in saved]
    assert [m.games for m in trainer.league.members] == [m["games"] for m in saved]
    assert trainer.league.members[1].games > 0  # results were booked before the save
    trainer.train()
    assert trainer.global_step == 4096 and trainer.update == 8
    meta = json.loads(
        sorted((run / "checkpoints").glob("step_*"))[-1].joinpath("meta.json").read_text()
    )
    assert meta["step"] == 4096
    assert len((run / "metrics.csv").read_text().splitlines()) == 5


def test_init_checkpoint_starts_from_its_weights(tiny_run, tmp_path):
    config = json.loads((tiny_run / "config.json").read_text())
    best = tiny_run / "checkpoints" / "best"
    config.update(runs_dir=str(tmp_path), run_name="fine", init_checkpoint=str(best))
    trainer = ppo.Trainer(ppo.make_args(config))
    reference, _ = load_policy(best, trainer.rules)
    for name, tensor in reference.state_dict().items():
        assert torch.equal(trainer.policy.state_dict()[name], tensor), name
    assert trainer.global_step == 0 and trainer.update == 0  # counters start afresh
    fresh = ppo.Trainer(ppo.make_args({**config, "init_checkpoint": ""}))
    assert not torch.equal(
        fresh.policy.state_dict()["torso.0.weight"], reference.state_dict()["torso.0.weight"]
    )


def test_init_checkpoint_errors(tiny_run, tmp_path):
    config = json.loads((tiny_run / "config.json").read_text())
    config.update(runs_dir=str(tmp_path), run_name="fine")
    missing = ppo.make_args({**config, "init_checkpoint": str(tmp_path / "missing")})
    with pytest.raises(ValueError, match="is not a checkpoint folder"):
        ppo.Trainer(missing)
    wider = {**config, "hidden_size": 48, "init_checkpoint": str(tiny_run / "checkpoints/best")}
    with pytest.raises(ValueError, match="init_checkpoint .* differs from the config"):
        ppo.Trainer(ppo.make_args(wider))
    other_rules = {**wider, "hidden_size": 32, "num_players": 2}
    with pytest.raises(CheckpointError):
        ppo.Trainer(ppo.make_args(other_rules))


def test_init_other_rules_transfers_weights_between_variants(tiny_run, tmp_path):
    config = json.loads((tiny_run / "config.json").read_text())
    best = tiny_run / "checkpoints" / "best"
    config.update(runs_dir=str(tmp_path), run_name="transfer", init_checkpoint=str(best))
    assert config["rules"] == "perudo"
    palifico = {**config, "rules": "perudo_palifico"}  # same observation and action sizes
    with pytest.raises(RulesMismatchError, match="palifico=False .*init_other_rules: true"):
        ppo.Trainer(ppo.make_args(palifico))
    trainer = ppo.Trainer(ppo.make_args({**palifico, "init_other_rules": True}))
    assert trainer.rules.palifico and trainer.policy.rules.palifico  # tables of the new rules
    reference, _ = load_policy(best)
    for name, tensor in reference.state_dict().items():
        assert torch.equal(trainer.policy.state_dict()[name], tensor), name
    calza = {**config, "rules": "perudo_calza", "init_other_rules": True}  # + the exact call
    trainer = ppo.Trainer(ppo.make_args(calza))
    head, old = trainer.policy.state_dict(), reference.state_dict()
    exact, challenge = trainer.env.codec.exact, trainer.env.codec.challenge
    assert exact == 91 and challenge == 90
    assert torch.equal(head["policy_head.weight"][:91], old["policy_head.weight"])
    assert torch.equal(head["policy_head.weight"][exact], old["policy_head.weight"][challenge])
    assert head["policy_head.bias"][exact] == old["policy_head.bias"][challenge] - 2.0
    wider = {**calza, "hidden_size": 48}
    with pytest.raises(ValueError, match="beyond the number of actions"):
        ppo.Trainer(ppo.make_args(wider))


def test_transfer_weights_follows_the_actions_meanings():
    shape = NetworkShape(376, 92, 16, 1, True, True)
    calza = PolicyNet(shape, RuleSet.preset("perudo_calza", num_players=3))
    perudo = PolicyNet(replace(shape, num_actions=91), RuleSet.preset("perudo", num_players=3))
    assert transfer_weights(calza, perudo) == []  # the exact call's row is dropped
    head = calza.state_dict()["policy_head.weight"]
    assert torch.equal(perudo.state_dict()["policy_head.weight"], head[:91])
    rules = RuleSet.preset("perudo", num_players=2)
    size = ObservationLayout(rules).size
    two = PolicyNet(NetworkShape(size, 61, 16, 1, True, True), rules)
    with pytest.raises(ValueError, match="beyond the number of actions"):  # 10 dice, not 15
        transfer_weights(two, perudo)
    six = RuleSet.preset("perudo", num_players=2, dice_per_player=1, faces=6)  # 12 bids
    three = RuleSet.preset("perudo", num_players=3, dice_per_player=1, faces=3)  # 9 bids
    assert ObservationLayout(six).size == ObservationLayout(three).size  # one size, other bids
    small = NetworkShape(ObservationLayout(six).size, 13, 16, 1, True, True)
    with pytest.raises(ValueError, match="the bids differ"):
        transfer_weights(PolicyNet(small, six), PolicyNet(replace(small, num_actions=10), three))
    palifico = PolicyNet(
        replace(shape, hidden_size=8), RuleSet.preset("perudo_palifico", num_players=3)
    )
    with pytest.raises(ValueError, match="beyond the number of actions"):
        transfer_weights(calza, palifico)


def test_a_fresh_run_refuses_a_folder_with_checkpoints(tiny_run, tmp_path, capsys):
    run = tmp_path / "tiny"
    shutil.copytree(tiny_run, run)
    before = sorted(p.name for p in (run / "checkpoints").iterdir())
    argv = ["--set", f"runs_dir={tmp_path}", "--set", "run_name=tiny"]
    argv += [x for item in TINY for x in ("--set", item)]
    assert train_cli.main(argv) == 2
    assert "already holds checkpoints" in capsys.readouterr().err
    assert sorted(p.name for p in (run / "checkpoints").iterdir()) == before  # untouched
    config = json.loads((run / "config.json").read_text())
    config.update(runs_dir=str(tmp_path), overwrite=True)
    assert list(run.glob("events.out.tfevents.*")) and (run / "metrics.csv").exists()
    trainer = ppo.Trainer(ppo.make_args(config))
    assert not (run / "checkpoints").exists() and trainer.global_step == 0
    assert not list(run.glob("events.out.tfevents.*")) and not (run / "metrics.csv").exists()


def test_a_folder_with_only_best_is_refused_too(tiny_run, tmp_path):
    run = tmp_path / "tiny"
    shutil.copytree(tiny_run, run)
    for step in (run / "checkpoints").glob("step_*"):
        shutil.rmtree(step)
    config = json.loads((run / "config.json").read_text())
    config.update(runs_dir=str(tmp_path))
    with pytest.raises(ValueError, match="already holds checkpoints"):
        ppo.Trainer(ppo.make_args(config))
    assert (run / "checkpoints" / "best").is_dir()


def test_resume_ignores_a_vanished_init_checkpoint(tiny_run, tmp_path):
    run = tmp_path / "tiny"
    shutil.copytree(tiny_run, run)
    config = json.loads((run / "config.json").read_text())
    config.update(runs_dir=str(tmp_path), init_checkpoint=str(tmp_path / "gone"))
    trainer = ppo.Trainer(ppo.make_args(config), resume=True)
    assert trainer.global_step == 2048


def test_exploiters_do_not_inherit_init_checkpoint(tiny_run, tmp_path, monkeypatch):
    config = json.loads((tiny_run / "config.json").read_text())
    best = str(tiny_run / "checkpoints" / "best")
    config.update(runs_dir=str(tmp_path), run_name="fine", init_checkpoint=best)
    config.update(exploiter_init="scratch", exploiter_steps=512, exploiter_eval_games=6)
    trainer = ppo.Trainer(ppo.make_args(config))
    assert _exploiter_settings(trainer, "init_checkpoint", tmp_path, monkeypatch) == [""]


def _exploiter_settings(trainer, name, tmp_path, monkeypatch) -> list:
    """Trains one exploiter of ``trainer``; the ``name`` setting of every Trainer made."""
    from torch.utils.tensorboard import SummaryWriter

    seen = []
    original = ppo.Trainer.__init__

    def spy(self, args, *a, **k):
        seen.append(getattr(args, name))
        original(self, args, *a, **k)

    monkeypatch.setattr(ppo.Trainer, "__init__", spy)
    writer = SummaryWriter(str(tmp_path / "tb"))
    trainer._train_exploiter(writer)
    writer.close()
    return seen


@pytest.mark.parametrize(("own_rate", "expected"), [(0.0, 1e-4), (3e-4, 3e-4)])
def test_exploiters_train_at_their_own_learning_rate(
    tiny_run, tmp_path, monkeypatch, own_rate, expected
):
    """``exploiter_learning_rate`` sets the exploiters' rate; 0 keeps the main learner's."""
    config = json.loads((tiny_run / "config.json").read_text())
    config.update(runs_dir=str(tmp_path), run_name="fine", learning_rate=1e-4)
    config.update(exploiter_steps=512, exploiter_eval_games=6)
    config.update(exploiter_learning_rate=own_rate)
    trainer = ppo.Trainer(ppo.make_args(config))
    seen = _exploiter_settings(trainer, "learning_rate", tmp_path, monkeypatch)
    assert seen == [expected]
    assert trainer.args.learning_rate == 1e-4  # the main learner's is untouched


def test_resume_a_run_folder_given_by_path_continues_in_that_folder(
    tiny_run, tmp_path, monkeypatch
):
    elsewhere = tmp_path / "elsewhere" / "runs" / "tiny"
    shutil.copytree(tiny_run, elsewhere)
    config = json.loads((elsewhere / "config.json").read_text())
    config.update(runs_dir="runs", total_steps=4096)  # as saved by a run started elsewhere
    (elsewhere / "config.json").write_text(json.dumps(config))
    monkeypatch.chdir(tmp_path)  # no runs/tiny here
    args = load_run_settings(ppo.Args, str(elsewhere))
    assert Path(args.runs_dir) / args.run_name == elsewhere
    trainer = ppo.Trainer(args, resume=True)
    assert trainer.global_step == 2048 and trainer.run_dir == elsewhere
    # by name under runs_dir as well
    args = load_run_settings(ppo.Args, "tiny", runs_dir=str(elsewhere.parent))
    assert Path(args.runs_dir) / args.run_name == elsewhere


def test_resume_follows_a_changed_league_and_keeps_the_rest(tiny_run, tmp_path, capsys):
    run = tmp_path / "tiny"
    shutil.copytree(tiny_run, run)
    config = json.loads((run / "config.json").read_text())
    assert config["league"] == ["probabilistic", "bayes", "belief"]
    config.update(runs_dir=str(tmp_path), league=["bayes", "bold"])
    trainer = ppo.Trainer(ppo.make_args(config), resume=True)
    members = {m.name: m for m in trainer.league.members}
    assert "probabilistic" not in members and "belief" not in members
    assert members["bold"].games == 0 and members["bayes"].games > 0  # kept its record
    assert any(m.kind == "snapshot" for m in trainer.league.members)
    assert (trainer.league.slot < len(trainer.league.members)).all()
    assert "left probabilistic, belief; joined bold" in capsys.readouterr().out


def test_resume_takes_a_new_constant_learning_rate(tiny_run, tmp_path):
    run = tmp_path / "tiny"
    shutil.copytree(tiny_run, run)
    config = json.loads((run / "config.json").read_text())
    config.update(runs_dir=str(tmp_path), anneal_lr=False, learning_rate=1e-5)
    trainer = ppo.Trainer(ppo.make_args(config), resume=True)
    assert trainer.optimizer.param_groups[0]["lr"] == 1e-5


def test_resume_cli_errors(tmp_path, capsys):
    assert train_cli.main(["--resume", str(tmp_path / "nothing")]) == 2
    assert "no run found" in capsys.readouterr().err


def test_saved_and_reloaded_checkpoint_gives_identical_probabilities(tiny_run):
    rules = RuleSet.preset("perudo")
    path = tiny_run / "checkpoints" / "best"
    agent_a = make_agent(f"checkpoint:{path}", rules, seed=0)
    agent_b = make_agent(f"checkpoint:{path}", rules, seed=0)
    game, layout = LiarsDiceGame(rules), ObservationLayout(rules)
    rng = np.random.default_rng(0)
    state = game.new_game(rng)
    for _ in range(30):
        if state.is_over:
            break
        view = view_of(game, layout, state)
        pa, pb = agent_a.action_probabilities(view), agent_b.action_probabilities(view)
        assert torch.equal(pa, pb)
        assert pa[torch.from_numpy(view.mask == 0)].sum() == 0  # nothing on illegal actions
        game.apply(state, agent_a.act(view), rng)


def test_checkpoint_round_trip_is_exact(tmp_path):
    rules = RuleSet.preset("perudo", num_players=2)
    shape = NetworkShape(ObservationLayout(rules).size, 61, hidden_size=16, hidden_layers=1)
    net = PolicyNet(shape)
    path = write_checkpoint(
        tmp_path / "ck", net, build_meta(rules, shape, step=5), {"update": 1, "optimizer": {}}
    )
    loaded, meta = load_policy(path, rules)
    obs = torch.rand(4, shape.observation_size)
    mask = torch.ones(4, 61, dtype=torch.bool)
    assert torch.equal(net(obs, mask)[0], loaded(obs, mask)[0]) and meta["step"] == 5
    assert load_trainer_state(path)["update"] == 1
    write_checkpoint(path, net, build_meta(rules, shape, step=6))  # replace in place
    assert json.loads((path / "meta.json").read_text())["step"] == 6


def test_masked_sampling_never_picks_an_illegal_action():
    gen = torch.Generator().manual_seed(0)
    logits = torch.randn(2000, 12) * 5
    mask = torch.rand(2000, 12) < 0.3
    mask[:, 0] = True
    masked = logits.masked_fill(~mask, torch.finfo(logits.dtype).min)
    actions = sample_actions(masked, gen)
    assert mask[torch.arange(2000), actions].all()
    assert mask[torch.arange(2000), sample_actions(masked, greedy=True)].all()


def test_sampling_follows_the_policy_and_never_takes_a_trailing_illegal_action(monkeypatch):
    logits = torch.tensor([[0.0, 1.0, -1e9, 2.0, -1e9, -1e9]]).repeat(100_000, 1)
    actions = sample_actions(logits, torch.Generator().manual_seed(2))
    freq = torch.bincount(actions, minlength=6) / len(actions)
    assert torch.allclose(freq, torch.softmax(logits[0], 0), atol=0.006)
    # a draw that rounds up to the whole running sum takes the last legal action (3), not
    # an illegal one after it
    monkeypatch.setattr(torch, "rand", lambda shape, **kw: torch.ones(shape))
    assert sample_actions(logits[:2]).tolist() == [3, 3]


@pytest.fixture()
def good_checkpoint(tmp_path):
    rules = RuleSet.preset("perudo")
    shape = NetworkShape(ObservationLayout(rules).size, 91, hidden_size=16, hidden_layers=1)
    return write_checkpoint(tmp_path / "good", PolicyNet(shape), build_meta(rules, shape))


def _corrupt(path: Path, how: str) -> None:
    if how == "weights":
        (path / "model.safetensors").write_bytes(b"not a safetensors file")
    elif how == "truncated":
        data = (path / "model.safetensors").read_bytes()
        (path / "model.safetensors").write_bytes(data[: len(data) // 2])
    elif how == "meta":
        (path / "meta.json").write_text("{not json")
    elif how == "no_weights":
        (path / "model.safetensors").unlink()
    elif how == "layout":
        meta = json.loads((path / "meta.json").read_text())
        meta["observation_version"] = 0
        (path / "meta.json").write_text(json.dumps(meta))
    elif how == "shape":
        meta = json.loads((path / "meta.json").read_text())
        meta["network"]["hidden_size"] = 32
        (path / "meta.json").write_text(json.dumps(meta))
    elif how in ("hidden_str", "obs_float", "flag_int", "format_str"):
        meta = json.loads((path / "meta.json").read_text())
        if how == "hidden_str":
            meta["network"]["hidden_size"] = "16"
        elif how == "obs_float":
            meta["network"]["observation_size"] = float(meta["network"]["observation_size"])
        elif how == "flag_int":
            meta["network"]["bid_features"] = 1
        else:
            meta["format_version"] = str(meta["format_version"])
        (path / "meta.json").write_text(json.dumps(meta))
    elif how == "trainer_state":
        (path / "trainer_state.pt").write_bytes(b"\x80\x04garbage")


@pytest.mark.parametrize(
    "how, message",
    [
        ("weights", "model.safetensors is corrupt"),
        ("truncated", "model.safetensors is corrupt"),
        ("meta", "meta.json is corrupt"),
        ("no_weights", "has no model.safetensors"),
        ("layout", "observation layout v0"),
        ("shape", "weights do not fit the network .*size mismatch for torso.0.weight"),
        ("hidden_str", "network.hidden_size in meta.json must be an int >= 1, got '16'"),
        ("obs_float", "network.observation_size in meta.json must be an int >= 1, got 376.0"),
        ("flag_int", "network.bid_features in meta.json must be true or false, got 1"),
        ("format_str", "has format version '1', expected 1"),
    ],
)
def test_corrupt_checkpoints_are_rejected_clearly(good_checkpoint, how, message):
    _corrupt(good_checkpoint, how)
    with pytest.raises(CheckpointError, match=message):
        load_policy(good_checkpoint, RuleSet.preset("perudo"))


def test_corrupt_trainer_state_is_rejected(good_checkpoint):
    _corrupt(good_checkpoint, "trainer_state")
    with pytest.raises(CheckpointError, match="trainer_state.pt is corrupt"):
        load_trainer_state(good_checkpoint)


def test_mismatched_rules_are_rejected_by_the_agent_spec(good_checkpoint):
    with pytest.raises(CheckpointError, match="num_players=3 \\(asked for 2\\)"):
        make_agent(f"checkpoint:{good_checkpoint}", RuleSet.preset("perudo", num_players=2))
    with pytest.raises(CheckpointError, match="palifico=False \\(asked for True\\)"):
        make_agent(f"checkpoint:{good_checkpoint}", RuleSet.preset("perudo_palifico"))
    with pytest.raises(CheckpointError, match="is not a folder"):
        make_agent("checkpoint:/nonexistent/ck", RuleSet.preset("perudo"))


def test_checkpoint_agent_plays_in_liars_eval(good_checkpoint):
    from liars_train.evaluation.tournament import evaluate

    result = evaluate(
        "perudo", [f"checkpoint:{good_checkpoint}", "random", "random"], games=6, progress=False
    )
    assert result.games == 6 and sum(a.wins for a in result.agents) == 6


@pytest.mark.parametrize(
    "sets, message",
    [
        (["colour=red"], "unknown setting 'colour'"),
        (["num_envs=many"], "num_envs must be int, got 'many'"),
        (["learning_rate=true"], "learning_rate must be float"),
        (["rules=peruda"], "unknown preset 'peruda'"),
        (["num_players=9"], "num_players must be an int from 2 to 8"),
        (["league=[robot]"], "unknown opponent 'robot'"),
        (["league=['bold:nerve=1']"], "bad setting 'nerve=1' in bot spec 'bold:nerve=1'"),
        (["league=['bold:bluff_rate=2']"], "bluff_rate must lie in [0, 1], got 2.0"),
        (["league=['robot:bluff_rate=0.1']"], "unknown opponent 'robot:bluff_rate=0.1'"),
        (["eval_opponents=['belief:evidence=x']"], "setting evidence in bot spec"),
        (["teacher=belief:nerve=1"], "teacher must be empty or a bot with a batched twin: bad"),
        (["opponent_mix={self: 1}"], "opponent_mix was retired: the league replaced it"),
        (["self_play=0", "league=[]", "pool_size=0"], "nobody to play"),
        (["self_play=1.5"], "self_play must lie in [0, 1]"),
        (["pfsp_power=-1"], "pfsp_power must be >= 0"),
        (["pool_size=-1"], "pool_size must be >= 0, got -1"),
        (["exploiter_every=-2"], "exploiter_every must be >= 0, got -2"),
        (["eval_opponents=[robot]"], "unknown opponent 'robot'"),
        (["num_envs=10", "num_steps=3", "num_minibatches=4"], "must divide"),
        (["rule_overrides={faces: 1}"], "RuleSet.faces must be"),
        (["total_steps=0"], "total_steps must be at least 1"),
        (["oops"], "must look like key=value"),
        (["teacher=robot"], "teacher must be empty or a bot with a batched twin"),
        (["teacher_coef=-1"], "teacher_coef must be >= 0"),
        (["exploiter_learning_rate=-1e-4"], "exploiter_learning_rate must be >= 0"),
        (["engine_backend=jax"], "backend must be one of 'auto', 'torch', 'numba', got 'jax'"),
        (["eval_games=0"], "eval_games must be at least 1, got 0"),
        (["final_eval_games=-1"], "final_eval_games must be >= 0, got -1"),
        (["learn_threads=-3"], "learn_threads must be >= 0, got -3"),
        (["torch_threads=-1"], "torch_threads must be >= 0, got -1"),
        (["device=tpu"], "device must be cpu or cuda[:N], got 'tpu'"),
        (["device=banana"], "device must be cpu or cuda[:N], got 'banana'"),
        (
            ["rule_overrides={num_players: 4}"],
            "rule_overrides: num_players=4: the table size is set by num_players",
        ),
        (["eval_opponents=[checkpoint:/nonexistent/ck]"], "eval_opponents: checkpoint"),
    ],
)
def test_bad_config_is_a_clear_error_before_any_work(sets, message, tmp_path, capsys):
    argv = ["--set", f"runs_dir={tmp_path}"] + [x for s in sets for x in ("--set", s)]
    assert train_cli.main(argv) == 2
    assert message in capsys.readouterr().err
    assert not any(tmp_path.iterdir())  # nothing was started


def test_bad_config_files(tmp_path, capsys):
    bad = tmp_path / "bad.yaml"
    bad.write_text("num_envs: [1, 2\n")
    assert train_cli.main(["--config", str(bad)]) == 2
    assert "not valid YAML" in capsys.readouterr().err
    bad.write_text("- a list\n")
    assert train_cli.main(["--config", str(bad)]) == 2
    assert "must hold a mapping" in capsys.readouterr().err
    assert train_cli.main(["--config", str(tmp_path / "missing.yaml")]) == 2
    assert "does not exist" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("written", "expected"),
    [("3e-4", 3e-4), ("-1E-4", -1e-4), ("2e+3", 2000.0), ("1.5e-4", 1.5e-4)],
)
def test_numbers_without_a_dot_are_floats_in_files_and_sets(tmp_path, written, expected):
    """PyYAML alone reads ``3e-4`` as a string; settings read it as the float it means."""
    from liars_train.config import load_settings

    path = tmp_path / "lr.yaml"
    path.write_text(f"dice_shaping: {written}\n")
    from_file = load_settings(ppo.Args, str(path)).dice_shaping
    from_set = load_settings(ppo.Args, sets=[f"dice_shaping={written}"]).dice_shaping
    assert from_file == from_set == expected and type(from_file) is type(expected)


def test_words_that_look_like_exponents_stay_strings():
    from liars_train.config import load_yaml

    assert load_yaml("[1e, e5, 1e5x, 0x1e5, 300]") == ["1e", "e5", "1e5x", 0x1E5, 300]


OUR_CONFIGS = [  # one-run configs (configs/models/ holds pipelines: test_pipeline.py)
    p
    for p in sorted(Path("configs").rglob("*.yaml"))
    if not p.name.startswith("rllib_") and "models" not in p.parts
]


@pytest.mark.parametrize("config", OUR_CONFIGS, ids=lambda p: p.name)
def test_checkpoints_named_in_config_comments_are_written_by_the_run(config):
    """A config's comment naming ``runs/<run_name>/checkpoints/step_N`` names the run's
    last checkpoint (updates × batch), so the measuring command it gives works."""
    args = ppo.load_args(str(config))
    last = ppo.last_step(args)
    for folder, step in re.findall(r"runs/([\w.-]+)/checkpoints/step_(\d+)", config.read_text()):
        assert folder == args.run_name
        assert int(step) == last, f"{config}: step_{step}, the run's last is step_{last:010d}"


@pytest.mark.parametrize("config", OUR_CONFIGS, ids=lambda p: p.name)
def test_shipped_configs_load(config):
    from liars_env.agents import make_agent
    from liars_train.config import load_yaml
    from liars_train.league import check_member_spec

    args = ppo.load_args(str(config))
    written = load_yaml(config.read_text())
    for key, value in written.items():  # every setting of the file reaches the Args
        assert getattr(args, key) == value, key
    rules = RuleSet.preset(args.rules, num_players=args.num_players, **args.rule_overrides)
    batch = args.num_envs * args.num_steps
    assert args.total_steps >= batch and batch % args.num_minibatches == 0
    assert 0.0 <= args.self_play <= 1.0 and args.run_name
    for spec in args.league:
        check_member_spec(spec)
    for spec in args.eval_opponents:
        make_agent(spec, rules)
    if args.init_checkpoint.startswith("checkpoints/"):  # a shipped model: it must fit
        start = Path(__file__).parents[1] / args.init_checkpoint
        model, _ = load_policy(start, None if args.init_other_rules else rules)
        if args.init_other_rules:  # transfer: the network fits the config's rules
            shape = replace(model.shape, num_actions=get_codec(rules).num_actions)
            transfer_weights(model, PolicyNet(shape, rules))


@pytest.mark.parametrize("preset", ["perudo", "perudo_palifico", "sanford", "common_hand"])
def test_bid_features_match_the_probabilistic_bot(preset):
    from liars_env.agents import ProbabilisticAgent
    from liars_env.agents.policy import BidProbabilityFeatures
    from liars_env.batched import BatchedEnv, sample_legal

    lo = 3 if preset == "sanford" else 2
    rules = RuleSet.preset(preset, num_players=lo)
    env = BatchedEnv(rules, num_envs=16, seed=0)
    features = BidProbabilityFeatures(rules)
    game, layout = LiarsDiceGame(rules), ObservationLayout(rules)
    bot = ProbabilisticAgent()
    obs, mask = env.reset()
    gen = torch.Generator().manual_seed(0)
    for _ in range(40):
        feats = features(obs)
        for i in range(16):
            left = env.dice_left[i].tolist()
            dice = [env.dice[i, s, : left[s]].tolist() for s in range(lo)]
            state = game.new_game(
                np.random.default_rng(0),
                dice=dice,
                dice_left=left,
                first_player=int(env.current_player[i]),
            )
            state.palifico = bool(env.palifico[i])
            view = view_of(game, layout, state)
            table = bot.tail_table(view, view.seat)
            expected = table[game.codec.bid_face, game.codec.bid_quantity]
            np.testing.assert_allclose(feats[i, : game.codec.num_bids].numpy(), expected, atol=1e-5)
        obs, mask, *_ = env.step(sample_legal(mask, gen))


def test_export_ships_weights_and_meta_only(tiny_run, tmp_path):
    from liars_train.tools.export import main as export_main

    dest = tmp_path / "shipped"
    assert export_main([str(tiny_run / "checkpoints" / "best"), str(dest)]) == 0
    assert sorted(p.name for p in dest.iterdir()) == ["meta.json", "model.safetensors"]
    load_policy(dest, RuleSet.preset("perudo"))
    assert export_main([str(tmp_path / "missing"), str(tmp_path / "x")]) == 2
    # meta.json names the source without this machine's absolute path
    source = json.loads((dest / "meta.json").read_text())["exported_from"]
    assert not Path(source).is_absolute()
    assert source.endswith(f"{tiny_run.name}/checkpoints/best")


def test_export_over_a_shipped_model_keeps_its_card(tiny_run, tmp_path):
    from liars_train.tools.export import main as export_main

    dest = tmp_path / "shipped"
    assert export_main([str(tiny_run / "checkpoints" / "best"), str(dest)]) == 0
    (dest / "card.md").write_text("# the model card\n")
    (dest / "trainer_state.pt").write_bytes(b"stale")
    step = sorted((tiny_run / "checkpoints").glob("step_*"))[0]
    assert export_main([str(step), str(dest)]) == 0
    assert sorted(p.name for p in dest.iterdir()) == ["card.md", "meta.json", "model.safetensors"]
    assert (dest / "card.md").read_text() == "# the model card\n"
    assert json.loads((dest / "meta.json").read_text())["exported_from"].endswith(step.name)
    assert not list(tmp_path.glob(".shipped*"))  # no temporary folders left


@pytest.mark.parametrize(
    ("cwd", "source", "expected"),
    [
        ("/work/main", "/work/main/runs/a/checkpoints/best", "runs/a/checkpoints/best"),
        ("/work/main", "/scratch/me/runs/a/checkpoints/best", "runs/a/checkpoints/best"),
        ("/", "/home/me/scratch/runs/a/checkpoints/best", "runs/a/checkpoints/best"),
        ("/work", "/ckpt/checkpoints/best", "ckpt/checkpoints/best"),
        ("/work", "/elsewhere/model", "model"),
        ("/work", "/work", "work"),
    ],
)
def test_export_names_its_source_without_absolute_paths(monkeypatch, cwd, source, expected):
    from liars_train.tools.export import portable_source

    monkeypatch.setattr(Path, "cwd", classmethod(lambda cls: Path(cwd)))
    monkeypatch.setattr(Path, "resolve", lambda self: self)
    assert portable_source(source) == expected


def agreement_with_bot(policy, bot: str, rules, games: int = 256) -> float:
    """Share of decisions where the policy's argmax is the bot's, in games the bot plays."""
    from liars_env.agents.batched import make_batched_bot
    from liars_env.batched import BatchedEnv, sample_legal

    env = BatchedEnv(rules, num_envs=games, seed=5)
    obs, mask = env.reset()
    teacher, rows = make_batched_bot(env, bot), torch.arange(games)
    gen = torch.Generator().manual_seed(0)
    agree = []
    for _ in range(12):
        with torch.no_grad():
            logits, _ = policy(obs, mask)
        chosen = teacher.act(mask, rows, obs)
        agree.append((logits.argmax(1) == chosen).float().mean().item())
        mixed = torch.where(torch.rand(games, generator=gen) < 0.1, sample_legal(mask, gen), chosen)
        obs, mask, *_ = env.step(mixed)
    return float(np.mean(agree))


def test_a_teacher_is_imitated_then_faded_out(tmp_path):
    """Kickstarting: the policy trained with the imitation loss agrees with the teacher far
    more often than the same run without it; the weight fades to 0 on schedule."""
    common = [*TINY, "total_steps=6144", "update_epochs=4", "eval_every=0", "final_eval_games=0"]
    common += ["learning_rate=0.001", "anneal_lr=false", "hidden_size=64"]
    taught = ppo.Trainer(
        ppo.load_args(
            None,
            [
                f"runs_dir={tmp_path}",
                "run_name=kick",
                *common,
                "teacher=probabilistic",
                "teacher_coef=5.0",
                "teacher_steps=6144",  # fading over the whole run
            ],
        )
    )
    assert taught._teacher_weight() == 5.0
    taught.train()
    assert taught._teacher_weight() == 0.0
    control = ppo.Trainer(ppo.load_args(None, [f"runs_dir={tmp_path}", "run_name=ctl", *common]))
    control.train()
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    events = EventAccumulator(str(tmp_path / "kick")).Reload()
    weight = [e.value for e in events.Scalars("train/teacher_weight")]
    # 512 decisions per update: 12 updates of fading weight, the last near 0
    assert weight[0] == 5.0 and weight == sorted(weight, reverse=True) and len(weight) == 12
    loss = [e.value for e in events.Scalars("train/teacher_loss")]
    assert loss[-1] < loss[0] - 1.0, loss  # the teacher's moves became likely (3.8 → ~2)
    rules = ppo.game_rules(taught.args)
    with_teacher = agreement_with_bot(taught.policy, "probabilistic", rules)
    without = agreement_with_bot(control.policy, "probabilistic", rules)
    # (the margin was 0.04–0.07 over seeds 0–2; with the teacher gone for the last third
    # of the run, 0.02–0.07)
    assert with_teacher > without + 0.03, (with_teacher, without)


def test_training_gives_the_callers_thread_setting_back(tmp_path):
    before = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        args = ppo.load_args(None, [f"runs_dir={tmp_path}", "run_name=t", *TINY, "total_steps=512"])
        trainer = ppo.Trainer(args)
        assert torch.get_num_threads() == 2 and trainer.threads == 1
        seen = []
        learn = trainer._learn
        trainer._learn = lambda *a, **k: seen.append(torch.get_num_threads()) or learn(*a, **k)
        trainer.train()
        assert seen == [1] and torch.get_num_threads() == 2
    finally:
        torch.set_num_threads(before)


def test_bf16_update_learns_and_keeps_float32_weights(tmp_path):
    """The bfloat16 update learns like the float32 one: imitating a teacher, the loss falls
    by the same margin; weights and optimizer state stay float32."""
    common = [*TINY, "total_steps=6144", "update_epochs=4", "eval_every=0", "final_eval_games=0"]
    common += ["learning_rate=0.001", "anneal_lr=false", "hidden_size=64"]
    common += ["teacher=probabilistic", "teacher_coef=5.0", "teacher_steps=4096"]
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    drops = {}
    for bf16 in (False, True):
        name = f"bf16_{bf16}"
        sets = [f"runs_dir={tmp_path}", f"run_name={name}", *common, f"bf16_update={bf16}"]
        trainer = ppo.Trainer(ppo.load_args(None, sets))
        dtypes = set()
        trainer.policy.torso.register_forward_hook(
            lambda m, i, out, seen=dtypes: seen.add(out.dtype)
        )
        trainer.train()
        assert all(p.dtype == torch.float32 for p in trainer.policy.parameters())
        assert (torch.bfloat16 in dtypes) == bf16, dtypes  # autocast ran in the update only
        loss = [
            e.value
            for e in EventAccumulator(str(tmp_path / name)).Reload().Scalars("train/teacher_loss")
        ]
        drops[bf16] = loss[0] - loss[-1]
    assert drops[True] > 1.0 and drops[True] > 0.7 * drops[False], drops


# ----------------------------------------------------------------- weight averaging
def _checkpoint(path, rules, hidden=16, seed=0):
    torch.manual_seed(seed)
    shape = NetworkShape(ObservationLayout(rules).size, get_codec(rules).num_actions, hidden, 1)
    return write_checkpoint(path, PolicyNet(shape, rules), build_meta(rules, shape))


def test_average_is_the_weighted_mean_of_the_parameters(tmp_path):
    from liars_train.tools.average import main as average_main

    rules = RuleSet.preset("perudo")
    a = _checkpoint(tmp_path / "a", rules, seed=1)
    b = _checkpoint(tmp_path / "b", rules, seed=2)
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "card.md").write_text("card")
    assert (
        average_main([str(a), str(b), "--weights", "3", "1", "--out", str(tmp_path / "out")]) == 0
    )
    net_a, _ = load_policy(a, rules)
    net_b, _ = load_policy(b, rules)
    avg, meta = load_policy(tmp_path / "out", rules)
    for name, tensor in avg.state_dict().items():
        expected = 0.75 * net_a.state_dict()[name] + 0.25 * net_b.state_dict()[name]
        assert torch.allclose(tensor, expected, atol=1e-7), name
    assert [e["weight"] for e in meta["averaged_from"]] == [0.75, 0.25]
    assert (tmp_path / "out" / "card.md").read_text() == "card"
    # a weight of 0 leaves the other checkpoint exactly
    assert average_main([str(a), str(b), "--weights", "1", "0", "--out", str(tmp_path / "c")]) == 0
    same, _ = load_policy(tmp_path / "c", rules)
    assert all(torch.equal(v, net_a.state_dict()[k]) for k, v in same.state_dict().items())


@pytest.mark.parametrize(
    "make_other, extra, message",
    [
        (lambda p: _checkpoint(p, RuleSet.preset("perudo", num_players=2)), [], "num_players=2"),
        (lambda p: _checkpoint(p, RuleSet.preset("perudo"), hidden=32), [], "differs from"),
        (lambda p: _checkpoint(p, RuleSet.preset("perudo")), ["--weights", "1"], "1 weights for 2"),
        (lambda p: _checkpoint(p, RuleSet.preset("perudo")), ["--weights", "1", "-1"], ">= 0"),
        (lambda p: _checkpoint(p, RuleSet.preset("perudo")), ["--weights", "0", "0"], "all be 0"),
        (lambda p: p / "missing", [], "is not a folder"),
    ],
)
def test_average_refuses_what_cannot_be_averaged(tmp_path, capsys, make_other, extra, message):
    from liars_train.tools.average import main as average_main

    a = _checkpoint(tmp_path / "a", RuleSet.preset("perudo"))
    other = make_other(tmp_path / "b")
    out = tmp_path / "out"
    assert average_main([str(a), str(other), *extra, "--out", str(out)]) == 2
    assert message in capsys.readouterr().err
    assert not out.exists()
    assert average_main([str(a), "--out", str(out)]) == 2
    assert "at least two checkpoints" in capsys.readouterr().err
