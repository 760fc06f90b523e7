"""The exact solver: hand-solved games, best responses, agents, the CLI, OpenSpiel."""

from __future__ import annotations

import json

import numpy as np
import pytest

from liars_env import LiarsDiceGame, ObservationLayout, RuleSet
from liars_env.agents import make_agent, view_of
from liars_env.rules import PRESETS
from liars_env.solver import (
    MAX_PUBLIC_NODES,
    Solution,
    SolverAgent,
    best_response_values,
    cache_path,
    cached_solution,
    exploit,
    solve,
)
from liars_train.tools.solve import main as solve_main


def small(faces=3, ones="natural", **options):
    return RuleSet(num_players=2, dice_per_player=1, faces=faces, ones=ones, **options)


@pytest.fixture(autouse=True)
def _cache(tmp_path, monkeypatch):
    monkeypatch.setenv("LIARS_DICE_CACHE", str(tmp_path / "cache"))


# ------------------------------------------------------------------ games solved by hand
def test_two_faces_wild_ones_by_hand():
    """Faces {1, 2}, ones wild, 1 die each: every die counts as a 2, so "two 2s" is true
    whatever the dice. Ones may not be bid and the cap is 2, so after it the responder's
    only legal action is a challenge, which it loses: the opener wins, value +1."""
    solution = solve(small(2, "wild"))
    assert solution.value == pytest.approx(1.0)
    assert solution.exploitability == pytest.approx(0.0, abs=1e-9)


def test_two_faces_palifico_by_hand():
    """Faces {1, 2}, 1 die each, palifico: the opener has one die, so round 1 is palifico
    (ones not wild, the face fixed, only the quantity rises; cap 2). Opener die x,
    responder die y, each 1 or 2 with chance 1/2.

    The opener gets 0: bidding one x (true), it wins unless the responder holds y = x
    and raises to two x, which the opener must challenge and lose: it wins with chance
    1/2. The responder holds it to 0: after one f it raises to two f iff y = f, else
    challenges; after two f it challenges. Against that, one f wins iff (y = f and
    x ≠ f) or (y ≠ f and x = f), chance 1/2 for every x; two f wins iff x = y = f,
    chance at most 1/2. So the value is 0.

    With 6 faces the same reasoning gives the opener's one x a win unless y = x:
    value 5/6 − 1/6 = 2/3."""
    assert solve(small(2, "natural", palifico=True)).value == pytest.approx(0.0, abs=1e-9)
    six = PRESETS["perudo_palifico"].with_options(num_players=2, dice_per_player=1)
    assert solve(six).value == pytest.approx(2 / 3)


@pytest.mark.parametrize("ones", ["natural", "wild", "wild_convertible", "jokers"])
def test_lp_and_cfr_agree(ones):
    rules = small(3, ones)
    lp = solve(rules, method="lp")
    cfr = solve(rules, method="cfr+", tolerance=1e-4)
    assert lp.exploitability < 1e-9
    assert cfr.exploitability < 1e-4
    assert cfr.iterations > 0
    assert abs(cfr.value - lp.value) <= 2 * cfr.exploitability + 1e-9


OPTIONS = [
    {"raise_rule": "no_decrease"},
    {"bid_cap": False},
    {"exact_call": "spot_on"},
    {"exact_call": "calza"},
    {"hand": "individual"},
    {"palifico": True, "exact_call": "spot_on"},
]


@pytest.mark.parametrize(
    "options", OPTIONS, ids=lambda o: ",".join(f"{k}={v}" for k, v in o.items())
)
def test_every_option_solves_to_an_equilibrium(options):
    rules = RuleSet(num_players=2, dice_per_player=2, faces=2, ones="wild_convertible", **options)
    solution = solve(rules)
    assert solution.exploitability < 1e-6
    labels = {key.label().split()[0] for key in solution.values}
    assert {"2v2", "1v1"} <= labels  # every round of the game, not only the first
    assert -1.0 <= solution.value <= 1.0


def test_jokers_two_faces_by_hand():
    """Jokers, 1 die of 2 faces each: "two 2s" counts every die (a 2, or a joker), so it
    is always true and nothing outbids it; the opener bids it and wins: value 1."""
    solution = solve(small(2, "jokers"))
    assert solution.value == pytest.approx(1.0) and solution.exploitability < 1e-9


@pytest.mark.parametrize(
    "dice, faces, value",
    [(1, 3, 1 / 3), (1, 4, 0.0), (1, 6, -7 / 327), (2, 3, 0.058680)],
    ids=["1x3", "1x4", "1x6", "2x3"],
)
def test_jokers_values_of_docs_solver(dice, faces, value):
    # the table of docs/solver.md (the 2x3 value to its six decimals)
    rules = RuleSet.preset("jokers", num_players=2, dice_per_player=dice, faces=faces)
    solution = solve(rules)
    assert solution.exploitability < 1e-9
    assert solution.value == pytest.approx(value, abs=5e-7 if dice == 2 else 1e-9)


# ------------------------------------------------------------------ limits
def test_unsupported_sizes_name_the_limit():
    with pytest.raises(ValueError, match="2 players only, got num_players=3"):
        solve(RuleSet(num_players=3, dice_per_player=1, faces=2))
    with pytest.raises(ValueError, match=f"limits are {MAX_PUBLIC_NODES:,} nodes"):
        solve(RuleSet(num_players=2, dice_per_player=2, faces=6))
    with pytest.raises(ValueError, match="iterations must be a positive int"):
        solve(small(), iterations=0)
    with pytest.raises(ValueError, match="method must be one of"):
        solve(small(), method="simplex")


# ------------------------------------------------------------------ best responses
BOTS = ["random", "probabilistic", "cautious", "bold", "bayes", "belief"]


@pytest.fixture(scope="module")
def wild3():
    rules = small(3, "wild_convertible")
    return rules, solve(rules)


@pytest.mark.parametrize("spec", BOTS)
def test_best_response_beats_the_value_for_every_bot(spec, wild3):
    rules, solution = wild3
    result = exploit(make_agent(spec, rules, seed=0), rules, trees=solution.trees())
    # a best response gets at least the game value in each role, so at least 0 on average
    assert min(result.best_response) >= -1e-9
    assert result.exploitability >= -1e-9
    # bots play alike in either seat
    assert result.best_response[0] == pytest.approx(result.best_response[1], abs=1e-9)
    from liars_env.solver import AgentTables

    br = best_response_values(
        solution.trees(), AgentTables(solution.trees(), make_agent(spec, rules, seed=0), 0)
    )
    start = solution.start
    assert br[start][0] >= solution.value - 1e-9  # as opener
    assert br[start][1] >= -solution.value - 1e-9  # as responder


def test_solver_is_unexploitable_and_symmetric(wild3):
    rules, solution = wild3
    agent = SolverAgent(rules, solution=solution)
    by_solution = exploit(agent, rules)
    assert by_solution.exploitability < 1e-9

    class Queried:  # the same strategy, read through views only
        name = "queried"

        def reset(self, seed=None):
            pass

        def action_probabilities(self, view):
            return agent.action_probabilities(view)

        def act(self, view):
            return int(np.argmax(self.action_probabilities(view)))

    queried = exploit(Queried(), rules)
    assert queried.queries > 0
    assert queried.exploitability == pytest.approx(by_solution.exploitability, abs=1e-9)
    assert queried.best_response[0] == pytest.approx(queried.best_response[1], abs=1e-9)


def test_a_deterministic_agent_is_read_through_act(wild3):
    rules, solution = wild3

    class FirstLegal:
        name = "first-legal"

        def reset(self, seed=None):
            pass

        def act(self, view):
            return int(view.legal_actions[0])

    result = exploit(FirstLegal(), rules, trees=solution.trees())
    assert result.exploitability > 0.3  # opening the lowest bid and always raising loses


def test_bot_probabilities_match_its_sampling():
    rules = PRESETS["perudo"].with_options(num_players=2, dice_per_player=1)
    game, layout = LiarsDiceGame(rules), ObservationLayout(rules)
    state = game.new_game(np.random.default_rng(3), first_player=0)
    game.apply(state, game.codec.encode_bid(1, 3), np.random.default_rng(0))
    view = view_of(game, layout, state)
    bot = make_agent("probabilistic:bluff_rate=0.5", rules, seed=1)
    probs = bot.action_probabilities(view)
    assert probs.sum() == pytest.approx(1.0)
    assert not probs[view.mask == 0].any()
    counts = np.bincount([bot.act(view) for _ in range(3000)], minlength=len(probs))
    assert np.abs(counts / 3000 - probs).max() < 0.04


# ------------------------------------------------------------------ files, cache, agent
def test_save_load_and_cache(tmp_path, monkeypatch):
    rules = small(3, "wild")
    solution = solve(rules)
    path = solution.save(tmp_path / "s.npz")
    loaded = Solution.load(path, rules)
    assert loaded.value == solution.value and loaded.start == solution.start
    for key, strategy in solution.strategies.items():
        for a, b in zip(strategy, loaded.strategies[key], strict=True):
            np.testing.assert_array_equal(a, b)
    with pytest.raises(ValueError, match="solves"):
        Solution.load(path, small(3, "natural"))
    first = cached_solution(rules)
    assert cache_path(rules).exists()
    monkeypatch.setattr("liars_env.solver.cache.solve", lambda *a, **k: pytest.fail("solved again"))
    assert cached_solution(rules).value == first.value


def test_solver_agent_spec_in_a_match():
    from liars_train.evaluation.tournament import evaluate

    rules = PRESETS["perudo"].with_options(num_players=2, dice_per_player=1, faces=4)
    result = evaluate(rules, ["solver", "random"], games=40, workers=1, progress=False)
    assert result.decisions > 0
    assert "solver" in json.dumps(result.to_json())
    with pytest.raises(ValueError, match="2 players only"):
        make_agent("solver", PRESETS["perudo"].with_options(dice_per_player=1))


def test_solver_agent_tracks_palifico_rounds():
    rules = RuleSet(num_players=2, dice_per_player=2, faces=2, palifico=True, exact_call="spot_on")
    agent = SolverAgent(rules, solution=solve(rules), seed=0)
    game, layout = LiarsDiceGame(rules), ObservationLayout(rules)
    for seed in range(20):
        agent.reset(seed)
        rng = np.random.default_rng(seed)
        state = game.new_game(rng)
        while not state.is_over:
            action = agent.act(view_of(game, layout, state))
            assert game.is_legal(state, action)
            game.apply(state, action, rng)


# ------------------------------------------------------------------ CLI
def test_exploit_specs_after_one_flag_or_the_flag_repeated():
    from liars_train.tools.solve import build_parser

    for argv in (["--exploit", "random", "bold"], ["--exploit", "random", "--exploit", "bold"]):
        assert build_parser().parse_args(argv).exploit == ["random", "bold"]


def test_cli_tiny_run(tmp_path, capsys):
    out = tmp_path / "r.json"
    code = solve_main(
        ["--rules", "perudo", "--rule", "dice_per_player=1", "--rule", "faces=3",
         "--exploit", "random", "solver", "--out", str(out)]
    )  # fmt: skip
    assert code == 0
    data = json.loads(out.read_text())
    for key in ("value", "exploitability", "iterations", "seconds"):
        assert key in data
    assert data["exploit"]["solver"]["exploitability"] < 1e-9
    assert data["exploit"]["random"]["exploitability"] > 0.1
    assert "exploitability" in capsys.readouterr().out


def test_cli_against_equilibrium_puts_what_it_takes_beside_what_a_best_response_takes(
    tmp_path, capsys
):
    out = tmp_path / "r.json"
    argv = ["--rules", "perudo", "--rule", "dice_per_player=1", "--rule", "faces=4"]
    argv += ["--exploit", "bold", "belief", "--out", str(out)]
    assert solve_main([*argv, "--against-equilibrium"]) == 0
    data = json.loads(out.read_text())["exploit"]
    bold = data["bold"]["equilibrium"]
    assert bold["mean"] == pytest.approx(0.10388, abs=1e-5)  # docs/solver.md's example
    assert 0 < bold["mean"] < data["bold"]["exploitability"]
    assert bold["win_rate"] == pytest.approx(0.5 * (1 + bold["mean"]))
    assert abs(data["belief"]["equilibrium"]["mean"]) < 1e-9  # belief gives it nothing
    printed = capsys.readouterr().out
    assert "equilibrium vs bold" in printed and "+0.1039 (win rate 0.5519" in printed
    assert solve_main(argv) == 0  # without the flag, not measured
    assert "equilibrium" not in json.loads(out.read_text())["exploit"]["bold"]


def test_cli_by_round_shows_where_an_agent_is_exploited(tmp_path, capsys):
    out = tmp_path / "r.json"
    argv = ["--rules", "perudo", "--rule", "dice_per_player=2", "--rule", "faces=2",
            "--exploit", "random", "solver", "--by-round", "--out", str(out)]  # fmt: skip
    assert solve_main(argv) == 0
    data = json.loads(out.read_text())
    values = data["round_values"]
    for spec in ("random", "solver"):
        rounds = data["exploit"][spec]["rounds"]
        assert set(rounds) == {"0", "1"} and set(rounds["0"]) == set(values)
        start = max(values, key=lambda label: sum(map(int, label.split("v"))))
        as_opener, as_responder = rounds["0"][start]  # the first round's pair gives the seats'
        assert 0.5 * (as_opener + as_responder) == pytest.approx(
            data["exploit"][spec]["best_response"][0], abs=1e-12
        )
    for label, (as_opener, as_responder) in data["exploit"]["solver"]["rounds"]["0"].items():
        assert as_opener == pytest.approx(values[label], abs=1e-6)  # an equilibrium: (v, -v)
        assert as_responder == pytest.approx(-values[label], abs=1e-6)
    random_gains = [sum(pair) for pair in data["exploit"]["random"]["rounds"]["0"].values()]
    assert min(random_gains) > 0.1
    text = capsys.readouterr().out
    assert "random: best response by round" in text and "seat either: gain" in text
    assert "2v2" in text and "1v1" in text


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--players", "3", "--rule", "dice_per_player=1"], "2 players only"),
        (["--rule", "dice_per_player=2"], "too large"),
        (["--rule", "dice=1"], "unknown rule option 'dice'"),
        (["--rules", "nope"], "unknown preset"),
        (["--rule", "dice_per_player=1", "--exploit", "nobody"], "unknown agent spec"),
        (["--rule", "num_players=3"], "--rule num_players=3: the table size is set by --players"),
    ],
)
def test_cli_bad_input_exits_2(argv, message, capsys):
    assert solve_main(argv) == 2
    assert message in capsys.readouterr().err.replace("\n", " ")  # errors go to stderr


# ------------------------------------------------------------------ OpenSpiel
GAMES = [
    *((faces, ones) for faces in (3, 4) for ones in ("natural", "wild", "wild_convertible")),
    (3, "jokers"),
]


@pytest.mark.parametrize("faces, ones", GAMES)
def test_openspiel_agrees(faces, ones):
    pytest.importorskip("pyspiel", reason="the OpenSpiel cross-check needs open_spiel")
    from open_spiel.python.algorithms import cfr, expected_game_score
    from open_spiel.python.algorithms.exploitability import nash_conv

    from liars_env.solver import openspiel

    rules = small(faces, ones)
    solution = solve(rules)
    fixed = openspiel.load(rules, first_player=0)
    ours = openspiel.to_openspiel_policy(fixed, SolverAgent(rules, solution=solution))
    value = expected_game_score.policy_value(fixed.new_initial_state(), [ours, ours])[0]
    assert value == pytest.approx(solution.value, abs=1e-9)
    assert nash_conv(fixed, ours) / 2 == pytest.approx(solution.exploitability, abs=1e-9)
    if faces == 4:
        return  # OpenSpiel's Python CFR+ takes a while on 4 faces; 3 faces cover it
    game = openspiel.load(rules)  # first opener drawn at random, as in real games
    solver = cfr.CFRPlusSolver(game)
    for _ in range(10):
        solver.evaluate_and_update_policy()
    average = solver.average_policy()
    theirs = nash_conv(game, average) / 2
    mine = exploit(openspiel.OpenSpielPolicyAgent(game, average), rules)
    assert mine.exploitability == pytest.approx(theirs, abs=1e-9)
    after_opener = game.new_initial_state().child(0)
    v = expected_game_score.policy_value(after_opener, [average, average])[0]
    assert abs(v - solution.value) <= 4 * theirs + 1e-9
    bot = make_agent("probabilistic", rules, seed=0)
    assert exploit(bot, rules).exploitability == pytest.approx(
        nash_conv(game, openspiel.to_openspiel_policy(game, bot)) / 2, abs=1e-9
    )


def test_a_checkpoint_is_exploited_exactly_in_one_call_per_depth(wild3, tmp_path):
    """A (random-weight) checkpoint: its batched query gives the same exploitability as
    asking it view by view, and a best response beats the game value against it."""
    import torch

    from liars_env.agents.checkpoint import CheckpointAgent
    from liars_env.agents.policy import NetworkShape, PolicyNet, build_meta, write_checkpoint

    rules, solution = wild3
    torch.manual_seed(0)
    layout = ObservationLayout(rules)
    shape = NetworkShape(layout.size, LiarsDiceGame(rules).codec.num_actions, 16, 1, True, True)
    write_checkpoint(tmp_path / "ckpt", PolicyNet(shape, rules), build_meta(rules, shape))
    agent = CheckpointAgent.load(tmp_path / "ckpt", rules)

    class OneAtATime:  # the same policy without the batched query
        name = "one at a time"
        action_probabilities = staticmethod(agent.action_probabilities)

        def act(self, view):
            return agent.act(view)

        def reset(self, seed=None):
            pass

    batched = exploit(agent, rules, trees=solution.trees())
    single = exploit(OneAtATime(), rules, trees=solution.trees())
    assert batched.exploitability == pytest.approx(single.exploitability, abs=1e-6)
    assert batched.exploitability > 0.05  # random weights are far from an equilibrium
    assert min(batched.best_response) >= -1e-9
