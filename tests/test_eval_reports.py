"""Numbers an evaluator can publish: preflight, flagged fallbacks, budgets, output in a log.

Every behaviour runs against the project's own test server
(:class:`liars_env.play.bot_server.BotServer`, on 127.0.0.1) in its modes, and the
tables are read through a pipe, as a log file would get them.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("openai")

from liars_env.agents import make_agent  # noqa: E402
from liars_env.agents.llm import (  # noqa: E402
    PreflightError,
    default_timeout,
    parse_llm_spec,
    preflight,
)
from liars_env.agents.text_agent import BudgetExhaustedError, RequestBudget  # noqa: E402
from liars_env.play.bot_server import BotServer  # noqa: E402
from liars_env.rules import RuleSet  # noqa: E402
from liars_train.evaluation.cli import main as eval_main  # noqa: E402
from liars_train.evaluation.formats import format_rate, markdown_table, number  # noqa: E402
from liars_train.tools.solve import main as solve_main  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
FAST = "retries=1&backoff=1&backoff_base=0.01"
SMALL = ["--rules", "perudo", "--rule", "dice_per_player=1", "--no-progress"]
SOLVE = ["--rules", "perudo", "--rule", "dice_per_player=1", "--rule", "faces=3"]
RULES = RuleSet.preset("perudo", num_players=2, dice_per_player=1)


# ----------------------------------------------------------------- fail fast
@pytest.mark.parametrize(
    "mode, cause",
    [
        ("junk", "no legal move can be read"),
        ("illegal", "no legal move can be read"),
        ("echo", "repeats the prompt"),
        ("empty", "an empty reply"),
        ("drop", "unreachable, or the connection dropped"),
        ("500", "HTTP 500"),
        ("truncated", "not a chat completion"),
    ],
)
def test_a_broken_endpoint_fails_the_preflight_in_one_line_with_status_2(mode, cause, capsys):
    with BotServer(mode=mode) as server:
        spec = f"llm:cautious?base_url={server.base_url}&{FAST}"
        code = eval_main([*SMALL, "--agents", spec, "cautious", "--games", "2"])
        sent, url = len(server.requests), server.base_url
    err = capsys.readouterr().err.strip()
    assert code == 2
    assert sent == 1  # one preflight request, and no game
    assert len(err.splitlines()) == 1, err
    assert cause in err and url in err and "llm:cautious" in err


def test_nothing_listening_and_a_wrong_model_are_named(capsys):
    dead = "llm:m?base_url=http://127.0.0.1:9/v1"
    assert eval_main([*SMALL, "--agents", dead, "cautious", "--games", "2"]) == 2
    assert "unreachable" in capsys.readouterr().err
    with BotServer() as server:
        wrong = f"llm:no-such-model?base_url={server.base_url}"
        assert solve_main([*SOLVE, "--exploit", wrong]) == 2
    err = capsys.readouterr().err
    assert "HTTP 400" in err and "model name" in err


def test_a_slow_endpoint_fails_the_preflight_within_its_timeout():
    with BotServer(mode="slow", delay=2.0) as server:
        agent = make_agent(f"llm:cautious?base_url={server.base_url}&timeout=0.3", RULES)
        with pytest.raises(PreflightError, match="no reply within the timeout of 0.3 s"):
            preflight(agent, RULES)


def test_no_preflight_skips_it_and_the_run_is_flagged_instead(capsys, tmp_path):
    with BotServer(mode="junk") as server:
        spec = f"llm:cautious?base_url={server.base_url}&{FAST}"
        argv = [*SMALL, "--agents", spec, "cautious", "--games", "2", "--no-preflight"]
        code = eval_main([*argv, "--out", str(tmp_path / "r.json")])
        allowed = eval_main([*argv, "--allow-fallbacks"])
    captured = capsys.readouterr()
    assert code == 3 and allowed == 0
    assert "measures the fallback" in captured.err and "(!)" in captured.out
    data = json.loads((tmp_path / "r.json").read_text())
    model = data["agents"][0]
    assert model["measures_fallback"] is True and data["agents"][1]["measures_fallback"] is False
    assert model["text_usage"]["fallback_rate"] == 1.0
    assert data["run"]["preflight"] == "skipped (--no-preflight)"


def test_retries_and_long_waits_say_what_they_wait_for(capsys, monkeypatch):
    import liars_env.agents.llm as llm

    with BotServer(mode="500", bad_requests=2) as server:
        agent = make_agent(
            f"llm:cautious?base_url={server.base_url}&backoff=3&backoff_base=0.01", RULES
        )
        agent.act(_view())
    err = capsys.readouterr().err
    assert "HTTP 500" in err and "retry 1 of 3 in 0.0 s" in err and "retry 2 of 3" in err
    monkeypatch.setattr(llm, "WAIT_NOTICE_S", 0.2)
    with BotServer(mode="slow", delay=0.7) as server:
        agent = make_agent(f"llm:cautious?base_url={server.base_url}", RULES)
        agent.act(_view())
        url = server.base_url
    err = capsys.readouterr().err
    assert f"waiting for a reply from {url}" in err and "timeout 158 s" in err


# ----------------------------------------------------------------- what results measure
def test_the_fallback_is_a_setting_and_random_is_seeded_and_legal():
    with BotServer(mode="junk") as server:
        spec = f"llm:cautious?base_url={server.base_url}&retries=0&fallback=random"
        agent = make_agent(spec, RULES)
        view = _view()
        picks = set()
        for seed in range(12):
            agent.reset(seed)
            picks.add(agent.act(view))
        agent.reset(3)
        again = agent.act(view)
        agent.reset(3)
        assert agent.act(view) == again  # seeded by the game and the position
    assert all(view.mask[a] for a in picks) and len(picks) > 1
    assert agent.take_transcript()[-1]["rule"] == "random"
    with pytest.raises(ValueError, match="fallback='best'; expected one of rule, random"):
        parse_llm_spec("llm:m?fallback=best")


def test_liars_solve_flags_an_exploitability_that_measures_the_fallback(capsys, tmp_path):
    with BotServer(mode="junk") as server:
        spec = f"llm:cautious?base_url={server.base_url}&retries=0&concurrency=4"
        out = tmp_path / "s.json"
        code = solve_main([*SOLVE, "--exploit", spec, "--no-preflight", "--out", str(out)])
        allowed = solve_main(
            [*SOLVE, "--exploit", spec, "--no-preflight", "--allow-fallbacks", "--format", "json"]
        )
    captured = capsys.readouterr()
    assert code == 3 and allowed == 0
    assert "(!)" in captured.out and "366/366 (100.0%), 0 failed requests" in captured.out
    assert "is the fallback's, not the agent's" in captured.err
    sampled = json.loads(out.read_text())["exploit"][spec]["sampled"]
    assert sampled["measures_fallback"] and sampled["fallbacks"] == 366
    printed = json.loads(captured.out[captured.out.index("{\n") :])  # --format json: stdout
    assert printed["exploit"][spec]["sampled"]["measures_fallback"] is True


# ----------------------------------------------------------------- budgets
def test_the_request_budget_counts_every_request_and_then_stops():
    budget = RequestBudget(2)
    budget.take("a")
    budget.take("a")
    with pytest.raises(BudgetExhaustedError, match="budget of 2 calls"):
        budget.take("a")
    with pytest.raises(ValueError, match="non-negative int, got -1"):
        RequestBudget(-1)
    with BotServer(mode="junk") as server:  # a re-prompt is a request too
        agent = make_agent(f"llm:cautious?base_url={server.base_url}&retries=2", RULES)
        agent.budget = RequestBudget(2)
        with pytest.raises(BudgetExhaustedError):
            agent.act(_view())
        assert len(server.requests) == 2


def test_liars_eval_max_calls_stops_cleanly_and_resumes_from_the_cache(tmp_path, capsys):
    with BotServer() as server:
        spec = f"llm:cautious?base_url={server.base_url}&cache={tmp_path / 'cache'}"
        argv = [*SMALL, "--agents", spec, "cautious", "--games", "6", "--no-preflight"]
        out = tmp_path / "r.json"
        code = eval_main([*argv, "--max-calls", "5", "--out", str(out)])
        paid = len(server.requests)
        partial = json.loads(out.read_text())
        assert eval_main([*argv, "--out", str(out)]) == 0
        resumed = len(server.requests) - paid
        full = json.loads(out.read_text())
        assert eval_main(argv) == 0
        assert len(server.requests) == paid + resumed  # a rerun costs nothing
    err = capsys.readouterr().err
    assert code == 4 and paid == 5
    assert "stopped after" in err and "Rerun with the same cache=" in err
    assert partial["stopped"] and 0 < partial["games"] < 6 and full["stopped"] is None
    assert (
        full["agents"][0]["text_usage"]["cached"] >= partial["agents"][0]["text_usage"]["decisions"]
    )  # the finished games' replies were not paid for twice


def test_liars_solve_budget_counts_reprompts_and_max_calls_stops(tmp_path, capsys):
    with BotServer() as server:
        cache = tmp_path / "cache"
        spec = f"llm:cautious?base_url={server.base_url}&cache={cache}&concurrency=2"
        out = tmp_path / "s.json"
        code = solve_main([*SOLVE, "--exploit", spec, "--max-calls", "40", "--out", str(out)])
        first = len(server.requests)
        err = capsys.readouterr().err
        assert solve_main([*SOLVE, "--exploit", spec]) == 0
        second = len(server.requests) - first
    assert code == 4 and first == 1 + 40  # the preflight, then the budget
    stopped = json.loads(out.read_text())
    assert "stopped" in stopped and stopped["exploit"][spec]["sampled"]["usage"]["requests"] == 41
    budget = stopped["budget"][spec]
    assert budget["calls"] == budget["first_asks"] * 3 and budget["tokens_source"] == "measured"
    assert f"at most {budget['calls']} calls with 2 re-prompts each" in err
    assert "measured from the server's reported usage" in err
    # resumed: the 40 kept replies cost nothing (nor the preflight's, which is one of the
    # information sets here, and whose rerun came from the cache too)
    assert second == budget["first_asks"] - 41
    with BotServer() as server:
        spec = f"llm:cautious?base_url={server.base_url}"
        solve_main([*SOLVE, "--exploit", spec, "--no-preflight", "--max-calls", "0"])
    assert "an estimate: the server has reported no usage yet" in capsys.readouterr().err


# ----------------------------------------------------------------- defaults that fit
def test_timeout_scales_with_max_tokens_and_concurrency_follows_the_server(capsys):
    assert parse_llm_spec("llm:m")[1].request_timeout == default_timeout(512) == 158.0
    assert parse_llm_spec("llm:m?max_tokens=64")[1].request_timeout == 46.0
    assert parse_llm_spec("llm:m?timeout=9")[1].request_timeout == 9.0
    with BotServer(slots=1) as server:
        agent = make_agent(f"llm:cautious?base_url={server.base_url}", RULES)
        assert agent.concurrency == 1
        assert (
            make_agent(f"llm:cautious?base_url={server.base_url}&concurrency=3", RULES).concurrency
            == 3
        )
        spec = f"llm:cautious?base_url={server.base_url}"
        assert (
            eval_main([*SMALL, "--agents", spec, "cautious", "--games", "2", "--format", "json"])
            == 0
        )
    with BotServer() as server:  # no /props: one worker, and it says why
        spec = f"llm:cautious?base_url={server.base_url}"
        assert make_agent(spec, RULES).concurrency == 4
        assert eval_main([*SMALL, "--agents", spec, "cautious", "--games", "2"]) == 0
    err = capsys.readouterr().err
    assert "workers: 1 (the endpoint does not report" in err


# ----------------------------------------------------------------- output a script reads
def _pipe(args: list[str]) -> subprocess.CompletedProcess:
    env = {**os.environ, "COLUMNS": "40"}
    return subprocess.run(
        [sys.executable, "-m", "liars_train.evaluation.cli", *args],
        capture_output=True,  # stdout is a pipe, not a terminal
        text=True,
        env=env,
        timeout=120,
        cwd=ROOT,
    )


def test_liars_solve_through_a_pipe_keeps_its_table_whole():
    spec = "probabilistic:bluff_rate=0.1,challenge_threshold=0.45"
    done = subprocess.run(
        [sys.executable, "-m", "liars_train.tools.solve", *SOLVE, "--rule", "faces=2"]
        + ["--exploit", spec],
        capture_output=True,
        text=True,
        env={**os.environ, "COLUMNS": "40"},
        timeout=120,
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stderr
    assert "…" not in done.stdout and f"exploit {spec}" in done.stdout


def test_tables_through_a_pipe_keep_every_column_whole():
    with BotServer() as server:
        spec = f"llm:cautious?base_url={server.base_url}&{FAST}"
        done = _pipe([*SMALL, "--agents", spec, "probabilistic", "--games", "2", "--workers", "1"])
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "…" not in out
    for header in ("fallbacks", "failed requests", "requests (cached)", "tokens in/out"):
        assert header in out
    assert "llm:cautious " in out or "llm:cautious│" in out.replace(" ", "")
    assert "/s)" in out or "s per decision)" in out
    assert "(0/s)" not in out


def test_markdown_and_json_formats(capsys):
    argv = [*SMALL, "--agents", "cautious", "probabilistic", "--games", "4", "--workers", "1"]
    assert eval_main([*argv, "--format", "markdown"]) == 0
    out = capsys.readouterr().out
    assert "| agent | games | wins | win rate | 95% CI | mean place | rating |" in out
    assert eval_main([*argv, "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["games"] == 4 and data["run"]["command"].startswith("liars-eval --rules perudo")
    assert data["run"]["versions"]["python"] and "numpy" in data["run"]["versions"]


def test_result_files_carry_the_run_and_never_the_key(tmp_path, monkeypatch, capsys):
    from liars_env.play.recording import load_replay

    secret = "sk-test-do-not-leak-1234"
    monkeypatch.setenv("MY_KEY", secret)
    with BotServer(api_key=secret) as server:
        spec = f"llm:cautious?base_url={server.base_url}&api_key_env=MY_KEY&{FAST}"
        out = tmp_path / "r.json"
        assert eval_main([*SMALL, "--agents", spec, "cautious", "--games", "2", "--seed", "7",
                          "--out", str(out), "--record", str(tmp_path / "games")]) == 0  # fmt: skip
        solved = tmp_path / "s.json"
        assert solve_main([*SOLVE, "--exploit", spec, "--out", str(solved)]) == 0
    for path in (out, solved):
        text = path.read_text()
        assert secret not in text
        run = json.loads(text)["run"]
        assert run["endpoints"][spec]["api_key_env"] == "MY_KEY"
        assert run["endpoints"][spec]["timeout"] == 158.0 and run["versions"]["liars-dice"]
        assert isinstance(run["preflight"], dict) and run["preflight"][spec]["move"]
    assert json.loads(out.read_text())["run"]["seed"] == 7
    assert secret not in capsys.readouterr().err
    game = tmp_path / "games" / "game_000000.jsonl"
    assert secret not in game.read_text()
    header = load_replay(game).header
    assert header["run"]["endpoints"][spec]["model"] == "cautious"
    assert header["run"]["versions"]["python"] and header["agent_seeds"]


def test_numbers_print_without_negative_zeros_and_rates_read_sensibly():
    assert number(-3.47e-18, ".2e") == "0.00e+00"
    assert number(-0.0, "+.6f") == "+0.000000"
    assert number(-1e-9, ".6f") == "0.000000"
    assert number(-0.1234, "+.4f") == "-0.1234"
    assert format_rate(178, 1218.6, "decisions") == "6.85 s per decision"
    assert format_rate(5, 2.0, "decisions") == "2.50 decisions/s"
    assert format_rate(0, 0.0, "decisions") == "no decisions timed"
    assert markdown_table(["a|b"], [["1"]]) == "| a\\|b |\n|---|\n| 1 |"


def test_liars_solve_prints_no_negative_zero(capsys):
    assert solve_main([*SOLVE, "--rule", "faces=2", "--format", "markdown"]) == 0
    out = capsys.readouterr().out
    assert "| exploitability |" in out and "-0.0" not in out and "e-1" not in out


def test_liars_eval_help_names_every_spec_family(capsys):
    with pytest.raises(SystemExit):
        eval_main(["--help"])
    text = " ".join(capsys.readouterr().out.split())
    for family in ("llm:MODEL", "textarena:CLASS", "checkpoint:PATH", "search:SPEC",
                   "solver", "MODULE:ATTR", "belief", "--no-preflight", "--allow-fallbacks",
                   "--max-calls", "--format"):  # fmt: skip
        assert family in text


def _view():
    import numpy as np

    from liars_env.engine import LiarsDiceGame
    from liars_env.observation import ObservationLayout, view_of

    game = LiarsDiceGame(RULES)
    rng = np.random.default_rng(1)
    state = game.new_game(rng, first_player=0)
    game.apply(state, game.codec.encode_bid(1, 3), rng)
    return view_of(game, ObservationLayout(RULES), state)


def test_the_ladder_shows_a_text_agent_s_fallbacks_in_its_cells():
    pytest.importorskip("torch")
    from liars_train.evaluation.ladder import cross_table, markdown

    rules = RuleSet.preset("perudo", num_players=2, dice_per_player=1)
    with BotServer(mode="junk") as server:
        spec = f"llm:cautious?base_url={server.base_url}&retries=0&concurrency=4"
        table = cross_table(rules, ["cautious"], games=4, seed=0, rows=[spec])
    usage = table[spec]["cautious"]["text_usage"][spec]
    assert usage["fallbacks"] == usage["decisions"] > 0 and usage["fallback_rate"] == 1.0
    text = markdown(table, 0.5)
    assert f"llm:cautious: fallbacks {usage['fallbacks']}/{usage['decisions']}" in text
    assert "(!)" in text


def test_the_recorder_moved_and_its_old_path_still_imports():
    import importlib

    import liars_env.play.recording as new

    sys.modules.pop("liars_env.play.web.recording", None)
    with pytest.warns(DeprecationWarning, match="moved to liars_env.play.recording"):
        old = importlib.import_module("liars_env.play.web.recording")
    assert old is new and old.GameRecorder is new.GameRecorder


def test_the_tournament_s_public_names_still_import_from_it():
    from liars_train.evaluation import cli, play, results, tournament

    assert tournament.main is cli.main and tournament.play_games is play.play_games
    assert tournament.EvalResult is results.EvalResult and tournament.summarize is results.summarize
    for module in ("play", "records", "results", "progress", "formats", "provenance", "cli"):
        doc = importlib_module(f"liars_train.evaluation.{module}").__doc__
        assert doc and doc.splitlines()[0].strip()  # each says its job first


def importlib_module(name):
    import importlib

    return importlib.import_module(name)


def test_the_training_bar_shows_one_rate_in_learner_decisions_to_the_total(capsys):
    from liars_train.reports import progress_bar

    bar = progress_bar(True, 999_424, 0)  # tqdm writes on standard error
    bar.set_postfix_str("rollouts vs belief: 0.5", refresh=False)
    bar.update(16_384)
    bar.refresh()
    bar.close()
    line = capsys.readouterr().err.replace("\n", "\r").split("\r")[-2]
    assert "16,384/999,424 learner decisions" in line
    assert line.count("/s") == 1 and "learner decisions/s" in line
    assert "step" not in line and "999k" not in line


@pytest.mark.parametrize(
    "tool, argv, message",
    [
        (eval_main, ["--agents", "random", "random", "--fallback-threshold", "1.5"], "got 1.5"),
        (eval_main, ["--agents", "random", "random", "--max-calls", "-1"], "got -1"),
        (solve_main, [*SOLVE, "--fallback-threshold", "-0.1"], "[0, 1] (a share of decisions)"),
        (solve_main, [*SOLVE, "--max-calls", "-2"], "got -2"),
        (eval_main, ["--agents", "llm:m?fallback=worst", "random"], "fallback='worst'"),
    ],
)
def test_bad_settings_name_the_value_and_what_was_expected(tool, argv, message, capsys):
    assert tool([*argv, "--no-preflight"]) == 2
    assert message in capsys.readouterr().err
