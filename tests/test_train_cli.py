"""``liars-train`` and its settings: a tiny run end to end, configs, bad input."""

from __future__ import annotations

import json
import re
from dataclasses import replace
from pathlib import Path

import pytest

from liars_env import RuleSet
from liars_env.agents import make_agent
from liars_env.agents.policy import (
    PolicyNet,
    load_policy,
    transfer_weights,
)
from liars_env.engine import get_codec
from liars_train import ppo
from liars_train import train as train_cli


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


def test_resume_cli_errors(tmp_path, capsys):
    assert train_cli.main(["--resume", str(tmp_path / "nothing")]) == 2
    assert "no run found" in capsys.readouterr().err


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


OUR_CONFIGS = [  # one-run configs (configs/models/ and configs/blueprints/ hold pipelines)
    p
    for p in sorted(Path("configs").rglob("*.yaml"))
    if not p.name.startswith("rllib_") and not {"models", "blueprints"} & set(p.parts)
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
