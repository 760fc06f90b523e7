"""The policy network and its checkpoint format: sampling, features, round trips, corrupt files."""

from __future__ import annotations

import json
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
    build_meta,
    load_policy,
    load_trainer_state,
    sample_actions,
    transfer_weights,
    write_checkpoint,
)


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
