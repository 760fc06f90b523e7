"""The PettingZoo AEC env: API conformance, the contract of issue 2, and bad input."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pytest
from helpers import preset_grid
from pettingzoo.test import api_test, seed_test

import liars_env
from liars_env import (
    PRESETS,
    IllegalActionError,
    LiarsDiceGame,
    RuleSet,
    liars_dice_v0,
    liars_dice_v1,
)

A_B_C = [[1, 2, 3, 4, 6], [1, 2, 2, 5, 6], [2, 3, 4, 5, 6]]


def random_game(env, seed, rng):
    """Plays one game with random legal actions; returns cumulative rewards per agent."""
    env.reset(seed=seed)
    returns = dict.fromkeys(env.possible_agents, 0.0)
    for agent in env.agent_iter():
        obs, reward, terminated, truncated, _ = env.last()
        returns[agent] += reward
        if terminated or truncated:
            env.step(None)
            continue
        env.step(int(rng.choice(np.flatnonzero(obs["action_mask"]))))
    return returns


@pytest.mark.parametrize("name", sorted(PRESETS))
def test_pettingzoo_api_test(name):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # api_test resets with a foreign option on purpose
        api_test(liars_env.env(name), num_cycles=200)


@pytest.mark.parametrize("name", sorted(PRESETS))
def test_pettingzoo_seed_test(name):
    seed_test(lambda: liars_env.env(name), num_cycles=300)


def test_different_seeds_give_different_games_and_same_seed_the_same():
    e = liars_env.env("perudo")
    rolls = set()
    for seed in range(6):
        e.reset(seed=seed)
        first = json.dumps(e.unwrapped.game_state.to_dict())
        e.reset(seed=seed)
        assert json.dumps(e.unwrapped.game_state.to_dict()) == first  # the same roll
        rolls.add(first)
    assert len(rolls) == 6  # and every seed a different one
    rng = np.random.default_rng(3)
    first = random_game(e, 11, np.random.default_rng(3))
    second = random_game(e, 11, rng)
    assert first == second


def test_versioned_module_and_metadata():
    e = liars_dice_v1.env(rules="sanford", num_players=4)
    assert e.metadata["name"] == "liars_dice_v1" and e.metadata["render_fps"] > 0
    assert isinstance(e.unwrapped, liars_dice_v1.raw_env)
    assert liars_dice_v0.raw_env is liars_dice_v1.raw_env  # the old id is an alias
    assert e.unwrapped.rules == RuleSet.preset("sanford", num_players=4)
    assert e.possible_agents == [f"player_{i}" for i in range(4)]


def test_fixed_action_space_and_codec():
    e = liars_env.raw_env("perudo_calza")
    assert e.action_space("player_0").n == 15 * 6 + 2
    assert e.action_space("player_0") is e.action_space("player_0")  # built once
    assert e.bid_action(4, 2) == 19 and e.challenge_action == 90 and e.exact_action == 91
    assert e.describe_action(19) == "four 2s" and e.describe_action(90) == "challenge"
    assert e.describe_action(91) == "calza"
    assert liars_env.raw_env("perudo").exact_action is None
    assert liars_env.raw_env("common_hand_spot_on").describe_action(91) == "spot on"
    spaces = {str(e.observation_space(a)) for a in e.possible_agents}
    assert len(spaces) == 1  # identical spaces for every agent (RLlib)


def test_observe_fresh_arrays_masks_and_hidden_dice():
    e = liars_env.env("perudo")
    e.reset(seed=0, options={"dice": A_B_C, "first_player": "player_0"})
    obs = e.observe("player_0")
    again = e.observe("player_0")
    assert obs["observation"] is not again["observation"]
    assert obs["action_mask"] is not again["action_mask"]
    assert obs["action_mask"].dtype == np.int8 and obs["action_mask"].sum() > 0
    assert e.observe("player_1")["action_mask"].sum() == 0
    # Own dice appear; other players' dice never do.
    other = [A_B_C[0], [6, 6, 6, 6, 6], [5, 5, 5, 5, 5]]
    e2 = liars_env.env("perudo")
    e2.reset(seed=0, options={"dice": other, "first_player": "player_0"})
    np.testing.assert_array_equal(obs["observation"], e2.observe("player_0")["observation"])
    assert not np.array_equal(
        e.observe("player_1")["observation"], e2.observe("player_1")["observation"]
    )


def test_observation_holds_the_whole_round_history():
    e = liars_env.env("perudo")
    e.reset(seed=0, options={"dice": A_B_C, "first_player": "player_0"})
    raw = e.unwrapped
    e.step(raw.bid_action(2, 3))
    e.step(raw.bid_action(3, 3))
    obs = e.observe("player_2")["observation"]
    layout = raw.layout
    history = obs[layout.slices["bid_history"]].reshape(-1, 3)
    # relative to player_2: player_0 is one seat clockwise, player_1 two
    assert history[raw.bid_action(2, 3), 1] == 1 and history[raw.bid_action(3, 3), 2] == 1
    assert history.sum() == 2
    assert obs[layout.slices["current_bid"]].argmax() == raw.bid_action(3, 3)
    assert obs[layout.slices["current_bidder"]].argmax() == 2
    assert obs[layout.slices["opener"]].argmax() == 1
    own = obs[layout.slices["own_dice"]] * 5
    np.testing.assert_allclose(own, [0, 1, 1, 1, 1, 1])
    np.testing.assert_allclose(obs[layout.slices["dice_left"]], [1, 1, 1])


def test_elimination_keeps_the_agent_until_the_game_ends():
    e = liars_env.env("perudo", num_players=3)
    e.reset(
        seed=0,
        options={
            "dice": [[6], [1, 2, 2, 5, 6], [2]],
            "dice_left": [1, 5, 1],
            "first_player": "player_0",
        },
    )
    raw = e.unwrapped
    e.step(raw.bid_action(5, 6))  # false: only 6, 6 and a wild one
    e.step(raw.challenge_action)
    # the reveal, whole, on the raw env
    info = raw.last_round
    assert info["call"] == "challenge" and info["bid"] == (5, 6) and info["count"] == 3
    assert info["bidder"] == "player_0" and info["caller"] == "player_1"
    assert info["losers"] == ["player_0"] and info["eliminated"] == ["player_0"]
    assert info["dice"]["player_1"] == [1, 2, 2, 5, 6]
    assert info["dice_left"] == {"player_0": 0, "player_1": 5, "player_2": 1}
    assert info["next_opener"] == "player_1"
    # the elimination and its reward show at once; the agent stays, not terminated
    assert e.rewards == {"player_0": -0.5, "player_1": 0.0, "player_2": 0.0}
    assert e.infos["player_0"]["eliminated"] and e.infos["player_0"]["dice_change"] == -1
    assert e.infos["player_1"]["round_over"] and not e.infos["player_1"]["eliminated"]
    np.testing.assert_array_equal(e.infos["player_2"]["dice_left"], [0, 5, 1])
    assert e.agents == ["player_0", "player_1", "player_2"]
    assert not any(e.terminations.values())
    # the turn skips the eliminated player: the next actor always has legal moves
    assert e.agent_selection == "player_1" and e.last()[0]["action_mask"].any()
    assert raw.dice_left == {"player_0": 0, "player_1": 5, "player_2": 1}
    e.step(raw.bid_action(1, 6))
    assert e.agent_selection == "player_2"
    e.step(raw.challenge_action)  # one 6 among player_1's 6 and ones, player_2's 2: true
    assert raw.game_state.winner == 1
    assert all(e.terminations.values())
    assert e.rewards == {"player_0": 0.0, "player_1": 1.0, "player_2": -0.5}
    returns = {}
    for agent in e.agent_iter():
        _, reward, terminated, _, _ = e.last()
        assert terminated
        returns[agent] = reward
        e.step(None)
    assert returns == {"player_0": -0.5, "player_1": 1.0, "player_2": -0.5}
    assert e.agents == []


def test_infos_are_fixed_shape_and_never_mutated():
    e = liars_env.env("perudo", num_players=3)
    e.reset(seed=5)
    rng = np.random.default_rng(5)
    seen = []
    for _agent in e.agent_iter():
        obs, _, terminated, truncated, info = e.last()
        assert set(info) == set(liars_env.envs.aec.INFO_KEYS)
        assert info["dice_left"].shape == (3,) and info["dice_left"].dtype == np.int64
        seen.append((info, {k: np.array(v).copy() for k, v in info.items()}))
        if terminated or truncated:
            e.step(None)
            continue
        e.step(int(rng.choice(np.flatnonzero(obs["action_mask"]))))
    assert any(bool(i["round_over"]) for i, _ in seen)
    for info, snapshot in seen:  # what last() returned was not changed afterwards
        for key, value in snapshot.items():
            np.testing.assert_array_equal(np.array(info[key]), value)


def test_rich_info_adds_the_reveal():
    e = liars_env.env("perudo", num_players=3, rich_info=True)
    e.reset(seed=0, options={"dice": A_B_C, "first_player": "player_0"})
    e.step(e.unwrapped.bid_action(4, 2))
    e.step(e.unwrapped.bid_action(7, 2))
    e.step(e.unwrapped.challenge_action)
    info = e.infos["player_0"]["round_result"]
    assert info == e.infos["player_2"]["round_result"] == e.unwrapped.last_round
    assert info["count"] == 6 and info["losers"] == ["player_1"]
    with pytest.raises(ValueError, match="rich_info must be True or False, got 'yes'"):
        liars_env.env("perudo", rich_info="yes")


@pytest.mark.parametrize("name, players", preset_grid(players=(2, 3, 5, 8)))
def test_the_actor_always_has_a_legal_action(name, players):
    e = liars_env.env(name, num_players=players)
    rng = np.random.default_rng(players)
    for seed in range(2):
        e.reset(seed=seed)
        for agent in e.agent_iter():
            obs, _, terminated, truncated, _ = e.last()
            assert e.agents == e.possible_agents or terminated  # nobody leaves early
            if terminated or truncated:
                assert e.unwrapped.game_state.is_over
                e.step(None)
                continue
            assert e.unwrapped.dice_left[agent] > 0 and obs["action_mask"].any()
            e.step(int(rng.choice(np.flatnonzero(obs["action_mask"]))))


@pytest.mark.parametrize("name", sorted(PRESETS))
def test_pettingzoo_state_test(name):
    from pettingzoo.test import state_test
    from pettingzoo.utils.conversions import turn_based_aec_to_parallel

    # state_test samples actions from the whole space: illegal ones end the game
    e = liars_env.env(name, illegal_action="penalize")
    parallel = turn_based_aec_to_parallel(liars_env.env(name, illegal_action="penalize"))
    state_test(e, parallel, num_cycles=50)


def test_state_holds_every_hand_and_the_actor():
    e = liars_env.raw_env("perudo", num_players=3)
    e.reset(seed=0, options={"dice": A_B_C, "first_player": "player_1"})
    state = e.state()
    assert e.state_space.contains(state)
    size, f = e.layout.size, 6
    np.testing.assert_array_equal(state[:size], e.observe("player_0")["observation"])
    np.testing.assert_allclose(state[size : size + f] * 5, [1, 2, 0, 0, 1, 1])  # player_1
    np.testing.assert_allclose(state[size + f : size + 2 * f] * 5, [0, 1, 1, 1, 1, 1])
    np.testing.assert_array_equal(state[size + 2 * f :], [0, 1, 0])
    assert state is not e.state()


@pytest.mark.parametrize("players", [2, 3, 6])
def test_rgb_array_render_shows_dice_only_at_a_reveal(players):
    e = liars_env.env("perudo", num_players=players, render_mode="rgb_array")
    e.reset(seed=0, options={"first_player": "player_0"})
    hidden = e.render()
    assert hidden.shape == (480, 640, 3) and hidden.dtype == np.uint8
    raw = e.unwrapped
    e.step(raw.bid_action(1, 2))
    e.step(raw.challenge_action)
    revealed = e.render()
    e2 = liars_env.env("perudo", num_players=players, render_mode="rgb_array")
    e2.reset(seed=1, options={"first_player": "player_0"})  # other dice, same seats
    assert np.array_equal(hidden, e2.render())  # hidden dice: the same picture
    assert not np.array_equal(hidden, revealed)
    e2.step(raw.bid_action(1, 2))
    e2.step(raw.challenge_action)
    assert not np.array_equal(revealed, e2.render())  # the faces show at the reveal


@pytest.mark.parametrize("name, players", preset_grid(players=(2, 3, 4)))
def test_returns_are_zero_sum_with_one_winner(name, players):
    e = liars_env.env(name, num_players=players)
    rng = np.random.default_rng(0)
    for seed in range(3):
        returns = random_game(e, seed, rng)
        assert sum(returns.values()) == pytest.approx(0.0)
        assert sorted(returns.values())[-1] == 1.0
        assert all(r == pytest.approx(-1 / (players - 1)) for r in sorted(returns.values())[:-1])
        assert e.agents == []


def test_illegal_action_raises_and_changes_nothing():
    e = liars_env.env("perudo")
    e.reset(seed=0, options={"first_player": "player_0"})
    raw = e.unwrapped
    e.step(raw.bid_action(5, 4))
    before = raw.game_state.to_dict()
    cases = [
        (raw.bid_action(2, 1), "five 4s.*conversion to ones needs at least ceil\\(5/2\\) = 3"),
        (raw.bid_action(4, 6), "bid four 6s.*raise a higher quantity"),
        (raw.bid_action(16 - 1, 6) + 6, "outside the action space"),
        (-1, "outside the action space"),
        ("3", "not an int action id"),
        (2.5, "not an int action id"),
    ]
    for action, message in cases:
        with pytest.raises(IllegalActionError, match=message):
            e.step(action)
        assert raw.game_state.to_dict() == before and e.agent_selection == "player_1"
    assert isinstance(IllegalActionError("x"), ValueError)
    e.step(raw.bid_action(3, 1))  # the same agent may act again


def test_opening_challenge_is_illegal():
    e = liars_env.env("perudo")
    e.reset(seed=0)
    with pytest.raises(IllegalActionError, match="no bid yet this round; the opening bid"):
        e.step(e.unwrapped.challenge_action)


def test_penalize_mode_ends_the_game_zero_sum():
    e = liars_env.env("perudo", num_players=3, illegal_action="penalize")
    e.reset(seed=0, options={"first_player": "player_1"})
    e.step(e.unwrapped.challenge_action)  # illegal opening challenge
    returns = {}
    for agent in e.agent_iter():
        _, reward, terminated, _, info = e.last()
        assert terminated and info["illegal_action"] is True
        returns[agent] = reward
        e.step(None)
    assert returns == {"player_0": 0.5, "player_1": -1.0, "player_2": 0.5}
    assert "player_1" in e.unwrapped.last_illegal and "opening bid" in e.unwrapped.last_illegal


@pytest.mark.parametrize(
    "options, message",
    [
        ({"dice": [[1, 2, 3, 4, 5]] * 2}, "dice must be a list of 3 hands"),
        (
            {"dice": [[1, 2, 3, 4, 5], [1, 2, 3, 4, 5], [1, 2, 3, 4]], "dice_left": [5, 5, 5]},
            "dice\\[2\\] must hold 5",
        ),
        ({"dice": [[1, 2, 3, 4, 7]] * 3}, "dice\\[0\\] must hold ints from 1 to 6, got 7"),
        ({"dice_left": [5, 5]}, "dice_left must have 3 entries"),
        ({"dice_left": [6, 5, 5]}, "dice_left must hold ints from 0 to 5, got 6"),
        ({"dice_left": [0, 0, 5]}, "at least two seats"),
        ({"first_player": "player_9"}, "first_player must be one of"),
        ({"dice_left": [0, 5, 5], "first_player": "player_0"}, "first_player 0 has no dice"),
        ("dice", "reset options must be a dict"),
        ({"dice": [1, 2, 3]}, "dice\\[0\\] must be a list of faces \\(one hand per seat\\), got 1"),
        ({"dice": "abc"}, "dice must be a list of 3 hands"),
        ({"first_player": [0]}, "first_player must be one of .*, got \\[0\\]"),
        (
            {"dice": [[1, 2, 3, 4, 5, 6]] * 3},
            "dice\\[0\\] holds 6 faces, more than dice_per_player=5",
        ),
        ({"dice": [[1.5, 2, 3, 4, 5]] * 3}, "dice\\[0\\] must hold ints from 1 to 6, got 1.5"),
    ],
)
def test_bad_reset_options_raise_and_change_nothing(options, message):
    e = liars_env.env("perudo")
    e.reset(seed=0)
    e.step(e.unwrapped.bid_action(2, 3))
    before = (e.unwrapped.game_state.to_dict(), e.agent_selection, list(e.agents))
    with pytest.raises(ValueError, match=message):
        e.reset(seed=1, options=options)
    assert (e.unwrapped.game_state.to_dict(), e.agent_selection, list(e.agents)) == before


def test_unknown_reset_option_warns():
    e = liars_env.env("perudo")
    with pytest.warns(UserWarning, match="ignoring unknown reset option"):
        e.reset(seed=0, options={"dise": 1})


def test_dice_alone_sets_dice_left():
    e = liars_env.env("perudo")
    e.reset(seed=0, options={"dice": [[2, 2], [], [6]]})
    assert e.unwrapped.dice_left == {"player_0": 2, "player_1": 0, "player_2": 1}
    assert e.agents == e.possible_agents and e.infos["player_1"]["eliminated"]
    assert e.agent_selection != "player_1"


def test_endgame_reset_options():
    e = liars_env.env("perudo", num_players=4)
    e.reset(seed=0, options={"dice_left": [0, 2, 0, 1], "first_player": "player_3"})
    assert e.agents == e.possible_agents and e.agent_selection == "player_3"
    # seats out from the start have already lost: their share is in their return
    assert e.unwrapped._cumulative_rewards["player_0"] == pytest.approx(-1 / 3)
    assert e.unwrapped.dice_left == {"player_0": 0, "player_1": 2, "player_2": 0, "player_3": 1}


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"num_players": 9}, "RuleSet.num_players must be an int from 2 to 8, got 9"),
        ({"faces": 1}, "RuleSet.faces must be an int from 2 to 9, got 1"),
        ({"dice_per_player": 0}, "RuleSet.dice_per_player must be an int from 1 to 10"),
        (
            {"ones": "sometimes"},
            "RuleSet.ones must be one of 'natural', 'wild', 'wild_convertible'",
        ),
        ({"bid_cap": "yes"}, "RuleSet.bid_cap must be True or False, got 'yes'"),
        ({"exact_call": "bullseye"}, "RuleSet.exact_call must be one of"),
        ({"num_players": 3.0}, "must be an int"),
        ({"colour": "red"}, "unknown rule option 'colour'"),
    ],
)
def test_bad_rule_options(kwargs, message):
    with pytest.raises(ValueError, match=message):
        liars_env.env("perudo", **kwargs)


def test_bad_preset_names_and_player_ranges():
    with pytest.raises(ValueError, match="unknown preset 'peruda'; expected one of"):
        liars_env.env("peruda")
    with pytest.raises(ValueError, match="preset 'sanford' is written for 3–5 players"):
        RuleSet.preset("sanford", num_players=2)
    with pytest.raises(ValueError, match="render_mode must be"):
        liars_env.env("perudo", render_mode="rgb")
    with pytest.raises(ValueError, match="illegal_action must be"):
        liars_env.env("perudo", illegal_action="ignore")
    with pytest.raises(ValueError, match="rules must be a preset name or a RuleSet"):
        liars_env.env(42)


def test_rules_accept_a_ruleset_and_round_trip_through_dicts():
    rules = RuleSet(num_players=2, dice_per_player=2, faces=3, ones="natural")
    e = liars_env.env(rules)
    assert e.unwrapped.rules is rules and e.action_space("player_0").n == 2 * 2 * 3 + 1
    assert RuleSet.from_dict(json.loads(json.dumps(rules.to_dict()))) == rules


def test_ansi_render_hides_dice_until_a_reveal():
    e = liars_env.env("perudo", render_mode="ansi")
    e.reset(seed=0, options={"dice": A_B_C, "first_player": "player_0"})
    e.step(e.unwrapped.bid_action(4, 2))
    text = e.render()
    assert "?????" in text and "player_0 bids four 2s" in text and "[2]" not in text
    e.step(e.unwrapped.bid_action(7, 2))
    e.step(e.unwrapped.challenge_action)
    text = e.render()
    assert "player_2 challenges player_1's seven 2s" in text
    assert "[1]*" in text and "count of 2s: 6 (bid 7)" in text
    assert "player_1 loses a die" in text and "player_1 opens the next round" in text


def test_human_render_prints(capsys):
    e = liars_env.env("perudo", render_mode="human")
    e.reset(seed=0)
    assert "Round 1" in capsys.readouterr().out


@pytest.mark.parametrize("name, players", preset_grid(players=(3, 5)))
def test_aec_games_have_the_engines_outcomes(name, players):
    """The env is an adapter: replaying its actions in the engine gives the same game,
    and the returns follow the engine's places (winner +1, everyone else -1/(N-1))."""
    e = liars_env.env(name, num_players=players)
    returns = random_game(e, 7, np.random.default_rng(7))
    state = e.unwrapped.game_state
    replayed = LiarsDiceGame(e.unwrapped.rules).replay(7, state.actions)
    assert replayed == state and replayed.is_over
    places = replayed.places()
    for seat, agent in enumerate(e.possible_agents):
        expected = 1.0 if places[seat] == 1 else -1 / (players - 1)
        assert returns[agent] == pytest.approx(expected)


def test_reset_accepts_hands_as_numpy_arrays():
    e = liars_env.env("perudo")
    e.reset(seed=0, options={"dice": np.array([[1, 2, 3, 4, 5], [6, 6, 6, 6, 6], [2, 2, 2, 2, 2]])})
    assert e.unwrapped.game_state.dice == [[1, 2, 3, 4, 5], [6] * 5, [2] * 5]
    e.reset(seed=0, options={"dice": [np.array([1, 1]), np.array([3]), np.array([4, 4])]})
    assert e.unwrapped.game_state.dice_left == [2, 1, 2]


def test_step_takes_a_one_element_integer_array_as_the_spec_table_says():
    e = liars_env.env("perudo")
    e.reset(seed=0)
    first = e.agent_selection
    e.step(np.array([e.unwrapped.bid_action(2, 3)]))
    assert e.unwrapped.game_state.bids[-1][1:] == (2, 3) and e.agent_selection != first
    with pytest.raises(liars_env.IllegalActionError, match="not an int action id"):
        e.step(np.array([7.0]))
