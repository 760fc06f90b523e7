"""benchmarks/train_scaling.py: the quickstart timed to its end, its table side by side."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from helpers import load_script

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def bench():
    sys.path.insert(0, str(ROOT / "benchmarks"))  # its sibling modules (report, ...)
    yield load_script("benchmarks/train_scaling.py", "train_scaling_bench")
    sys.path.remove(str(ROOT / "benchmarks"))


TINY = """\
run_name: tiny
rules: perudo
num_players: 3
total_steps: 2048
num_envs: 64
num_steps: 8
hidden_size: 16
eval_every: 2
eval_games: 8
eval_opponents: [probabilistic, random]
final_eval_games: 30
compare_checkpoint: checkpoints/perudo_3p
"""


def test_the_quickstart_is_trained_to_its_end_and_its_final_table_played(bench, tmp_path):
    config = tmp_path / "tiny.yaml"
    config.write_text(TINY)
    run = bench.quickstart(str(config), workers=0)
    assert run["steps"] == 2048 and run["seconds"] > 0
    # the final table of the new policy alone (the shipped comparison is left out)
    assert {row["agent"] for row in run["rows"]} == {"new policy"}
    assert all(row["games"] >= 30 for row in run["rows"])
    assert {row["bot"] for row in run["rows"]} >= {"probabilistic", "bayes", "belief"}


def test_the_quickstart_table_puts_the_runs_side_by_side(bench, capsys):
    def run(seconds, rate):
        rows = [{"bot": "probabilistic", "win_rate": rate, "ci95": (rate - 0.1, rate + 0.1)}]
        return {"seconds": seconds, "steps": 10, "rows": rows}

    bench.print_quickstart({0: run(200.0, 0.7), 2: run(125.0, 0.72)})
    out = capsys.readouterr().out
    assert "workers 0" in out and "workers 2" in out
    assert "1.60x" in out  # 200 s / 125 s
    assert "0.700 [0.600, 0.800]" in out and "0.720 [0.620, 0.820]" in out


def test_rllib_needs_two_iterations(bench):
    with pytest.raises(ValueError, match="at least 2 iterations, got 1"):
        bench.rllib_rate("configs/rllib_perudo_3p.yaml", 1)
