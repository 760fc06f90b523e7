"""Local best response: a sound lower bound on exploitability, checked where the truth is known.

The key check is exact, not sampled: LBR is a deterministic strategy, so its expected
payoff against an agent is computed on the solver's round trees (both players' tables
read at every information state: :func:`exact_lbr_value`) and compared with the exact
best response's. The
played measurement is then checked against that exact value.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from liars_env.agents import make_agent
from liars_env.engine import GameState, LiarsDiceGame
from liars_env.observation import ObservationLayout, view_of
from liars_env.rules import RuleSet
from liars_env.solver import exploit
from liars_env.solver.exploitability import agent_probabilities
from liars_env.solver.lbr import (
    LocalBestResponse,
    exact_lbr_value,
    local_best_response,
    race_value,
    wilson,
)


def perudo(dice: int, faces: int, preset: str = "perudo") -> RuleSet:
    return RuleSet.preset(preset, num_players=2, dice_per_player=dice, faces=faces)


@pytest.mark.parametrize("response", ["call", "policy"])
@pytest.mark.parametrize(
    "game, spec",
    [
        (("perudo", 1, 3), "random"),
        (("perudo", 1, 3), "bold"),
        (("perudo", 1, 4), "belief"),
        (("openspiel_liars_dice", 1, 3), "probabilistic"),
    ],
)
def test_lbr_never_gains_more_than_the_exact_best_response(game, spec, response):
    """Exactly, not by sampling: LBR's expected payoff is at most the best response's,
    and it finds most of it (a strategy that gains little would pass the bound too)."""
    preset, dice, faces = game
    rules = perudo(dice, faces, preset)
    agent = make_agent(spec, rules, seed=0)
    best = exploit(agent, rules).exploitability
    lbr = exact_lbr_value(agent, rules, response=response)
    assert lbr <= best + 1e-9
    # "call" is the cruder assumption: it still gains, "policy" gets most of the way
    assert lbr > (0.6 * best if response == "policy" else 0.0)


def test_lbr_is_near_zero_against_the_equilibrium():
    """Against the exact equilibrium no strategy gains anything: LBR's value is ≤ 0
    (the bound is never loose in the wrong direction, even at the equilibrium)."""
    rules = perudo(1, 4)
    agent = make_agent("solver", rules, seed=0)
    assert exact_lbr_value(agent, rules) <= 1e-9


def test_a_checkpoint_is_bounded_too(tmp_path):
    """A (random-weight) checkpoint, asked through its batched query."""
    import torch

    from liars_env.agents.checkpoint import CheckpointAgent
    from liars_env.agents.policy import NetworkShape, PolicyNet, build_meta, write_checkpoint

    rules = perudo(1, 3)
    torch.manual_seed(0)
    layout = ObservationLayout(rules)
    shape = NetworkShape(layout.size, LiarsDiceGame(rules).codec.num_actions, 16, 1, True, True)
    write_checkpoint(tmp_path / "ckpt", PolicyNet(shape, rules), build_meta(rules, shape))
    agent = CheckpointAgent.load(tmp_path / "ckpt", rules)
    best = exploit(agent, rules).exploitability
    lbr = exact_lbr_value(agent, rules)
    assert 0.5 * best < lbr <= best + 1e-9


@pytest.mark.slow
@pytest.mark.parametrize("spec", ["probabilistic", "belief"])
def test_lbr_is_bounded_over_several_rounds(spec):
    """Perudo 2×3: three rounds, payoffs are the values of the rounds after."""
    rules = perudo(2, 3)
    agent = make_agent(spec, rules, seed=0)
    best = exploit(agent, rules).exploitability
    lbr = exact_lbr_value(agent, rules)
    assert 0.75 * best < lbr <= best + 1e-9


def test_the_played_measurement_estimates_the_exact_value():
    """The played games (seats rotated, the agent sampled) agree with LBR's exact value."""
    rules = perudo(1, 3)
    agent = make_agent("bold", rules, seed=0)
    exact = exact_lbr_value(agent, rules)
    result = local_best_response(agent, rules, 200, seed=3)
    assert result.ci95[0] <= exact <= result.ci95[1]
    assert result.games == 200 and result.payoff == pytest.approx(2 * result.win_rate - 1)
    assert result.ci95 == pytest.approx(tuple(2 * x - 1 for x in wilson(result.wins, 200)))
    assert result.queries > 0 and result.decisions > 0


def test_lbr_crushes_an_obviously_exploitable_agent_at_five_dice():
    """The game people play, 5 dice each: ``random`` loses nearly every game."""
    rules = RuleSet.preset("perudo", num_players=2)
    result = local_best_response(make_agent("random", rules, seed=0), rules, 6, response="call")
    assert result.wins == 6 and result.ci95[0] > 0.2


def test_the_range_is_bayes_rule_on_the_agents_own_probabilities():
    """After the agent's bids, the range is prior × the agent's probability of each bid,
    asked view by view with every hand (here 2 dice of 3 faces, two bids of the agent)."""
    rules = perudo(2, 3)
    game = LiarsDiceGame(rules)
    layout = ObservationLayout(rules)
    agent = make_agent("probabilistic", rules, seed=0)
    lbr = LocalBestResponse(agent, rules)
    bids = [(1, 1, 2), (0, 2, 2), (1, 2, 3), (0, 3, 3)]
    state = GameState(
        dice=[[1, 3], [2, 2]], dice_left=[2, 2], current_player=1, opener=1, bids=bids,
        had_palifico=[False, False],
    )  # fmt: skip
    view = view_of(game, layout, state, 1)
    hands, prior, _ = lbr.hands(2)
    expected = prior.copy()
    for t in (1, 3):  # seat 0's bids
        for h, hand in enumerate(hands):
            held = GameState(
                dice=[list(hand), [2, 2]], dice_left=[2, 2], current_player=0, opener=1,
                bids=bids[:t], had_palifico=[False, False],
            )  # fmt: skip
            probs = agent_probabilities(agent, view_of(game, layout, held, 0))
            expected[h] *= probs[game.codec.encode_bid(*bids[t][1:])]
    assert expected.sum() > 0
    np.testing.assert_allclose(lbr.agent_range(view), expected / expected.sum(), atol=1e-12)


@pytest.mark.parametrize(
    "preset",
    ["perudo", "perudo_palifico", "perudo_calza", "common_hand_spot_on", "individual_hand"],
)
def test_lbr_plays_every_two_player_option(preset):
    """Palifico, calza, spot-on and individual hands: whole games over several rounds."""
    rules = perudo(2, 4, preset)
    result = local_best_response(make_agent("bold", rules, seed=0), rules, 4, seed=1)
    assert result.games == 4 and -1 <= result.payoff <= 1


def test_bad_input_raises_naming_what_was_expected():
    three = RuleSet.preset("perudo", num_players=3, dice_per_player=1)
    with pytest.raises(ValueError, match="2-player game, got num_players=3"):
        local_best_response(make_agent("bold", three), three, 2)

    class ActsOnly:
        name = "acts-only"

        def act(self, view):
            return int(view.legal_actions[0])

    rules = perudo(1, 4)
    with pytest.raises(ValueError, match="action_probabilities.*'acts-only'"):
        local_best_response(ActsOnly(), rules, 2)
    with pytest.raises(ValueError, match="games must be a positive int, got 0"):
        local_best_response(make_agent("bold", rules), rules, 0)
    with pytest.raises(ValueError, match="response must be one of call, policy, got 'fold'"):
        LocalBestResponse(make_agent("bold", rules), rules, response="fold")
    with pytest.raises(ValueError, match="candidates must be a positive int or None, got 0"):
        LocalBestResponse(make_agent("bold", rules), rules, candidates=0)

    class Broken:
        name = "broken"

        def action_probabilities(self, view):
            return np.ones(len(view.mask))  # mass on illegal actions, sums to > 1

    with pytest.raises(ValueError, match="agent 'broken' gave probabilities summing to"):
        local_best_response(Broken(), rules, 2)


def test_race_value():
    assert race_value(3, 3) == 0.0
    assert race_value(1, 2) == pytest.approx(-0.5)
    assert race_value(2, 1) == pytest.approx(0.5)
    assert race_value(0, 2) == -1.0 and race_value(2, 0) == 1.0
    assert race_value(5, 1) > race_value(5, 2) > race_value(5, 5)
    with pytest.raises(ValueError):
        race_value(0, 0)


def test_the_cli_measures_lbr(tmp_path, capsys):
    from liars_train.tools.exploit import main

    out = tmp_path / "lbr.json"
    argv = ["--method", "lbr", "--target", "bold", "--rules", "perudo", "--rule",
            "dice_per_player=1", "--rule", "faces=3", "--games", "6", "--out", str(out),
            "--no-progress"]  # fmt: skip
    assert main(argv) == 0
    result = json.loads(out.read_text())
    assert result["method"] == "lbr" and result["games"] == 6 and result["target"] == "bold"
    assert result["ci95"][0] <= result["payoff"] <= result["ci95"][1]
    assert "lower bound" in capsys.readouterr().out
    assert main([*argv[:6], "--players", "3", "--out", str(out)]) == 2
    assert "2-player game" in capsys.readouterr().err
    assert main(["--target", "bold", "--rule", "faces=3", "--out", str(out)]) == 2
    assert "--rule needs --method lbr" in capsys.readouterr().err


def test_the_exact_value_refuses_repeating_rounds():
    rules = perudo(1, 3, "perudo_calza")
    with pytest.raises(ValueError, match="rounds that do not repeat, got exact_call='calza'"):
        exact_lbr_value(make_agent("bold", rules), rules)


def test_the_compare_benchmark_measures_each_pair_and_resumes(tmp_path, capsys):
    """``benchmarks/lbr.py compare``: LBR and the games of each agent against each
    opponent (never itself), written as measured and read back when asked again."""
    from helpers import load_script

    bench = load_script("benchmarks/lbr.py")
    out = tmp_path / "compare.json"
    argv = ["compare", "--agents", "probabilistic", "random", "--opponents", "random"]
    argv += ["--games", "40", "--rounds", "2", "--out", str(out)]
    assert bench.main(argv) == 0
    data = json.loads(out.read_text())
    assert data["probabilistic"]["random 40 0"]["win_rate"] > 0.8
    assert "random 40 0" not in data["random"]  # not against itself
    assert data["random"]["lbr 2 policy 0"]["games"] == 2
    printed = capsys.readouterr().out
    assert "| agent | LBR (2, `policy`) | vs `random` |" in printed
    assert printed.rstrip().endswith("| — |")  # random's own cell
    data["probabilistic"]["random 40 0"]["win_rate"] = 0.123
    out.write_text(json.dumps(data))
    assert bench.main(argv) == 0  # kept, not played again
    assert "| `probabilistic` | " in (text := capsys.readouterr().out) and "0.123" in text


def test_the_compare_benchmark_without_games_measures_lbr_alone(tmp_path, capsys):
    """``--games 0`` skips the head to head games (``--rounds 0`` skips LBR); left out,
    the opponents are the trained model of ``--rules``, not ``perudo_2p``."""
    from helpers import load_script

    bench = load_script("benchmarks/lbr.py")
    out = tmp_path / "compare.json"
    argv = ["compare", "--rules", "jokers", "--agents", "bold", "--games", "0"]
    assert bench.main([*argv, "--rounds", "2", "--out", str(out)]) == 0
    assert list(json.loads(out.read_text())["bold"]) == ["lbr 2 policy 0"]
    assert capsys.readouterr().out.splitlines()[-3] == "| agent | LBR (2, `policy`) |"
    assert bench.default_opponents("jokers") == ["checkpoint:checkpoints/jokers_2p", *bench.BOTS]
    assert bench.default_opponents("common_hand_spot_on") == bench.BOTS
    assert bench.default_opponents("perudo")[0] == bench.REFERENCE


def test_a_blueprint_of_other_rules_meets_the_trained_model_of_its_rules(tmp_path, monkeypatch):
    """The strength page's head to head column: ``perudo_2p`` for perudo, the model of
    the blueprint's own rules (named in the cell) for calza, "other rules" without one."""
    import argparse

    from helpers import load_script

    bench = load_script("benchmarks/lbr.py")
    assert bench.reference_of("perudo") == bench.REFERENCE
    assert bench.reference_of("perudo_calza") == "checkpoint:checkpoints/perudo_calza_2p"
    assert bench.reference_of("common_hand_spot_on") is None  # no shipped model of it
    cell = {"win_rate": 0.61, "ci95": [0.6, 0.62], "games": 20000}
    data = {
        "a perudo_calza": {
            "agent": "blueprint:blueprints/perudo_calza_2p",
            "preset": "perudo_calza",
            "h2h": {"checkpoint:checkpoints/perudo_calza_2p 20000": cell},
        },
        "b common_hand_spot_on": {"agent": "blueprint:x", "preset": "common_hand_spot_on"},
    }
    monkeypatch.setattr(bench, "_eval_card", lambda spec: {})
    ns = argparse.Namespace(
        rounds=1, bot_rounds=1, search_rounds=1, h2h_games=1, reference_games=20000,
        response="policy", bot_response="call", search_response="call", seed=0,
        out="o", small=None, markdown=None, margin=None,
    )  # fmt: skip
    page = bench.strength_markdown(data, ns)
    calza = next(line for line in page.splitlines() if "perudo_calza_2p` (" in line)
    assert "0.610 [0.600, 0.620] (20000) against `perudo_calza_2p` (⁵)" in calza
    other = next(line for line in page.splitlines() if "`blueprint:x`" in line)
    assert "other rules (⁵)" in other


def test_the_margin_benchmark_puts_the_equilibrium_s_result_beside_each_exploitability(
    tmp_path, capsys, monkeypatch
):
    """``benchmarks/lbr.py margin``: the exact result of the equilibrium against each
    agent and that agent's exact exploitability, the rows read back when asked again."""
    from helpers import load_script

    monkeypatch.setenv("LIARS_DICE_CACHE", str(tmp_path / "cache"))
    bench = load_script("benchmarks/lbr.py")
    out, page = tmp_path / "margin.json", tmp_path / "margin.md"
    argv = ["margin", "--games", "perudo_1x4", "--agents", "random", "belief"]
    argv += ["--extra", "perudo_1x4=bold", "--out", str(out), "--markdown", str(page)]
    assert bench.main(argv) == 0
    rows = {row["agent"]: row for row in json.loads(out.read_text()).values()}
    assert list(rows) == ["random", "belief", "bold"]
    for row in rows.values():
        # the equilibrium never loses, and never takes more than a best response
        assert -1e-9 <= row["payoff"] <= row["exact"] + 1e-9
        assert row["win_rate"] == pytest.approx(0.5 * (1 + row["payoff"]))
    assert rows["random"]["payoff"] > 0.5 and rows["belief"]["payoff"] < 0.01
    lines = page.read_text().splitlines()
    assert lines[0].startswith("| game | agent | exact exploitability | `solver`'s payoff")
    assert lines[2].startswith("| perudo_1x4 | `random` | 0.733 | +0.564 | 0.782 | 0.77 |")
    monkeypatch.setattr(bench, "exploit", lambda *a, **k: pytest.fail("measured again"))
    assert bench.main(argv) == 0
    assert "belief" in capsys.readouterr().out
    with pytest.raises(SystemExit, match="--extra must be GAME=SPEC"):
        bench.main([*argv[:-4], "--extra", "nowhere=bold", "--out", str(out)])


def test_the_strength_page_shows_what_an_equilibrium_wins(tmp_path, monkeypatch):
    """``table --margin``: the page's last section is the ``margin`` run's table and the
    5-dice sentence from the table's own rows (or says what is missing)."""
    import argparse

    from helpers import load_script

    bench = load_script("benchmarks/lbr.py")
    monkeypatch.setattr(bench, "_eval_card", lambda spec: {})
    row = {"game": "perudo_2x3", "player": "solver", "agent": "bayes", "exact": 0.95,
           "payoff": 0.0483, "win_rate": 0.52415, "seconds": 1.0}  # fmt: skip
    (tmp_path / "margin.json").write_text(json.dumps({"k": row}))
    ns = argparse.Namespace(
        rounds=1, bot_rounds=1, search_rounds=1, h2h_games=1, reference_games=20000,
        response="policy", bot_response="call", search_response="call", seed=0,
        out="o", small=None, markdown=None, margin=str(tmp_path / "margin.json"),
    )  # fmt: skip
    data = {
        "bp": {"agent": "blueprint:blueprints/perudo_2p", "preset": "perudo",
               "h2h": {f"{bench.REFERENCE} 20000": {"win_rate": 0.55, "ci95": [0.54, 0.56],
                                                    "games": 20000}}},
        "ref": {"agent": bench.REFERENCE, "preset": "perudo",
                "lbr": {"payoff": 0.5, "ci95": [0.4, 0.6], "games": 100, "response": "policy"}},
    }  # fmt: skip
    section = bench.strength_markdown(data, ns).split("## What an equilibrium wins")[1]
    assert "| perudo_2x3 | `bayes` | 0.950 | +0.048 | 0.524 | 0.05 |" in section
    words = " ".join(section.split())
    assert "a payoff of +0.100, where LBR takes +0.500 [+0.400, +0.600]: at most 0.25" in words
    ns.margin = None
    page = bench.strength_markdown({}, ns)
    assert "Not measured: no `--margin` file given." in page
    assert "At 5 dice: not measured" in page


def test_the_margin_benchmark_reads_each_agent_once_for_every_player(tmp_path, monkeypatch):
    """``margin --player A B``: both players' exact results against each agent, each
    agent built and read once, each player read once for all the agents; the trembling
    blueprint takes more from ``bold`` than the plain one (perudo 1x4: +0.169 against
    +0.147, docs/blueprint.md)."""
    from helpers import load_script

    monkeypatch.setenv("LIARS_DICE_CACHE", str(tmp_path / "cache"))
    bench = load_script("benchmarks/lbr.py")
    built: list[str] = []
    make = bench.make_agent
    monkeypatch.setattr(
        bench, "make_agent", lambda spec, *a, **k: built.append(spec) or make(spec, *a, **k)
    )
    from liars_env.solver import exploitability

    tables = exploitability.AgentTables
    read: list[str] = []

    def counted(trees, agent, *args, **kwargs):
        read.append(agent.name)
        return tables(trees, agent, *args, **kwargs)

    monkeypatch.setattr(exploitability, "AgentTables", counted)
    out, page = tmp_path / "margin.json", tmp_path / "margin.md"
    players = ["blueprint", "blueprint?tremble=0.05"]
    argv = ["margin", "--games", "perudo_1x4", "--agents", "bold", "cautious"]
    argv += ["--player", *players]
    assert bench.main([*argv, "--out", str(out), "--markdown", str(page)]) == 0
    assert built.count("bold") == built.count("cautious") == 1
    # each agent and each player read once per seat, for both agents' rows
    assert sorted(read) == sorted(2 * ["bold", "cautious", *players])
    rows = {
        row["player"]: row for row in json.loads(out.read_text()).values() if row["agent"] == "bold"
    }
    assert list(rows) == players
    assert rows["blueprint"]["exact"] == rows["blueprint?tremble=0.05"]["exact"]
    assert rows["blueprint?tremble=0.05"]["payoff"] > rows["blueprint"]["payoff"] + 0.01
    text = page.read_text()
    assert "`blueprint`'s payoff" in text and "`blueprint?tremble=0.05`'s payoff" in text
