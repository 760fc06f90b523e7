"""Tiny runs of benchmarks/search.py: ``oracle`` (sampling and seeing the dice), ``types``."""

from __future__ import annotations

import json
from pathlib import Path

from helpers import load_script

ROOT = Path(__file__).resolve().parents[1]


def load_bench():
    return load_script("benchmarks/search.py", "search_bench")


def test_oracle_run_measures_the_search_sampling_and_seeing_the_hands(tmp_path, capsys):
    out = tmp_path / "oracle.json"
    argv = ["oracle", "--players", "2", "--opponent", "belief", "--games", "6"]
    settings = "samples=16,prior=0.5,temperature=0.02,belief=policy"
    assert load_bench().main([*argv, "--settings", settings, "--out", str(out)]) == 0
    rows = json.loads(out.read_text())
    assert [(r["oracle"], r["games"]) for r in rows] == [(False, 6), (True, 6)]
    assert rows[0]["spec"] == f"search:checkpoint:checkpoints/perudo_2p?{settings}"
    # the same deals (seats rotate): seeing the dice, the greedy search wins every game;
    # sampling them as if belief bid like the base, it loses some (the benchmark's point)
    sampling, seeing = rows[0]["win_rate"], rows[1]["win_rate"]
    assert seeing == 1.0 and sampling < seeing
    for row in rows:
        lo, hi = row["ci95"]
        assert 0 <= lo <= row["win_rate"] <= hi <= 1
    table = capsys.readouterr().out
    assert "| sees the hidden dice | 6 | 1.000" in table


def test_types_run_reads_who_is_bidding(tmp_path, capsys):
    out = tmp_path / "types.json"
    argv = ["types", "--opponent", "checkpoint:checkpoints/perudo_2p", "--games", "2"]
    assert load_bench().main([*argv, "--out", str(out)]) == 0
    rows = json.loads(out.read_text())
    assert [r["bids"] for r in rows] == sorted({r["bids"] for r in rows}) and rows[0]["bids"] == 1
    for r in rows:
        assert r["decisions"] > 0 and 0 <= r["above_half"] <= 1
    # the opponent is the base itself: once it has bid twice, the base is the likelier
    assert all(r["median"] > 0.5 for r in rows if r["bids"] >= 2)
    assert "| bids of `checkpoint:checkpoints/perudo_2p` this round |" in capsys.readouterr().out


def test_exploit_run_tables_every_game_base_and_setting(tmp_path, capsys):
    out = tmp_path / "exploit.json"
    argv = ["exploit", "--games", "perudo_1x3", "perudo_calza_1x3", "--bases", "probabilistic"]
    argv += ["--settings", "method=resolve", "method=resolve,values=base", "--latency-games", "2"]
    assert load_bench().main([*argv, "--out", str(out)]) == 0
    rows = json.loads(out.read_text())
    specs = ["probabilistic", "search:probabilistic?method=resolve"]
    specs.append("search:probabilistic?method=resolve,values=base")
    assert [(r["game"], r["spec"]) for r in rows] == [
        (g, s) for g in ("perudo_1x3", "perudo_calza_1x3") for s in specs
    ]
    by = {(r["game"], r["spec"]): r for r in rows}
    # re-solving is far below its base on both; on the one-round game the later rounds'
    # values change nothing, with calza they do (the base's values are worse)
    for game in ("perudo_1x3", "perudo_calza_1x3"):
        assert by[game, specs[1]]["exploitability"] < by[game, specs[0]]["exploitability"] / 5
        assert by[game, specs[1]]["decisions"] > 0 and by[game, specs[1]]["median_s"] > 0
    one = by["perudo_1x3", specs[1]]["exploitability"]
    assert by["perudo_1x3", specs[2]]["exploitability"] == one
    calza = by["perudo_calza_1x3", specs[1]]["exploitability"]
    assert by["perudo_calza_1x3", specs[2]]["exploitability"] > 2 * calza
    assert "| perudo_calza_1x3 | `search:probabilistic?method=resolve` |" in capsys.readouterr().out
