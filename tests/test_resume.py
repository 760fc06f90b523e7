"""A run's start and resume: ``--resume``, ``init_checkpoint``, a folder that holds checkpoints."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import torch
from helpers import TINY

from liars_env.agents.policy import (
    CheckpointError,
    RulesMismatchError,
    load_policy,
    load_trainer_state,
)
from liars_train import ppo
from liars_train import train as train_cli
from liars_train.config import load_run_settings


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
