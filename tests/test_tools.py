"""The training tools on a run's checkpoints: ``export`` and ``average``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from liars_env import ObservationLayout, RuleSet
from liars_env.agents.policy import (
    NetworkShape,
    PolicyNet,
    build_meta,
    load_policy,
    write_checkpoint,
)
from liars_env.engine import get_codec


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
