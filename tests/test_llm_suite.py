"""A tiny run of benchmarks/llm_suite.py against the local bot server (no outside service)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers import load_script

pytest.importorskip("openai")

from liars_env.play.bot_server import BotServer  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]


def load_suite():
    return load_script("benchmarks/llm_suite.py")


def test_the_suite_runs_resumes_for_free_and_guards_its_budget(tmp_path, capsys):
    suite = load_suite()
    out = tmp_path / "suite"
    with BotServer() as server:
        model = f"llm:cautious?base_url={server.base_url}&concurrency=4"
        argv = [
            "--model",
            model,
            "--out",
            str(out),
            "--players",
            "2",
            "--rule",
            "dice_per_player=1",
        ]
        argv += ["--games", "2", "--bots", "cautious", "--exploit-faces", "3"]
        assert suite.main([*argv, "--dry-run"]) == 0
        assert not server.requests  # a dry run calls nothing
        assert "budget llm:cautious" in capsys.readouterr().out
        assert suite.main([*argv, "--max-calls", "10"]) == 4  # stops when they are spent
        assert len(server.requests) == 1 + 10  # the preflight's, then the budget's
        assert suite.main(argv) == 0
        paid = len(server.requests)
        assert suite.main(argv) == 0  # a rerun: everything from the cache
        assert len(server.requests) == paid
    printed = capsys.readouterr().out
    result = json.loads((out / "suite.json").read_text())
    (row,) = result["ladder"]
    assert row["bot"] == "cautious" and row["usage"]["fallbacks"] == 0
    assert row["usage"]["cached"] == row["usage"]["decisions"]  # the second run's
    (solved,) = result["exploitability"]
    text = solved["exploit"][result["model"]]["exploitability"]
    assert text == pytest.approx(solved["exploit"]["cautious"]["exploitability"], abs=1e-12)
    assert "| perudo 1x3 |" in printed and "llm:cautious" in printed
    assert sorted(p.name for p in (out / "games" / "cautious").iterdir())[:1] == [
        "game_000000.jsonl"
    ]
