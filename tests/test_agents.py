"""Bots: exact probabilities, legality on every preset, determinism, specs."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from helpers import preset_grid, scripted

from liars_env import LiarsDiceGame, ObservationLayout, RuleSet
from liars_env.agents import (
    BOT_PRESETS,
    Agent,
    BayesianAgent,
    ProbabilisticAgent,
    ProbabilisticParams,
    make_agent,
    view_of,
)
from liars_env.probability import count_pmf
from liars_env.rules import count_matches


def enumerate_pmf(rules, face, own, unseen, palifico):
    """P(count == c) by enumerating every face assignment of the unseen dice."""
    pmf = np.zeros(len(own) + unseen + 1)
    for faces in itertools.product(range(1, rules.faces + 1), repeat=unseen):
        pmf[count_matches(rules, [own, list(faces)], face, palifico=palifico)] += 1
    return pmf / rules.faces**unseen


@pytest.mark.parametrize(
    "preset",
    ["perudo", "sanford", "sanford_wild", "ones_not_wild", "openspiel_liars_dice", "jokers"],
)
@pytest.mark.parametrize("face", [1, 2, 4])
@pytest.mark.parametrize("palifico", [False, True])
def test_count_pmf_matches_exact_enumeration(preset, face, palifico):
    rules = RuleSet.preset(preset, faces=4)  # openspiel_liars_dice: 4s are wild
    own = (1, 2, 2)
    for unseen in range(0, 5):
        expected = enumerate_pmf(rules, face, own, unseen, palifico)
        got = count_pmf(
            rules, face, own_dice=own, own_counted=True, unseen_dice=unseen, palifico=palifico
        )
        padded = np.zeros(len(expected))
        padded[: len(got)] = got
        np.testing.assert_allclose(padded, expected, atol=1e-12)
        assert got.sum() == pytest.approx(1.0)


def test_a_kept_view_keeps_its_observation_after_the_game_moves_on():
    rules = RuleSet.preset("perudo")
    game, state, rng = scripted(rules, [[1, 4, 4, 2, 6], [3, 3, 3, 5, 6], [2, 2, 4, 4, 1]])
    layout = ObservationLayout(rules)
    game.apply(state, game.codec.encode_bid(3, 4), rng)
    kept = view_of(game, layout, state)
    expected = layout.encode(state.clone(), kept.seat)
    game.apply(state, game.codec.encode_bid(4, 4), rng)  # the next bid, then a challenge
    game.apply(state, game.codec.challenge, rng)
    assert state.round == 1  # a new round, new dice
    np.testing.assert_array_equal(kept.observation, expected)


def test_a_bot_s_kept_tables_and_plan_follow_its_hand_and_its_settings():
    """The tail table is shared by views with the same hand and dice (read-only), and
    the plan behind ``action_probabilities`` follows a change of ``params``."""
    from dataclasses import replace

    rules = RuleSet.preset("perudo")
    game, state, rng = scripted(rules, [[1, 4, 4, 2, 6], [3, 3, 3, 5, 6], [2, 2, 4, 4, 1]])
    game.apply(state, game.codec.encode_bid(2, 4), rng)
    view = view_of(game, ObservationLayout(rules), state)
    agent = ProbabilisticAgent(seed=0)
    table = agent.tail_table(view, view.seat)
    assert agent.tail_table(view, view.seat) is table
    with pytest.raises(ValueError, match="read-only"):
        table[1, 1] = 0.0
    challenge = game.codec.challenge
    assert agent.action_probabilities(view)[challenge] < 0.5  # it raises 2 fours
    agent.params = replace(agent.params, challenge_threshold=1.0)  # now it calls
    again = agent.action_probabilities(view)
    fresh = ProbabilisticAgent(agent.params, seed=0).action_probabilities(view)
    np.testing.assert_array_equal(again, fresh)
    assert again[challenge] > 0.5


@pytest.mark.parametrize("agent_cls", [ProbabilisticAgent, BayesianAgent])
def test_tail_table_is_the_tail_of_the_count_distribution(agent_cls):
    rules = RuleSet.preset("perudo_palifico")
    game, state, rng = scripted(rules, [[1, 4, 4, 2, 6], [3, 3, 3, 5, 6], [2, 2, 4, 4, 1]])
    game.apply(state, game.codec.encode_bid(3, 4), rng)
    game.apply(state, game.codec.encode_bid(4, 3), rng)
    view = view_of(game, ObservationLayout(rules), state)
    agent = agent_cls()
    table = agent.tail_table(view, view.seat)
    for face in range(1, 7):
        pmf = agent.count_distribution(view, face, view.seat)
        for q in range(rules.max_quantity + 2):
            assert table[face, q] == pytest.approx(pmf[q:].sum(), abs=1e-12)


def test_bayesian_posterior_rises_with_an_opponents_bids():
    rules = RuleSet.preset("perudo")
    game, state, rng = scripted(rules, [[2, 3, 5, 6, 6], [4, 4, 4, 1, 2], [2, 3, 3, 5, 6]])
    game.apply(state, game.codec.encode_bid(2, 3), rng)
    game.apply(state, game.codec.encode_bid(3, 4), rng)  # seat 1 bids fours
    view = view_of(game, ObservationLayout(rules), state)  # seat 2 to act
    plain = ProbabilisticAgent().tail_table(view, view.seat)[4, 4]
    bayes = BayesianAgent().tail_table(view, view.seat)[4, 4]
    assert bayes > plain + 0.1


def test_each_bot_s_reading_of_a_bid_on_ones_under_jokers():
    """The readings docs/training.md states ("Bids on ones under jokers"): the opponent
    (seat 1, holding three ones) opens "three 1s"; seat 0 holds 2 3 4 5 6."""
    rules = RuleSet.preset("jokers", num_players=2)
    game, state, rng = scripted(rules, [[2, 3, 4, 5, 6], [1, 1, 1, 2, 3]], first_player=1)
    game.apply(state, game.codec.encode_bid(3, 1), rng)
    view = view_of(game, ObservationLayout(rules), state)
    plain = ProbabilisticAgent().tail_table(view, 1)
    bayes = BayesianAgent().tail_table(view, 1)
    belief = make_agent("belief", rules).tail_table(view, 1)
    # probabilistic reads no bids: ones match with 1/6, jokered faces with 2/6
    for face in (1, 5):
        pmf = count_pmf(
            rules, face, own_dice=[2, 3, 4, 5, 6], own_counted=True, unseen_dice=5, palifico=False
        )
        assert plain[face, 3] == pytest.approx(pmf[3:].sum())
    assert plain[1, 3] < plain[5, 3]  # no ones in hand, 1/6 a die; one 5, 2/6 a die
    # bayes: evidence of ones, and counter-evidence against every other face's count
    assert bayes[1, 3] > plain[1, 3] + 0.15 and bayes[5, 3] < plain[5, 3] - 0.05
    # belief: hands with ones gain weight, and those ones are jokers for every other face
    assert belief[1, 3] > plain[1, 3] + 0.15 and belief[5, 3] > plain[5, 3] + 0.15


def test_probabilistic_decisions_on_clear_cases():
    rules = RuleSet.preset("perudo", num_players=2)
    agent = ProbabilisticAgent(ProbabilisticParams(bluff_rate=0.0))
    layout = ObservationLayout(rules)
    # a bid beyond every die is challenged
    game, state, rng = scripted(rules, [[2, 3, 4, 5, 6], [2, 3, 4, 5, 6]])
    game.apply(state, game.codec.encode_bid(10, 6), rng)
    assert agent.act(view_of(game, layout, state)) == game.codec.challenge
    # a bid the bot holds by itself is raised, on the face it holds most of
    game, state, rng = scripted(rules, [[2, 3, 4, 5, 6], [6, 6, 6, 1, 1]])
    game.apply(state, game.codec.encode_bid(2, 6), rng)
    action = agent.act(view_of(game, layout, state))
    assert game.codec.decode_bid(action) == (5, 6)  # holds five (three 6s, two wild ones)


def test_exact_call_when_it_is_the_best_bet():
    rules = RuleSet.preset("common_hand_spot_on", num_players=2, dice_per_player=2)
    agent = ProbabilisticAgent(ProbabilisticParams(exact_threshold=0.3, bluff_rate=0.0))
    game, state, rng = scripted(rules, [[5, 5], [5, 5]])
    game.apply(state, game.codec.encode_bid(4, 5), rng)  # seat 1 holds 5,5: two unseen
    view = view_of(game, ObservationLayout(rules), state)
    # P(exactly 4) = P(both unseen match at 2/6) = 1/9; P(true) = 1/9: challenge instead
    assert agent.act(view) == game.codec.challenge
    rules = rules.with_options(dice_per_player=3)
    game, state, rng = scripted(rules, [[2, 3, 4], [5, 5, 5]])
    game.apply(state, game.codec.encode_bid(4, 5), rng)
    # seat 1 holds three 5s; three unseen dice match at 1/3 each:
    # exact P(X=1) = 0.444 beats challenge P(X=0) = 0.296 and the best raise P(X>=2) = 0.259
    assert agent.act(view_of(game, ObservationLayout(rules), state)) == game.codec.exact


@pytest.mark.parametrize("name, players", preset_grid(players=(2, 3, 5)))
@pytest.mark.parametrize("spec", ["random", *BOT_PRESETS])
def test_every_bot_plays_every_preset_legally(name, players, spec):
    rules = RuleSet.preset(name, num_players=players)
    game, layout = LiarsDiceGame(rules), ObservationLayout(rules)
    agent = make_agent(spec, rules, seed=0)
    for seed in range(3):
        rng = np.random.default_rng(seed)
        state = game.new_game(rng)
        while not state.is_over:
            action = agent.act(view_of(game, layout, state))
            assert game.is_legal(state, action), (spec, action)
            game.apply(state, action, rng)


@pytest.mark.parametrize("spec", ["random", *BOT_PRESETS])
def test_bots_are_seeded_and_deterministic(spec):
    rules = RuleSet.preset("perudo_calza")
    game, layout = LiarsDiceGame(rules), ObservationLayout(rules)

    def trace(seed):
        agent = make_agent(spec, rules, seed=seed)
        rng = np.random.default_rng(5)
        state = game.new_game(rng)
        while not state.is_over:
            game.apply(state, agent.act(view_of(game, layout, state)), rng)
        return state.actions

    assert trace(1) == trace(1)
    if spec in ("random", "bold"):
        assert trace(1) != trace(2)


def test_a_preset_with_an_empty_settings_list_is_the_preset():
    rules = RuleSet.preset("perudo")
    assert make_agent("bold:", rules).params == make_agent("bold", rules).params


def test_agents_satisfy_the_protocol():
    rules = RuleSet.preset("perudo")
    for spec in ["random", *BOT_PRESETS]:
        assert isinstance(make_agent(spec, rules), Agent)


@pytest.mark.parametrize(
    "spec, message",
    [
        ("randm", "unknown agent spec 'randm'; expected one of random, probabilistic"),
        ("", "non-empty string"),
        ("probabilistic:bluff=0.1", "bad setting 'bluff=0.1'"),
        ("probabilistic:bluff_rate=lots", "must be a number, got 'lots'"),
        ("probabilistic:bluff_rate=2", "bluff_rate must lie in \\[0, 1\\], got 2.0"),
        ("checkpoint:", "needs a path"),
    ],
)
def test_bad_agent_specs(spec, message):
    with pytest.raises(ValueError, match=message):
        make_agent(spec, RuleSet.preset("perudo"))


@pytest.mark.parametrize("spec", ["probabilistic", "bayes:evidence=0,counter_evidence=0"])
def test_a_bid_exactly_at_the_challenge_threshold_is_not_challenged(spec):
    """The tie-break is ``p_true < challenge_threshold``: ``<=`` would challenge here.

    One die each, four faces, ones wild: seat 0's "one 2" holds iff its die is a 1 or a 2,
    so for seat 1 (holding a 3) ``p_true = 2/4 = 0.5``, the threshold; raising to "one 3"
    is certain, so nothing but the threshold can make the bot challenge.
    """
    rules = RuleSet.preset("perudo", num_players=2, dice_per_player=1, faces=4)
    game, state, rng = scripted(rules, [[2], [3]])
    game.apply(state, game.codec.encode_bid(1, 2), rng)
    view = view_of(game, ObservationLayout(rules), state)
    at = make_agent(f"{spec}{',' if ':' in spec else ':'}bluff_rate=0", rules)
    assert at.params.challenge_threshold == 0.5
    assert at.act(view) == game.codec.encode_bid(1, 3)
    above = make_agent(
        f"{spec}{',' if ':' in spec else ':'}bluff_rate=0,challenge_threshold=0.500001", rules
    )
    assert above.act(view) == game.codec.challenge
