"""A tiny run of benchmarks/search.py's ``oracle``: the search sampling and seeing the dice."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def load_bench():
    spec = importlib.util.spec_from_file_location("search_bench", ROOT / "benchmarks" / "search.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_oracle_run_measures_the_search_sampling_and_seeing_the_hands(tmp_path, capsys):
    out = tmp_path / "oracle.json"
    argv = ["oracle", "--players", "2", "--opponent", "random", "--games", "4"]
    assert load_bench().main([*argv, "--settings", "samples=4", "--out", str(out)]) == 0
    rows = json.loads(out.read_text())
    assert [(r["oracle"], r["games"]) for r in rows] == [(False, 4), (True, 4)]
    assert rows[0]["spec"] == "search:checkpoint:checkpoints/perudo_2p?samples=4"
    # seats rotate; a search that sees every die never loses to random play
    assert rows[1]["win_rate"] == 1.0
    for row in rows:
        lo, hi = row["ci95"]
        assert 0 <= lo <= row["win_rate"] <= hi <= 1
    table = capsys.readouterr().out
    assert "| sees the hidden dice | 4 | 1.000" in table
