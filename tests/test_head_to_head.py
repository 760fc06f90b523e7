"""Exact head to head results (``liars_env.solver.head_to_head``) against what they bound.

An exact result must be antisymmetric, lie between what the equilibrium guarantees and
what a best response takes, match the games the engine plays, and give 0 for the
equilibrium against itself; on every kind of game the solver handles: several rounds,
rounds that repeat (calza), and OpenSpiel's first opener.
"""

from __future__ import annotations

import itertools
import math

import pytest

from liars_env.agents import make_agent
from liars_env.rules import RuleSet
from liars_env.solver import exploit, head_to_head, round_states

GAMES = {
    "perudo 2x2": RuleSet.preset("perudo", num_players=2, dice_per_player=2, faces=2),
    "calza 1x3": RuleSet.preset("perudo_calza", num_players=2, dice_per_player=1, faces=3),
    "openspiel 1x3": RuleSet.preset(
        "openspiel_liars_dice", num_players=2, dice_per_player=1, faces=3
    ),
}
AGENTS = ["random", "bold", "belief"]


@pytest.fixture(autouse=True)
def _cache(tmp_path, monkeypatch):
    monkeypatch.setenv("LIARS_DICE_CACHE", str(tmp_path / "cache"))


@pytest.mark.parametrize("game", list(GAMES))
def test_results_are_antisymmetric_and_bounded_by_both_exploitabilities(game):
    rules = GAMES[game]
    _, trees = round_states(rules)
    agents = {spec: make_agent(spec, rules, seed=0) for spec in [*AGENTS, "solver"]}
    exploitability = {
        spec: exploit(agent, rules, trees=trees).exploitability for spec, agent in agents.items()
    }
    assert exploitability["solver"] < 1e-6
    for a, b in itertools.combinations(agents, 2):
        ab = head_to_head(agents[a], agents[b], rules, trees=trees)
        ba = head_to_head(agents[b], agents[a], rules, trees=trees)
        # a in seat 0 is b's seat-1 game, and the other way round
        assert ab.payoff[0] == pytest.approx(-ba.payoff[1], abs=1e-9), (a, b)
        assert ab.payoff[1] == pytest.approx(-ba.payoff[0], abs=1e-9), (a, b)
        assert ab.win_rate == pytest.approx(0.5 * (1 + ab.mean), abs=1e-12)
        # no agent wins more against the other than a best response does, nor loses
        # more than its own exploitability gives away
        for x, y, result in ((a, b, ab), (b, a, ba)):
            assert result.mean <= exploitability[y] + 1e-9, (x, y)
            assert result.mean >= -exploitability[x] - 1e-9, (x, y)


@pytest.mark.parametrize("game", list(GAMES))
def test_the_equilibrium_against_itself_gets_the_game_value(game):
    rules = GAMES[game]
    solver = make_agent("solver", rules)
    result = head_to_head(solver, solver, rules)
    assert result.mean == pytest.approx(0.0, abs=1e-9)
    if rules.first_opener == "player_0":  # seat 0 always opens: the solution's value
        assert result.payoff[0] == pytest.approx(solver.solution.value, abs=1e-9)
        assert result.payoff[1] == pytest.approx(-solver.solution.value, abs=1e-9)


def test_a_played_match_agrees_with_the_exact_result():
    from liars_train.evaluation.play import evaluate

    rules = GAMES["perudo 2x2"]
    exact = head_to_head(make_agent("bold", rules), make_agent("random", rules), rules)
    assert 0.6 < exact.win_rate < 0.99  # a result the match can tell from a coin
    played = evaluate(rules, ["bold", "random"], games=4000, seed=3, progress=False)
    rate = played.agents[0].win_rate
    sigma = math.sqrt(exact.win_rate * (1 - exact.win_rate) / played.games)
    assert abs(rate - exact.win_rate) < 4 * sigma, (rate, exact.win_rate)


def test_an_agent_that_breaks_its_distribution_is_named():
    rules = GAMES["calza 1x3"]

    class Broken:
        name = "broken"

        def action_probabilities(self, view):
            return [1.0] * len(view.mask)

    with pytest.raises(ValueError, match="'broken'.*summing to"):
        head_to_head(make_agent("random", rules), Broken(), rules)


def test_games_the_solver_cannot_hold_are_refused_with_the_limit():
    five = RuleSet.preset("perudo", num_players=2)
    with pytest.raises(ValueError, match="too large to solve exactly.*the limits are"):
        head_to_head(make_agent("random", five), make_agent("bold", five), five)
    three = RuleSet.preset("perudo", num_players=3, dice_per_player=1)
    with pytest.raises(ValueError, match="2 players only, got num_players=3"):
        head_to_head(make_agent("random", three), make_agent("bold", three), three)


def test_shared_reads_ask_each_agent_once_for_both_measures():
    rules = GAMES["perudo 2x2"]
    _, trees = round_states(rules)

    class Counted:  # bold, counting what it is asked
        name = "counted"

        def __init__(self):
            self.bot, self.asked = make_agent("bold", rules, seed=0), 0

        def action_probabilities(self, view):
            self.asked += 1
            return self.bot.action_probabilities(view)

    solver, agent = make_agent("solver", rules), Counted()
    reads: dict = {}
    exact = exploit(agent, rules, trees=trees, reads=reads)
    asked = agent.asked
    shared = head_to_head(solver, agent, rules, trees=trees, reads=reads)
    assert agent.asked == asked > 0  # not asked again
    fresh = head_to_head(solver, agent, rules, trees=trees)
    assert agent.asked > asked  # without reads, read afresh
    assert shared.payoff == fresh.payoff
    assert exact.exploitability == exploit(agent, rules, trees=trees).exploitability
