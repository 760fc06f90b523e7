"""The evaluation harness: intervals, seat rotation, determinism, CLI outputs, errors."""

from __future__ import annotations

import json
from collections import Counter

import pytest

from liars_env import RuleSet
from liars_train.evaluation.tournament import (
    evaluate,
    main,
    seat_assignment,
    summarize,
    wilson_interval,
)


@pytest.mark.parametrize(
    "wins, games, lo, hi",
    [
        (50, 100, 0.4038, 0.5962),  # textbook values
        (0, 10, 0.0, 0.2775),
        (10, 10, 0.7225, 1.0),
        (1, 3, 0.0615, 0.7923),
    ],
)
def test_wilson_interval(wins, games, lo, hi):
    got = wilson_interval(wins, games)
    assert got == pytest.approx((lo, hi), abs=1e-4)
    p = wins / games
    assert got[0] <= p <= got[1]


def test_wilson_interval_narrows_with_more_games():
    widths = [wilson_interval(n // 3, n) for n in (30, 300, 3000)]
    assert all(b[1] - b[0] < a[1] - a[0] for a, b in zip(widths, widths[1:], strict=False))


@pytest.mark.parametrize("players", [2, 3, 4, 6])
def test_seat_rotation_is_balanced(players):
    counts = Counter()
    orders = set()
    for g in range(players * 20):
        seats = seat_assignment(g, players, seed=3)
        assert sorted(seats) == list(range(players))
        counts.update((seat, agent) for seat, agent in enumerate(seats))
        orders.add(tuple(seats[i] for i in range(players)))
    assert set(counts.values()) == {20}  # every agent in every seat equally often
    if players > 2:
        assert len(orders) > players  # not only rotations of one order


def test_same_seed_same_results_any_worker_count():
    kwargs = dict(agents=["bold", "random"], games=24, seed=4, progress=False, num_players=2)
    one = evaluate("perudo", workers=1, **kwargs).to_json()
    two = evaluate("perudo", workers=2, **kwargs).to_json()
    for result in (one, two):
        result.pop("seconds")
    assert one == two
    other = evaluate("perudo", workers=1, **{**kwargs, "seed": 5}).to_json()
    assert other["agents"] != one["agents"] or other["decisions"] != one["decisions"]


def test_games_round_up_to_a_multiple_of_players_and_stats_add_up():
    result = evaluate("perudo", ["probabilistic", "random", "random"], games=10, progress=False)
    assert result.games == 12
    assert sum(a.wins for a in result.agents) == 12
    assert [a.name for a in result.agents] == ["probabilistic", "random", "random#2"]
    assert sum(a.mean_place for a in result.agents) == pytest.approx(6.0)
    h2h = result.head_to_head
    assert h2h[0][1] + h2h[1][0] == pytest.approx(1.0) and h2h[0][0] is None


def test_summarize_ratings_and_places():
    rules = RuleSet.preset("perudo")
    records = [(g, [1, 2, 3], 10) for g in range(30)]
    result = summarize(rules, ["a", "b", "c"], records, seed=0)
    assert [a.wins for a in result.agents] == [30, 0, 0]
    assert result.agents[0].rating > result.agents[1].rating > result.agents[2].rating
    assert result.head_to_head[1][2] == 1.0 and result.decisions == 300


def test_cli_writes_json_and_png(tmp_path, capsys):
    out = tmp_path / "res" / "results.json"
    code = main(
        [
            "--rules",
            "sanford",
            "--agents",
            "probabilistic",
            "random",
            "random",
            "--games",
            "6",
            "--seed",
            "0",
            "--out",
            str(out),
            "--workers",
            "1",
            "--no-progress",
        ]
    )
    assert code == 0
    data = json.loads(out.read_text())
    assert data["games"] == 6 and data["num_players"] == 3
    entry = data["agents"][0]
    assert set(entry) >= {"name", "games", "wins", "win_rate", "ci95", "mean_place", "rating"}
    assert entry["ci95"][0] <= entry["win_rate"] <= entry["ci95"][1]
    png = out.with_suffix(".png")
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "win rate" in capsys.readouterr().out


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--rules", "peruda", "--agents", "random", "random"], "unknown preset 'peruda'"),
        (["--agents", "random", "randomm"], "unknown agent spec 'randomm'"),
        (["--players", "3", "--agents", "random", "random"], "need one agent spec per seat"),
        (["--agents", "random", "random", "--games", "0"], "games must be a positive int"),
        (["--agents", "random", "random", "--rule", "faces=12"], "RuleSet.faces must be"),
        (["--agents", "random", "random", "--rule", "faces"], "must look like key=value"),
        (
            ["--agents", "random", "random", "--rule", "num_players=4"],
            "--rule num_players=4: the table size is set by --players",
        ),
    ],
)
def test_cli_bad_input_is_a_clear_error(argv, message, capsys):
    assert main([*argv, "--no-progress", "--workers", "1"]) == 2
    assert message in capsys.readouterr().err.replace("\n", "")


def test_cli_plays_the_jokers_preset_and_refuses_jokers_on_the_highest_face(tmp_path, capsys):
    out = tmp_path / "jokers.json"
    argv = ["--rules", "jokers", "--players", "2", "--agents", "belief", "random"]
    code = main([*argv, "--games", "4", "--seed", "0", "--out", str(out), "--no-progress"])
    assert code == 0
    assert json.loads(out.read_text())["rules"]["ones"] == "jokers"
    bad = [*argv, "--rule", "wild_face=highest", "--no-progress", "--workers", "1"]
    capsys.readouterr()
    assert main(bad) == 2
    assert "needs wild_face='one'" in " ".join(capsys.readouterr().err.split())
