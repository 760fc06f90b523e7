"""The belief model: torch kernel vs its numpy twin, chronology, limits, properties."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from liars_env import LiarsDiceGame, ObservationLayout, RuleSet
from liars_env.agents import view_of
from liars_env.agents.belief import BeliefModel, parse_observation
from liars_env.agents.policy import BeliefFeatures, BidProbabilityFeatures
from liars_env.agents.probabilistic import BOT_PRESETS, BeliefAgent


def random_states(rules, games=6, steps=200, seed=0, bid_bias=0.8):
    """Observations and views of many states of random, bid-heavy play."""
    game, layout = LiarsDiceGame(rules), ObservationLayout(rules)
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(games * (8 if rules.single_round else 1)):  # one-round games are short
        state = game.new_game(rng)
        while not state.is_over and len(out) < steps:
            out.append((layout.encode(state, state.current_player), view_of(game, layout, state)))
            legal = np.flatnonzero(game.legal_mask(state))
            bids = legal[legal < game.codec.num_bids]
            take_bid = len(bids) and rng.random() < bid_bias
            game.apply(state, int(rng.choice(bids[:8] if take_bid else legal)), rng)
    return out


CASES = [
    ("perudo", 2),
    ("perudo", 3),
    ("perudo", 5),
    ("perudo_palifico", 3),
    ("perudo_calza", 2),
    ("sanford", 3),
    ("sanford_wild", 4),
    ("common_hand", 3),
    ("ones_not_wild", 2),
    ("openspiel_liars_dice", 2),  # the highest face wild, and bid like any other
]


@pytest.mark.parametrize("preset, players", CASES)
def test_belief_model_matches_its_numpy_twin(preset, players):
    rules = RuleSet.preset(preset, num_players=players)
    states = random_states(rules, steps=120)
    agent = BeliefAgent()
    model = BeliefModel(rules, dtype=torch.float64)
    out = model(torch.tensor(np.array([o for o, _ in states])).double())
    codec = LiarsDiceGame(rules).codec
    for i, (_, view) in enumerate(states):
        table = agent.tail_table(view, view.seat)
        expected = table[codec.bid_face, codec.bid_quantity]
        np.testing.assert_allclose(out.holds[i].numpy(), expected, atol=1e-12)
        exact = expected - table[codec.bid_face, codec.bid_quantity + 1]
        np.testing.assert_allclose(out.exact[i].numpy(), exact, atol=1e-12)


def spy_on_compiled_loops(monkeypatch) -> list[str]:
    """Records each call of a :mod:`liars_env.batched.fused_belief` loop (skips without numba)."""
    from liars_env.batched import kernels as array_rules

    if array_rules._compiled is None:
        pytest.skip("numba is not installed")
    calls: list[str] = []
    for name in ("count_tails", "follows", "tails_per_bid", "own_bid_tails"):
        loop = getattr(array_rules._compiled, name)

        def spy(*args, _loop=loop, _name=name):
            calls.append(_name)
            return _loop(*args)

        monkeypatch.setattr(array_rules._compiled, name, spy)
    return calls


@pytest.mark.parametrize("preset, players", CASES)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_compiled_and_torch_beliefs_agree(preset, players, dtype, monkeypatch):
    """The numba loops (count_tails, follows, tails_per_bid) give the torch code's numbers."""
    from liars_env.agents import belief
    from liars_env.batched import kernels as array_rules

    calls = spy_on_compiled_loops(monkeypatch)
    loops = array_rules._compiled
    rules = RuleSet.preset(preset, num_players=players)
    obs = torch.tensor(np.array([o for o, _ in random_states(rules, steps=150, seed=5)]))
    model = BeliefModel(rules, dtype=dtype)
    history = parse_observation(obs, rules)[3].any(2)
    compiled, compiled_follows = model(obs.to(dtype)), model.follows(history)
    assert set(calls) == {"count_tails", "follows", "tails_per_bid"}
    monkeypatch.setattr(array_rules, "_compiled", None)
    reference, reference_follows = model(obs.to(dtype)), model.follows(history)
    assert torch.equal(compiled_follows, reference_follows)
    assert compiled_follows.any()  # the states hold raises that keep the face
    for key in ("tails", "holds", "exact", "mean_matches"):
        torch.testing.assert_close(compiled[key], reference[key], rtol=0, atol=0)
    # the bayes bot's float64 posteriors through count_tails, and a clamped known count
    matches = torch.rand(7, players - 1, rules.faces, 4, dtype=torch.float64)
    matches /= matches.sum(-1, keepdim=True)
    known = torch.randint(0, rules.max_quantity + 3, (7, rules.faces))
    expected = belief.count_tails(known, matches, rules.max_quantity + 1)
    monkeypatch.setattr(array_rules, "_compiled", loops)
    got = belief.count_tails(known, matches, rules.max_quantity + 1)
    assert calls[-1] == "count_tails"
    torch.testing.assert_close(got, expected, rtol=0, atol=0)
    assert got.dtype == torch.float64 and got.shape == expected.shape


@pytest.mark.parametrize("preset, players", CASES)
def test_compiled_and_torch_own_bid_tails_agree(preset, players, monkeypatch):
    """The bid features and the probabilistic bots' look-ups, compiled and in torch."""
    from liars_env.batched import kernels as array_rules

    calls = spy_on_compiled_loops(monkeypatch)
    loops = array_rules._compiled
    rules = RuleSet.preset(preset, num_players=players)
    obs = torch.tensor(np.array([o for o, _ in random_states(rules, steps=150, seed=7)]))
    features = BidProbabilityFeatures(rules)
    compiled = features(obs)
    assert calls == ["own_bid_tails"]
    for dtype in (torch.float32, torch.float64):  # the features' table, the bots' table
        tails = array_rules.tail_table(rules, dtype)
        known = torch.randint(0, rules.dice_per_player + 1, (40, rules.faces))
        wild = torch.rand(40, rules.faces) < 0.5
        unseen = torch.randint(0, rules.max_quantity + 1, (40,))
        face, quantity = torch.tensor([1, 2, rules.faces]), torch.tensor([1, 3, 7])
        got = array_rules.own_bid_tails(tails, known, wild, unseen, face, quantity)
        monkeypatch.setattr(array_rules, "_compiled", None)
        expected = array_rules.own_bid_tails(tails, known, wild, unseen, face, quantity)
        monkeypatch.setattr(array_rules, "_compiled", loops)
        for a, b in zip(got, expected, strict=True):
            assert a.dtype == dtype and torch.equal(a, b)
    assert calls == ["own_bid_tails"] * 3
    monkeypatch.setattr(array_rules, "_compiled", None)
    assert torch.equal(compiled, features(obs))


def test_float32_model_is_close_to_float64():
    rules = RuleSet.preset("perudo", num_players=4)
    obs = torch.tensor(np.array([o for o, _ in random_states(rules, steps=100)]))
    a = BeliefModel(rules)(obs).holds.double()
    b = BeliefModel(rules, dtype=torch.float64)(obs.double()).holds
    assert (a - b).abs().max() < 1e-5


def test_uninformative_bids_give_the_own_dice_probabilities():
    rules = RuleSet.preset("perudo", num_players=3)
    obs = torch.tensor(np.array([o for o, _ in random_states(rules, steps=80)]))
    blind = BeliefModel(rules, bluff_floor=1.0, evidence=0.0, follow_evidence=0.0)
    prior = BidProbabilityFeatures(rules)(obs)[:, : blind.num_bids]
    assert torch.allclose(blind(obs).holds, prior, atol=1e-5)


def test_an_opponents_bids_on_a_face_raise_its_expected_dice_of_that_face():
    rules = RuleSet.preset("perudo", num_players=2)
    game, layout = LiarsDiceGame(rules), ObservationLayout(rules)
    model = BeliefModel(rules, dtype=torch.float64)
    state = game.new_game(
        np.random.default_rng(0), dice=[[2, 2, 3, 5, 6], [1, 2, 3, 4, 5]], first_player=1
    )
    means = []
    for bid in [(2, 4), (3, 2), (4, 4)]:  # opponent 4s, us 2s, opponent 4s again
        before = model(torch.tensor(layout.encode(state, 0))[None].double()).mean_matches
        means.append(float(before[0, 0, 3]))
        game.apply(state, game.codec.encode_bid(*bid), np.random.default_rng(0))
        if state.current_player == 1:
            continue
    final = model(torch.tensor(layout.encode(state, 0))[None].double()).mean_matches
    means.append(float(final[0, 0, 3]))
    # before any bid: 5 dice × 2/6 (fours and wild ones) = 5/3 of 5 dice
    assert means[0] == pytest.approx(5 * 2 / 6 / 5)
    assert means[1] > means[0] and means[3] > means[1]


def test_chronology_is_recovered_from_the_bid_set():
    """BeliefModel.follows (from the unordered history) agrees with the true order."""
    for preset, players in [("perudo", 3), ("sanford", 3), ("perudo_palifico", 2)]:
        rules = RuleSet.preset(preset, num_players=players)
        model = BeliefModel(rules)
        states = random_states(rules, steps=150, seed=3)
        obs = torch.tensor(np.array([o for o, _ in states]))
        _, _, _, history = parse_observation(obs, rules)
        follows = model.follows(history.any(2))
        codec = LiarsDiceGame(rules).codec
        for i, (_, view) in enumerate(states):
            expected = np.zeros(codec.num_bids, dtype=bool)
            for k, (_, q, f) in enumerate(view.bids):
                expected[codec.encode_bid(q, f)] = k > 0 and view.bids[k - 1][2] == f
            assert np.array_equal(follows[i].numpy(), expected), (preset, view.bids)


@settings(max_examples=12, deadline=None)
@given(
    preset=st.sampled_from(["perudo", "perudo_palifico", "sanford", "common_hand"]),
    players=st.integers(3, 5),
    seed=st.integers(0, 2**16),
    floor=st.floats(0.01, 1.0),
    evidence=st.floats(0.0, 2.0),
)
def test_belief_probabilities_are_valid(preset, players, seed, floor, evidence):
    rules = RuleSet.preset(preset, num_players=players)
    obs = torch.tensor(np.array([o for o, _ in random_states(rules, 2, 40, seed)]))
    out = BeliefModel(rules, floor, evidence, dtype=torch.float64)(obs.double())
    assert (out.holds >= -1e-12).all() and (out.holds <= 1 + 1e-12).all()
    assert (out.exact >= -1e-12).all() and (out.exact <= out.holds + 1e-12).all()
    # more of a face is never likelier than fewer: tails fall along the quantity axis
    assert (out.tails[:, :, 1:] <= out.tails[:, :, :-1] + 1e-12).all()
    assert torch.allclose(out.tails[:, :, 0], torch.ones_like(out.tails[:, :, 0]))
    assert (out.mean_matches >= 0).all() and (out.mean_matches <= 1 + 1e-12).all()


def test_belief_features_have_the_declared_size():
    rules = RuleSet.preset("perudo", num_players=4)
    features = BeliefFeatures(rules)
    obs = torch.tensor(np.array([o for o, _ in random_states(rules, steps=10)]))
    assert features(obs).shape == (10, features.size)
    assert features.size == rules.max_quantity * rules.faces + 2 + 3 * rules.faces


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"bluff_floor": 0.0}, "bluff_floor must lie in \\(0, 1\\]"),
        ({"bluff_floor": 1.5}, "bluff_floor must lie in \\(0, 1\\]"),
    ],
)
def test_bad_belief_settings(kwargs, message):
    with pytest.raises(ValueError, match=message):
        BeliefModel(RuleSet.preset("perudo"), **kwargs)
    with pytest.raises(ValueError, match=message):
        dataclasses.replace(BOT_PRESETS["belief"], **kwargs)


def test_belief_model_limits():
    with pytest.raises(ValueError, match="hand='common'"):
        BeliefModel(RuleSet.preset("individual_hand"))
    with pytest.raises(ValueError, match="more than the 20000"):
        BeliefModel(RuleSet(num_players=2, dice_per_player=10, faces=8))
