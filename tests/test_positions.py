"""The batched engine's start-from-positions API against the scalar engine."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from liars_env import LiarsDiceGame, ObservationLayout, RuleSet
from liars_env.batched import BatchedEnv

CASES = [
    ("perudo", 3),
    ("perudo_palifico", 3),
    ("perudo_calza", 2),
    ("common_hand_spot_on", 4),
    ("sanford", 3),
]


def mid_round_states(rules: RuleSet, count: int, seed: int):
    """Scalar games stopped at random points of a round (with random dice left)."""
    game = LiarsDiceGame(rules)
    rng = np.random.default_rng(seed)
    states = []
    while len(states) < count:
        dice_left = rng.integers(0, rules.dice_per_player + 1, rules.num_players)
        if (dice_left > 0).sum() < 2:
            continue
        state = game.new_game(rng, dice_left=dice_left.tolist())
        for _ in range(int(rng.integers(0, 12))):
            legal = game.legal_actions(state)
            bids = [a for a in legal if a < game.codec.num_bids]
            if not bids or state.is_over:
                break
            game.apply(state, int(rng.choice(bids[:8])), rng)
        if not state.is_over:
            states.append(state)
    return game, states


@pytest.mark.parametrize("backend", ["torch", "numba"])
@pytest.mark.parametrize("preset,players", CASES)
def test_positions_match_the_scalar_engine(preset, players, backend):
    rules = RuleSet.preset(preset, num_players=players)
    game, states = mid_round_states(rules, 24, seed=players)
    layout = ObservationLayout(rules)
    env = BatchedEnv(rules, num_envs=30, seed=1, backend=backend)
    env.reset()
    rows = torch.arange(3, 27)
    env.load_states(rows, states)
    # read back as the same states, observed and masked as the scalar engine does
    for state, back in zip(states, env.states(rows), strict=True):
        for name in ("dice", "dice_left", "current_player", "opener", "bids", "palifico"):
            assert getattr(back, name) == getattr(state, name), name
        assert back.had_palifico == state.had_palifico
    obs, mask = env.observe(), env.legal_mask()
    for i, state in zip(rows.tolist(), states, strict=True):
        np.testing.assert_array_equal(obs[i].numpy(), layout.encode(state, state.current_player))
        np.testing.assert_array_equal(mask[i].numpy(), game.legal_mask(state) > 0)
    # play every round out with the same actions: the same outcome
    rng = np.random.default_rng(5)
    live = {i: s for i, s in zip(rows.tolist(), states, strict=True)}
    while live:
        actions = torch.zeros(env.num_envs, dtype=torch.long)
        active = torch.zeros(env.num_envs, dtype=torch.bool)
        for i, state in live.items():
            actions[i] = int(rng.choice(game.legal_actions(state)))
            active[i] = True
        before = env.dice_left.clone()
        _, mask, rewards, dones, info = env.step(actions, active)
        for i in list(live):
            state = live[i]
            result = game.apply(state, int(actions[i]), rng)
            if result is None:
                assert env.current_player[i] == state.current_player
                assert env.current_bid[i].tolist() == list(state.current_bid)
                continue
            assert bool(info["called"][i]) and int(info["count"][i]) == result.count
            after = (before[i] - info["lost"][i].long() + info["gained"][i].long()).tolist()
            assert after == result.dice_left
            assert bool(dones[i]) == state.is_over
            del live[i]


def test_default_position_flags_and_errors():
    rules = RuleSet.preset("perudo_palifico", num_players=3, dice_per_player=2)
    env = BatchedEnv(rules, num_envs=2, seed=0)
    env.reset()
    codec = env.codec
    dice = [[[2, 0], [3, 4], [5, 6]]]
    env.set_positions([1], dice=dice, dice_left=[[1, 2, 2]], opener=[0], palifico=[True])
    assert env.had_palifico[1].tolist() == [True, False, False]
    assert env.current_player[1] == 0 and env.bid_id[1] == -1
    good = dict(dice=dice, dice_left=[[1, 2, 2]], opener=[0])
    bad = [
        (dict(good, dice=[[[7, 0], [3, 4], [5, 6]]]), "faces 1–6"),
        (dict(good, dice=[[[2, 2], [3, 4], [5, 6]]]), "faces 1–6"),
        (dict(good, dice_left=[[1, 0, 0]], dice=[[[2, 0], [0, 0], [0, 0]]]), "two seats"),
        (dict(good, opener=[3]), "opener"),
        (dict(good, opener=[1], palifico=[True]), "exactly one die"),
        (dict(good, bids=[[codec.encode_bid(2, 3), codec.encode_bid(1, 3)]]), "bid 1"),
        (dict(good, bids=[[-1, codec.encode_bid(2, 3)]]), "padding"),
        (dict(good, bids=[[codec.num_bids]]), "bid ids"),
    ]
    before = env.dice.clone()
    for kwargs, words in bad:
        with pytest.raises(ValueError, match=words):
            env.set_positions([0], **kwargs)
    assert torch.equal(env.dice, before)
    with pytest.raises(ValueError, match="distinct"):
        env.set_positions([0, 0], dice=dice * 2, dice_left=[[1, 2, 2]] * 2, opener=[0, 0])
    game = LiarsDiceGame(rules)
    state = game.new_game(np.random.default_rng(0), dice_left=[2, 2, 2], first_player=0)
    state.bids = [(1, 2, 3)]
    with pytest.raises(ValueError, match="out of turn"):
        env.load_states([0], [state])
