"""The ``openspiel_liars_dice`` preset against OpenSpiel's own ``liars_dice``.

Action by action on random games (legal actions after every history, the player to act,
the returns), the batched engine against the scalar one on the preset, the solver's game
values against exact figures and OpenSpiel's CFR+, and exploitability measured by
OpenSpiel on its own game (our equilibrium, and fixed policies whose exploitability we
also compute).
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
from test_batched import run_differential

from liars_env import LiarsDiceGame, RuleSet
from liars_env.agents.base import RandomAgent
from liars_env.batched import BatchedEnv
from liars_env.rules import PRESETS, count_matches, is_legal_bid
from liars_env.solver import SolverAgent, exploit, solve

pyspiel = pytest.importorskip("pyspiel", reason="the OpenSpiel cross-checks need open_spiel")
from open_spiel.python import policy as os_policy  # noqa: E402
from open_spiel.python.algorithms import exploitability as os_exploitability  # noqa: E402
from open_spiel.python.algorithms.expected_game_score import policy_value  # noqa: E402

from liars_env.solver import openspiel  # noqa: E402

SIZES = [(1, 4), (1, 6), (2, 3), (2, 4)]
"""(dice per player, faces) of the differential games."""

VALUES = {(1, 3): Fraction(1, 9), (1, 4): Fraction(1, 16), (1, 6): Fraction(-7, 258)}
"""Player 0's game values, exact (our sequence-form LP). OpenSpiel's sequence-form LP gives
the same for 1×3 and 1×4, its CFR+ agrees to within its NashConv (docs/solver.md)."""
VALUE_2X3 = Fraction(5, 81)


def preset(dice: int, faces: int) -> RuleSet:
    return RuleSet.preset("openspiel_liars_dice", dice_per_player=dice, faces=faces)


def native(dice: int, faces: int):
    return pyspiel.load_game("liars_dice", {"numdice": dice, "dice_sides": faces})


# ----------------------------------------------------------------------- the options
def test_the_preset_is_openspiels_game():
    rules = PRESETS["openspiel_liars_dice"]
    assert (rules.num_players, rules.dice_per_player, rules.faces) == (2, 1, 6)
    assert rules == openspiel.liars_dice_rules(pyspiel.load_game("liars_dice"))
    assert rules.wild_die == 6 and rules.ones == "wild_biddable"
    assert rules.single_round and rules.first_opener == "player_0"
    # the highest face may open and be raised like any other; it counts only itself
    assert is_legal_bid(rules, None, (1, 6), cap=2)
    assert is_legal_bid(rules, (1, 6), (2, 1), cap=2)
    assert not is_legal_bid(rules, (1, 6), (1, 5), cap=2)
    assert count_matches(rules, [[6], [3]], 3, palifico=False) == 2
    assert count_matches(rules, [[6], [3]], 6, palifico=False) == 1


@pytest.mark.parametrize(
    "options, message",
    [
        ({"wild_face": "six"}, "RuleSet.wild_face must be one of 'one', 'highest', got 'six'"),
        ({"ones": "biddable"}, "got 'biddable'"),
        ({"single_round": 1}, "RuleSet.single_round must be True or False, got 1"),
        ({"first_opener": "player_1"}, "RuleSet.first_opener must be one of 'random', "),
        ({"single_round": True}, "single_round=True needs num_players=2"),
        (
            {"num_players": 2, "single_round": True, "exact_call": "calza"},
            "single_round=True needs a call that always has a loser",
        ),
    ],
)
def test_bad_option_values_are_named(options, message):
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        RuleSet(**options)


def test_the_preset_is_for_two_players():
    with pytest.raises(ValueError, match="num_players=2"):
        RuleSet.preset("openspiel_liars_dice", num_players=3)


def test_highest_wild_under_the_other_ones_modes():
    wild = RuleSet(faces=4, ones="wild", wild_face="highest")
    assert not is_legal_bid(wild, None, (1, 4), cap=15)  # the wild face is never bid
    assert is_legal_bid(wild, None, (1, 1), cap=15)  # and 1 is an ordinary face
    perudo = RuleSet(faces=4, ones="wild_convertible", wild_face="highest")
    assert not is_legal_bid(perudo, None, (2, 4), cap=15)  # no opening bid on 4s
    assert is_legal_bid(perudo, (5, 2), (3, 4), cap=15)  # conversion: ceil(5/2)
    assert not is_legal_bid(perudo, (5, 2), (2, 4), cap=15)
    assert is_legal_bid(perudo, (3, 4), (7, 1), cap=15) and not is_legal_bid(
        perudo, (3, 4), (6, 1), cap=15
    )
    # palifico rounds: the wild face is an ordinary face
    assert count_matches(perudo, [[4, 4], [2]], 2, palifico=True) == 1
    assert count_matches(perudo, [[4, 4], [2]], 2, palifico=False) == 3


# ----------------------------------------------------------------------- action by action
def play_against_pyspiel(dice: int, faces: int, games: int, seed: int) -> int:
    """Plays ``games`` random games in both engines; returns the actions compared."""
    game, theirs = LiarsDiceGame(preset(dice, faces)), native(dice, faces)
    codec = game.codec
    assert theirs.num_distinct_actions() == codec.num_actions  # the same ids
    rng = np.random.default_rng(seed)
    compared = 0
    for _ in range(games):
        state = theirs.new_initial_state()
        while state.is_chance_node():
            outcomes = [a for a, _ in state.chance_outcomes()]
            state.apply_action(int(rng.choice(outcomes)))
        history = state.history()
        hands = [[a + 1 for a in history[:dice]], [a + 1 for a in history[dice:]]]
        ours = game.new_game(rng, dice=hands)
        assert ours.opener == 0
        while not state.is_terminal():
            legal = state.legal_actions()
            assert state.current_player() == ours.current_player
            assert legal == game.legal_actions(ours), (history, ours.bids)
            # mostly bids: small raises (long rounds) and any raise (the high bids, the cap)
            bids = [a for a in legal if a != codec.challenge]
            u = rng.random()
            pool = bids[:3] if bids and u < 0.5 else bids if bids and u < 0.85 else legal
            action = int(rng.choice(pool))
            state.apply_action(action)
            game.apply(ours, action, rng)
            compared += 1
        assert ours.is_over
        assert state.returns() == [1.0 if s == ours.winner else -1.0 for s in range(2)]
    return compared


@pytest.mark.parametrize("dice, faces", SIZES)
def test_legal_actions_and_returns_equal_pyspiels(dice, faces):
    assert play_against_pyspiel(dice, faces, games=3000, seed=dice * 10 + faces) > 12_000


def test_a_native_state_replays_on_our_engine():
    theirs = native(2, 3)
    state = theirs.new_initial_state()
    for action in (0, 2, 2, 1, 3, 7):  # dice 1,3 / 3,2; bids (2, 1) and (3, 2)
        state.apply_action(action)
    ours = openspiel.liars_dice_state(theirs, state)
    assert ours.dice == [[1, 3], [3, 2]] and ours.bids == [(0, 2, 1), (1, 3, 2)]
    with pytest.raises(ValueError, match="not dealt"):
        openspiel.liars_dice_state(theirs, theirs.new_initial_state())
    with pytest.raises(ValueError, match="bidding_rule"):
        openspiel.liars_dice_rules(
            pyspiel.load_game("liars_dice", {"bidding_rule": "reset-quantity"})
        )


# ----------------------------------------------------------------------- batched engine
@pytest.mark.parametrize("backend", ["torch", "numba"])
@pytest.mark.parametrize("dice, faces", [(1, 4), (2, 4)])
def test_the_batched_engine_plays_the_scalar_engines_games(dice, faces, backend):
    rules = preset(dice, faces)
    done = run_differential(rules, "cpu", num_envs=32, steps=60, seed=faces, backend=backend)
    assert done >= 100
    env = BatchedEnv(rules, num_envs=64, seed=0, backend=backend)
    env.reset()
    assert env.opener.eq(0).all() and env.current_player.eq(0).all()


# ----------------------------------------------------------------------- the solver
@pytest.mark.parametrize("faces", [3, 4, 6])
def test_game_values_are_the_exact_figures(faces):
    solution = solve(preset(1, faces), method="lp")
    assert solution.exploitability < 1e-12
    assert solution.value == pytest.approx(float(VALUES[1, faces]), abs=1e-12)


@pytest.mark.parametrize("faces", [3, 4])
def test_openspiels_cfr_plus_converges_to_our_values(faces):
    theirs = native(1, faces)
    solver = pyspiel.CFRPlusSolver(theirs)
    for _ in range(300):
        solver.evaluate_and_update_policy()
    average = solver.average_policy()
    gap = pyspiel.nash_conv(theirs, average)
    value = pyspiel.expected_returns(theirs.new_initial_state(), average, -1, True)[0]
    # a profile's value is within its NashConv of the game's
    assert gap < 0.01 and abs(value - float(VALUES[1, faces])) <= gap


@pytest.mark.parametrize("faces", [3, 4])
def test_openspiel_finds_our_equilibrium_unexploitable(faces):
    rules, theirs = preset(1, faces), native(1, faces)
    solution = solve(rules, method="lp")
    agent = SolverAgent(rules, solution=solution)
    policy = openspiel.to_liars_dice_policy(theirs, agent)
    assert os_exploitability.nash_conv(theirs, policy) < 1e-9
    value = policy_value(theirs.new_initial_state(), [policy, policy])[0]
    assert value == pytest.approx(solution.value, abs=1e-9)
    # and on our game registered with OpenSpiel (the adapter; player 0 opens unasked)
    ours = openspiel.load(rules)
    assert ours.new_initial_state().engine_state is not None  # no chance node for the opener
    nash_conv = os_exploitability.nash_conv(ours, openspiel.to_openspiel_policy(ours, agent))
    assert nash_conv < 1e-9


class _SeatBound:
    """Plays one agent in seat 0 and another in seat 1 (a seat-dependent policy)."""

    name = "seat bound"

    def __init__(self, first, second) -> None:
        self.agents = (first, second)

    def action_probabilities(self, view) -> np.ndarray:
        from liars_env.solver.exploitability import agent_probabilities

        return agent_probabilities(self.agents[view.seat], view)


@pytest.mark.parametrize("faces", [4])
def test_our_exploitability_of_a_fixed_policy_is_openspiels(faces):
    rules, theirs = preset(1, faces), native(1, faces)
    uniform = exploit(RandomAgent(), rules).exploitability
    expected = os_exploitability.exploitability(theirs, os_policy.UniformRandomPolicy(theirs))
    assert uniform == pytest.approx(expected, abs=1e-12)
    # a policy that differs by seat: player 0 always opens, so each seat meets one role
    solution = solve(rules, method="lp")
    mixed = _SeatBound(SolverAgent(rules, solution=solution), RandomAgent())
    policy = openspiel.to_liars_dice_policy(theirs, mixed)
    expected = os_exploitability.exploitability(theirs, policy)
    assert exploit(mixed, rules).exploitability == pytest.approx(expected, abs=1e-12)
    assert expected > 0.1


def test_one_seat_is_not_taken_for_both_when_player_0_always_opens():
    """Views are seat-relative, but under OpenSpiel's rules seat 0 always opens: one
    seat's tables (as the benchmarks ask, for speed) give both seats' values."""
    from liars_env.agents import make_agent

    rules, theirs = preset(1, 4), native(1, 4)
    bot = make_agent("probabilistic", rules, seed=0)
    one, both = exploit(bot, rules, seats=(0,)), exploit(bot, rules)
    assert one.best_response == both.best_response
    assert both.best_response[0] != pytest.approx(both.best_response[1])
    expected = os_exploitability.exploitability(theirs, openspiel.to_liars_dice_policy(theirs, bot))
    assert one.exploitability == pytest.approx(expected, abs=1e-12) and expected > 0


@pytest.mark.slow
def test_two_dice_three_faces_value_and_openspiels_nash_conv():
    rules, theirs = preset(2, 3), native(2, 3)
    solution = solve(rules)  # the LP where a round is small enough, else CFR+
    assert solution.value == pytest.approx(float(VALUE_2X3), abs=1e-3)
    assert Fraction(solve(rules, method="lp").value).limit_denominator(1000) == VALUE_2X3
    policy = openspiel.to_liars_dice_policy(theirs, SolverAgent(rules, solution=solution))
    assert os_exploitability.nash_conv(theirs, policy) == pytest.approx(
        2 * solution.exploitability, abs=1e-9
    )
