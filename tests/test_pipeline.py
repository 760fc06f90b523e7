"""Pipelines (liars_train.pipeline): tiny ones built end to end; every shipped one checked."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import numpy as np
import pytest
import torch

from liars_env.agents.policy import load_policy
from liars_train import pipeline, train
from liars_train.pipeline import load_pipeline, run_pipeline

ROOT = Path(__file__).resolve().parents[1]
TINY = (
    "{rules: perudo, num_players: 2, total_steps: 1024, num_envs: 64, num_steps: 8, "
    "num_minibatches: 2, update_epochs: 1, hidden_size: 32, final_eval_games: 0, "
    "progress: false, torch_threads: 1"
)


def _write(folder: Path, name: str, text: str) -> Path:
    path = folder / name
    path.write_text(text)
    return path


def _base(folder: Path) -> Path:
    return _write(
        folder,
        "base.yaml",
        f"""pipeline: base
result: first
stages:
  first:
    train: {TINY}, seed: 3, eval_every: 0, eval_opponents: []}}
""",
    )


def _full(folder: Path) -> Path:
    _base(folder)
    return _write(
        folder,
        "full.yaml",
        f"""pipeline: full
result: mix
stages:
  start:
    from: {{pipeline: base.yaml, stage: first}}
  second:
    train: {TINY}, exploiter_every: 1, exploiter_steps: 512, exploiter_init: scratch,
            init_checkpoint: "${{start}}", league: [random, "checkpoint:${{start}}"],
            eval_every: 1, eval_games: 20, eval_opponents: [random]}}
    take: best
  br:
    exploit: {{target: "checkpoint:${{start}}", rules: perudo, players: 2, steps: 512,
              games: 20, seed: 1, set: [num_envs=64, num_steps=8, hidden_size=32]}}
  mix:
    average: {{sources: ["${{start}}", "${{second}}", "${{second/exploiters/0}}"],
              weights: [2, 1, 1]}}
""",
    )


def _params(path) -> dict[str, torch.Tensor]:
    return load_policy(path)[0].state_dict()


def test_a_pipeline_builds_every_kind_of_stage_and_resumes_without_rebuilding(tmp_path):
    lines: list[str] = []
    runs = tmp_path / "runs"
    out = tmp_path / "shipped"
    result = run_pipeline(_full(tmp_path), runs_dir=runs, out=out, log=lines.append)
    assert result == runs / "full" / "mix" / "model"
    # the from-stage was built in the other pipeline's folder and is its first stage's model
    assert (runs / "base" / "first" / "stage.json").is_file()
    record = json.loads((runs / "full" / "start" / "stage.json").read_text())
    assert Path(record["model"]) == runs / "base" / "first" / "model"
    # take: best is the run's best checkpoint
    assert json.loads((runs / "full" / "second" / "model" / "meta.json").read_text())[
        "exported_from"
    ].endswith("second/checkpoints/best")
    # the best response trained against the from-stage's model and left its figures
    assert json.loads((runs / "full" / "br" / "exploit.json").read_text())["games"] == 20
    # the average is the weighted average of the three, each weight normalised
    mixed, first = _params(result), _params(runs / "base" / "first" / "model")
    second = _params(runs / "full" / "second" / "model")
    exploiters = runs / "full" / "second" / "exploiters"
    exploiter = pipeline.step_checkpoints(exploiters / "0" / "checkpoints")
    third = _params(exploiter[-1])
    for name, tensor in mixed.items():
        if tensor.is_floating_point():
            want = 0.5 * first[name] + 0.25 * second[name] + 0.25 * third[name]
            torch.testing.assert_close(tensor, want)
    assert {n: t.tolist() for n, t in _params(out).items()} == {
        n: t.tolist() for n, t in mixed.items()
    }
    # running it again builds nothing: every stage reads as built, no file is rewritten
    stamp = (runs / "full" / "second" / "model" / "model.safetensors").stat().st_mtime_ns
    again: list[str] = []
    assert run_pipeline(_full(tmp_path), runs_dir=runs, log=again.append) == result
    assert all(line.endswith(")") and ": built (" in line for line in again), again
    assert (runs / "full" / "second" / "model" / "model.safetensors").stat().st_mtime_ns == stamp


def test_an_interrupted_training_stage_resumes_from_its_last_checkpoint(tmp_path, monkeypatch):
    runs = tmp_path / "runs"
    path = _base(tmp_path)
    text = path.read_text().replace("total_steps: 1024", "total_steps: 2048")
    path.write_text(text.replace("seed: 3,", "seed: 3, checkpoint_every: 1,"))
    from liars_train import ppo

    original = ppo.Trainer._checkpoint
    calls = {"n": 0}

    def crash_after_two(self, name=None):
        saved = original(self, name)
        calls["n"] += 1
        if calls["n"] == 2:
            raise KeyboardInterrupt  # the machine went down after the second checkpoint
        return saved

    monkeypatch.setattr(ppo.Trainer, "_checkpoint", crash_after_two)
    with pytest.raises(KeyboardInterrupt):
        run_pipeline(path, runs_dir=runs, log=lambda _: None)
    assert not (runs / "base" / "first" / "stage.json").exists()
    monkeypatch.setattr(ppo.Trainer, "_checkpoint", original)
    lines: list[str] = []
    run_pipeline(path, runs_dir=runs, log=lines.append)
    assert any("resuming first from step_0000001024" in line for line in lines), lines
    meta = json.loads((runs / "base" / "first" / "model" / "meta.json").read_text())
    assert meta["step"] == 2048


def test_a_stage_built_before_an_earlier_one_was_rebuilt_is_refused(tmp_path):
    runs = tmp_path / "runs"
    run_pipeline(_full(tmp_path), runs_dir=runs, until="start", log=lambda _: None)
    shutil.rmtree(runs / "base" / "first")  # the other pipeline's stage, built again
    run_pipeline(_base(tmp_path), runs_dir=runs, log=lambda _: None)
    with pytest.raises(ValueError, match="earlier stages built since"):
        run_pipeline(_full(tmp_path), runs_dir=runs, until="start", log=lambda _: None)
    # within one pipeline too: the average is refused once a stage it takes is rebuilt
    shutil.rmtree(runs / "full")
    run_pipeline(_full(tmp_path), runs_dir=runs, log=lambda _: None)
    shutil.rmtree(runs / "full" / "second")
    with pytest.raises(ValueError, match="earlier stages built since"):
        run_pipeline(_full(tmp_path), runs_dir=runs, log=lambda _: None)
    assert (runs / "full" / "second" / "stage.json").is_file()  # rebuilt before the refusal


def test_an_interrupted_stage_changed_since_is_refused_and_a_torn_start_cleared(
    tmp_path, monkeypatch
):
    from liars_train import ppo

    runs = tmp_path / "runs"
    path = _base(tmp_path)
    path.write_text(path.read_text().replace("seed: 3,", "seed: 3, checkpoint_every: 1,"))
    original = ppo.Trainer._checkpoint

    def crash(self, name=None):
        original(self, name)
        raise KeyboardInterrupt

    monkeypatch.setattr(ppo.Trainer, "_checkpoint", crash)
    with pytest.raises(KeyboardInterrupt):
        run_pipeline(path, runs_dir=runs, log=lambda _: None)
    monkeypatch.setattr(ppo.Trainer, "_checkpoint", original)
    changed = path.read_text().replace("seed: 3,", "seed: 4,")
    path.write_text(changed)
    with pytest.raises(ValueError, match="interrupted run of this stage as it was defined"):
        run_pipeline(path, runs_dir=runs, log=lambda _: None)
    # a start torn before its first step_N (only a best left) starts afresh
    folder = runs / "base" / "first"
    shutil.rmtree(folder)
    (folder / "checkpoints" / "best").mkdir(parents=True)
    (folder / "checkpoints" / "best" / "junk").write_text("x")
    run_pipeline(path, runs_dir=runs, log=lambda _: None)
    assert (folder / "stage.json").is_file()
    assert not (folder / "checkpoints" / "best" / "junk").exists()


def test_a_from_stage_whose_other_file_changed_is_refused(tmp_path):
    runs = tmp_path / "runs"
    full = _full(tmp_path)
    run_pipeline(full, runs_dir=runs, until="start", log=lambda _: None)
    base = tmp_path / "base.yaml"
    base.write_text(base.read_text().replace("seed: 3", "seed: 5"))
    with pytest.raises(ValueError, match="built from other settings"):
        run_pipeline(full, runs_dir=runs, until="start", log=lambda _: None)


def test_a_built_stage_whose_definition_changed_is_refused(tmp_path):
    runs = tmp_path / "runs"
    path = _base(tmp_path)
    run_pipeline(path, runs_dir=runs, log=lambda _: None)
    path.write_text(path.read_text().replace("seed: 3", "seed: 4"))
    with pytest.raises(ValueError, match="built from other settings"):
        run_pipeline(path, runs_dir=runs, log=lambda _: None)
    # settings of how it runs are not what it builds
    run_pipeline(_base(tmp_path), runs_dir=runs, sets=["device=cpu"], log=lambda _: None)


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ("stages: {a: {train: {}}}", "missing \\['pipeline', 'result'\\]"),
        ("pipeline: p\nresult: a\nstages: {a: {train: {}}, b: {average: {}}}", "'sources'"),
        ("pipeline: p\nresult: b\nstages: {a: {train: {}}}", "result 'b' is not a stage"),
        ("pipeline: p\nresult: a\nstages: {a: {cook: {}}}", "exactly one of"),
        ("pipeline: p\nresult: a\nstages: {a: {train: {}, take: worst}}", "take must be"),
        ("pipeline: p\nresult: a\nstages: {a: {train: {init_checkpoint: '${b}'}}}", "no earlier"),
        ("pipeline: p\nresult: a\nstages: {a: {train: {run_name: x}}}", "set by the pipeline"),
        ("pipeline: p\nresult: a\nstages: {a: {train: {ent_coef: -1}}}", "ent_coef"),
        ("pipeline: p\nresult: a\nstages: {a: {train: {stepz: 1}}}", "stepz"),
        ("pipeline: p\nresult: a\nstages: {a: {exploit: {target: bayes}}}", "needs target"),
        ("pipeline: p\nresult: a\nstages: {a: {from: {pipeline: no.yaml, stage: x}}}", "not exist"),
        ("pipeline: p\nresult: a\nstages: {a: {from: {pipeline: p.yaml, stage: a}}}", "in a loop"),
        ("pipeline: '../x'\nresult: a\nstages: {a: {train: {}}}", "folder name"),
        ("[1, 2]", "must hold a mapping"),
        ("pipeline: p\nresult: a\nstages: {a: {blueprint: {rules: perudo, step: 1}}}", "'rule'"),
        ("pipeline: p\nresult: a\nstages: {a: {blueprint: {rules: perudo, players: 3}}}", "2 pl"),
        ("pipeline: p\nresult: a\nstages: {a: {blueprint: {rules: p, iterations: 0}}}", "positive"),
        ("pipeline: p\nresult: a\nstages: {a: {blueprint: {rules: individual_hand}}}", "common"),
        (
            "pipeline: p\nresult: a\nstages: {a: {blueprint: {rules: perudo, memory: 2, "
            "max_memory: 1}}}",
            "'a': blueprint max_memory must be an int >= memory",
        ),
        (
            "pipeline: p\nresult: a\nstages: {a: {blueprint: {rules: perudo, max_memory: 3, "
            "max_bytes: -1}}}",
            "max_bytes must be a positive int",
        ),
        (
            "pipeline: p\nresult: a\nstages: {a: {blueprint: {rules: perudo_calza, tolerance: 0}}}",
            "'a': blueprint tolerance must be a positive number, got 0",
        ),
        (
            "pipeline: p\nresult: a\nstages: {a: {blueprint: {rules: perudo, tremble: 1.5}}}",
            "'a': blueprint tremble must be a number in \\[0, 1\\), got 1.5",
        ),
        (
            "pipeline: p\nresult: a\nstages: {a: {blueprint: {rules: perudo, light_mass: 1}}}",
            "'a': blueprint light_mass must be in \\[0, 1\\), got 1 ",
        ),
    ],
)
def test_bad_pipeline_files_are_refused_naming_what_is_wrong(tmp_path, body, message):
    path = _write(tmp_path, "p.yaml", body)
    with pytest.raises(ValueError, match=message):
        load_pipeline(path)
    assert not (tmp_path / "runs").exists()


def test_liars_train_pipeline_command_plans_and_refuses_bad_input(tmp_path, capsys):
    path = _base(tmp_path)
    runs = str(tmp_path / "runs")
    assert train.main(["--pipeline", str(path), "--plan", "--runs-dir", runs]) == 0
    assert "first (train): to build" in capsys.readouterr().out
    assert not (tmp_path / "runs").exists()
    assert train.main(["--pipeline", str(path), "--set", "nonsense=1", "--plan"]) == 2
    assert "nonsense" in capsys.readouterr().err
    assert train.main(["--pipeline", str(path), "--until", "nowhere", "--plan"]) == 2
    assert "no stage 'nowhere'" in capsys.readouterr().err
    assert train.main(["--config", "configs/quickstart.yaml", "--out", "x"]) == 2
    assert "--out go with --pipeline" in capsys.readouterr().err
    assert train.main(["--config", str(path)]) == 2
    assert f"run it with liars-train --pipeline {path}" in capsys.readouterr().err


def test_a_blueprint_stage_builds_a_blueprint_agent_and_resumes(tmp_path):
    from liars_env.agents import make_agent
    from liars_env.rules import RuleSet

    path = _write(
        tmp_path,
        "bp.yaml",
        "pipeline: bp\nresult: solve\nstages:\n  solve:\n    blueprint: {rules: perudo, "
        "players: 2, iterations: 20, memory: 1, max_memory: 3, max_bytes: 300000, "
        "rule: {dice_per_player: 2, faces: 3}}\n",
    )
    lines: list[str] = []
    out = tmp_path / "shipped"
    model = run_pipeline(path, runs_dir=tmp_path / "runs", out=out, log=lines.append)
    assert (model / "blueprint.npz").is_file() and (out / "blueprint.npz").is_file()
    assert any("round 2v2" in line for line in lines)
    rules = RuleSet.preset("perudo", num_players=2, dice_per_player=2, faces=3)
    blueprint = make_agent(f"blueprint:{out}", rules).blueprint
    assert blueprint.iterations == 20 and (blueprint.max_memory, blueprint.max_bytes) == (3, 300000)
    assert {k.label(): blueprint.memory_of(k) for k in blueprint.rounds}["1v1"] == 3
    lines.clear()
    run_pipeline(path, runs_dir=tmp_path / "runs", log=lines.append)
    assert lines == ["[bp 1/1] solve (blueprint): built (" + str(model) + ")"]
    # another light_mass: the error names the record to delete, and the rounds are kept
    path.write_text(
        path.read_text().replace("max_bytes: 300000", "max_bytes: 300000, light_mass: 0.1")
    )
    record = tmp_path / "runs" / "bp" / "solve" / "stage.json"
    with pytest.raises(ValueError, match=re.escape(f"delete {record} to rebuild it")):
        run_pipeline(path, runs_dir=tmp_path / "runs", log=lines.append)
    record.unlink()
    lines.clear()
    run_pipeline(path, runs_dir=tmp_path / "runs", out=out, log=lines.append)
    assert any(line.endswith("(kept)") for line in lines)  # read back, not solved again
    assert not any(line.endswith(" s)") and "round" in line for line in lines)
    with np.load(out / "blueprint.npz", allow_pickle=False) as data:
        assert json.loads(str(data["meta"]))["light"]["mass"] == 0.1


MODEL_PIPELINES = sorted((ROOT / "configs" / "models").glob("*.yaml"))


def test_every_shipped_model_has_a_pipeline():
    shipped = {p.parent.name for p in (ROOT / "checkpoints").glob("*/model.safetensors")}
    assert {p.stem for p in MODEL_PIPELINES} == shipped


@pytest.mark.parametrize("path", MODEL_PIPELINES, ids=lambda p: p.stem)
def test_a_shipped_models_pipeline_ends_in_that_model(path):
    """The result stage made the shipped weights as its ``meta.json`` records them: the
    same average (weights and count), or a run's checkpoint of the same step."""
    from liars_train import ppo

    built = load_pipeline(path)
    folder = ROOT / "checkpoints" / path.stem
    assert built.name == path.stem
    card = (folder / "card.md").read_text()
    command = f"liars-train --pipeline configs/models/{path.name} --out checkpoints/{path.stem}"
    assert command in card
    meta = json.loads((folder / "meta.json").read_text())
    result = built.stage(built.result)
    if "averaged_from" in meta:
        assert result.kind == "average"
        weights = result.spec.get("weights") or [1] * len(result.spec["sources"])
        assert [round(w / sum(weights), 6) for w in weights] == [
            m["weight"] for m in meta["averaged_from"]
        ]
        return
    assert result.kind == "train"
    tag = meta["exported_from"].rsplit("/", 1)[-1]
    if result.take == "best":
        assert tag == "best"
        return
    args = ppo.make_args({**result.spec, "run_name": "x"})
    step = ppo.last_step(args) if result.take == "last" else int(result.take.removeprefix("step_"))
    assert meta["step"] == step, (meta["step"], step)
    assert tag in (f"step_{step:010d}", "best")


@pytest.mark.parametrize("path", MODEL_PIPELINES, ids=lambda p: p.stem)
def test_every_training_stage_of_a_shipped_pipeline_is_a_valid_run(path):
    from liars_env.rules import RuleSet
    from liars_train import ppo
    from liars_train.league import check_member_spec

    for stage in load_pipeline(path).stages:
        if stage.kind != "train":
            continue
        settings = pipeline._resolve(stage.spec, lambda ref, sub: f"runs/{ref}{sub}")
        args = ppo.make_args({**settings, "run_name": stage.name})
        for key, value in settings.items():  # every setting reaches the Args
            assert getattr(args, key) == value, (stage.name, key)
        RuleSet.preset(args.rules, num_players=args.num_players, **args.rule_overrides)
        batch = args.num_envs * args.num_steps
        assert args.total_steps >= batch and batch % args.num_minibatches == 0
        for spec in args.league:
            if not spec.startswith("checkpoint:"):
                check_member_spec(spec)


@pytest.mark.parametrize("path", MODEL_PIPELINES, ids=lambda p: p.stem)
def test_every_run_on_a_card_is_a_stage_of_its_pipeline(path):
    ev = json.loads((ROOT / "checkpoints" / path.stem / "eval.json").read_text())
    stages = {s.name for s in load_pipeline(path).stages}
    for row in ev["training"]["stages"]:
        names = [n.strip("`") for n in row["stage"].split(", ")]
        if "(" in row["stage"]:  # a stage of another model's pipeline
            other, stage = row["stage"].split("(")[1].rstrip(")").split(": ")
            assert stage.strip("`") in {
                s.name for s in load_pipeline(path.parent / other.strip("`")).stages
            }
            continue
        assert set(names) <= stages, (row, stages)


@pytest.mark.parametrize(
    "path", sorted((ROOT / "configs" / "blueprints").glob("*.yaml")), ids=lambda p: p.stem
)
def test_a_shipped_blueprints_pipeline_is_its_recipe(path):
    """The pipeline's blueprint stage has the rules and settings its card's figures are of."""
    from liars_env.rules import RuleSet
    from liars_env.solver.blueprint_file import LIGHT_MASS

    built = load_pipeline(path)
    result = built.stage(built.result)
    assert result.kind == "blueprint"
    card = json.loads((ROOT / "blueprints" / path.stem / "eval.json").read_text())
    expected = RuleSet.preset(card["rules"], num_players=card["players"])
    assert pipeline.blueprint_rules("test", result.spec) == expected
    spec = result.spec
    assert (card["memory"], card["faces"], card["iterations"]) == (
        spec.get("memory", 1),
        spec.get("faces", 0),
        spec.get("iterations", 400),
    )
    assert card.get("max_memory") == spec.get("max_memory")
    assert card.get("max_bytes") == spec.get("max_bytes")
    assert card.get("tolerance") == spec.get("tolerance")  # calza's fixed point
    assert card.get("tremble", 0) == pipeline.blueprint_settings(spec)["tremble"]
    assert card.get("light_mass", LIGHT_MASS) == pipeline.blueprint_settings(spec)["light_mass"]
    command = f"liars-train --pipeline configs/blueprints/{path.name} --out blueprints/{path.stem}"
    assert command in (ROOT / "blueprints" / path.stem / "card.md").read_text()
