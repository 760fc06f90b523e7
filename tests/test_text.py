"""The text protocol: prompts, the reader of replies, and the llm: agent against a local server."""

from __future__ import annotations

import importlib.util
import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from liars_env import LiarsDiceGame, ObservationLayout, RuleSet
from liars_env.agents import make_agent
from liars_env.observation import view_of
from liars_env.play.bot_server import BotServer
from liars_env.rules import PRESET_PLAYERS, PRESETS
from liars_env.text import MoveError, move_text, prompt_text, read_move
from liars_env.text.parse import rules_from_text, view_from_text
from liars_env.text.view import rules_text

needs_openai = pytest.mark.skipif(
    importlib.util.find_spec("openai") is None,
    reason="the llm: agent needs openai: pip install -e '.[llm]'",
)


def _rules(name: str, players: int | None = None) -> RuleSet:
    lo, _ = PRESET_PLAYERS.get(name, (3, 8))
    return RuleSet.preset(name, num_players=players or lo)


def _positions(rules: RuleSet, games: int = 2, seed: int = 0):
    """(game, state, view) at every decision of a few random games."""
    game, layout = LiarsDiceGame(rules), ObservationLayout(rules)
    rng = np.random.default_rng(seed)
    for _ in range(games):
        state = game.new_game(rng)
        while not state.is_over:
            view = view_of(game, layout, state)
            yield game, state, view
            legal = view.legal_actions
            # mostly raise a little, sometimes call: long enough rounds, many rounds
            calls = legal[legal >= game.codec.num_bids]
            action = (
                calls[0]
                if len(calls) and rng.random() < 0.3
                else legal[rng.integers(min(3, len(legal)))]
            )
            game.apply(state, int(action), rng)


@pytest.mark.parametrize("preset", sorted(PRESETS))
def test_every_legal_action_reads_back_to_itself(preset):
    rules = _rules(preset)
    seen = 0
    for _, _, view in _positions(rules, games=1):
        for action in view.legal_actions:
            assert read_move(move_text(view.codec, int(action)), view) == action
            seen += 1
    assert seen > 20


@pytest.mark.parametrize("preset", sorted(PRESETS))
def test_prompt_reads_back_to_the_view(preset):
    rules = _rules(preset)
    assert rules_from_text(rules_text(rules)).to_dict() == rules.to_dict() or preset in ()
    for _, _, view in _positions(rules, games=1, seed=3):
        back = view_from_text(prompt_text(view))
        assert (back.seat, back.dice, back.dice_left, back.bids, back.opener, back.palifico) == (
            view.seat,
            tuple(sorted(view.dice)),
            view.dice_left,
            view.bids,
            view.opener,
            view.palifico,
        )
        assert (back.mask == view.mask).all()


@pytest.mark.parametrize("preset", ["perudo", "sanford", "individual_hand", "common_hand_spot_on"])
def test_view_never_shows_other_seats_unrevealed_dice(preset):
    """The prompt is the same whatever the other seats hold this round (only its own dice
    and the last round's reveal, which every player saw)."""
    rules = _rules(preset, 4 if not preset.startswith("sanford") else 3)
    rng = np.random.default_rng(9)
    for game, state, view in _positions(rules, games=1, seed=5):
        text = prompt_text(view)
        other = state.clone()
        for seat, hand in enumerate(other.dice):
            if seat != view.seat:
                other.dice[seat] = rng.integers(1, rules.faces + 1, size=len(hand)).tolist()
        assert prompt_text(view_of(game, ObservationLayout(rules), other, view.seat)) == text
        own = " ".join(map(str, sorted(state.dice[view.seat])))
        assert re.findall(r"^Your dice: (.*)$", text, re.M) == [own]
        reveal = state.last_reveal
        if reveal is not None:  # the reveal line shows the hands counted at the last call
            for seat, hand in reveal["shown"]:
                assert f"player {seat}: {' '.join(map(str, sorted(hand)))}" in text


@pytest.fixture(scope="module")
def perudo_view():
    rules = RuleSet.preset("perudo_calza", num_players=3)
    game, layout = LiarsDiceGame(rules), ObservationLayout(rules)
    rng = np.random.default_rng(0)
    state = game.new_game(
        rng, dice=[[1, 2, 3, 4, 6], [1, 2, 2, 5, 6], [2, 3, 4, 5, 6]], first_player=0
    )
    game.apply(state, game.codec.encode_bid(4, 2), rng)
    return view_of(game, layout, state)


@pytest.mark.parametrize(
    "reply, move",
    [
        ("5x2", (5, 2)),
        ("[Bid: 5, 3]", (5, 3)),
        ("bid 5 3", (5, 3)),
        ("Bid: 6, 4", (6, 4)),
        ("5 threes", (5, 3)),
        ("five 3s", (5, 3)),
        ("4 × 3", (4, 3)),
        ("I think so.\nFinal answer: 4x5", (4, 5)),
        ("Reasoning... 3x4 is low.\n**Final Answer:** [Bid: 7, 6]", (7, 6)),
        ("Let me see.\nFinal answer: I bid 2x1.", (2, 1)),
        ("Thinking about it\n[Bid: 4, 4]\nthat is my move", (4, 4)),
        ("call", "call"),
        ("Liar!", "call"),
        ("DUDO", "call"),
        ("[Call]", "call"),
        ("Final answer: call", "call"),
        ("exact", "exact"),
        ("Calza", "exact"),
        ("spot on", "exact"),
    ],
)
def test_reader_accepts_the_common_forms(perudo_view, reply, move):
    codec = perudo_view.codec
    expected = (
        {"call": codec.challenge, "exact": codec.exact}.get(move)
        if isinstance(move, str)
        else codec.encode_bid(*move)
    )
    assert read_move(reply, perudo_view) == expected


@pytest.mark.parametrize(
    "reply, why",
    [
        ("", "empty"),
        ("hello there", "no move found"),
        ("3x2", "is not legal now: the last bid is 4x2; raise"),
        ("1x1", "conversion to ones needs at least ceil(4/2) = 2"),
        ("Final answer: maybe later", "the final answer 'maybe later' is not a move"),
        ("99x3", "quantities run from 1 to 15"),
    ],
)
def test_bad_replies_say_why_and_list_the_legal_moves(perudo_view, reply, why):
    with pytest.raises(MoveError) as info:
        read_move(reply, perudo_view)
    assert why in str(info.value)
    assert "Legal moves: call; exact; bids 5x2 to 15x2, 4x3 to 15x3" in str(info.value)


@settings(max_examples=300, deadline=None)
@given(
    st.text(max_size=300)
    | st.from_regex(r"(?i)(final answer: )?\[?(bid:? )?\d{1,4}[ ,x×]\d{1,3}\]?", fullmatch=True)
)
def test_fuzzed_replies_never_crash_the_reader(perudo_view, reply):
    try:
        action = read_move(reply, perudo_view)
    except MoveError as exc:
        assert "Legal moves:" in str(exc)
    else:
        assert perudo_view.mask[action]


# ----------------------------------------------------------------- the llm: agent, over HTTP
def _play_through_server(
    rules: RuleSet, bot: str, llm_seats, seed: int, server: BotServer, **settings
):
    """Plays one game, ``llm_seats`` through the server, the rest in-process; checks moves."""
    query = "&".join([f"base_url={server.base_url}", *(f"{k}={v}" for k, v in settings.items())])
    agent = make_agent(f"llm:{bot}?{query}", rules)
    reference = make_agent(bot, rules, seed=0)  # the server's twin: same spec, same seed
    others = make_agent(bot, rules, seed=1)
    game, layout = LiarsDiceGame(rules), ObservationLayout(rules)
    rng = np.random.default_rng(seed)
    state = game.new_game(rng)
    asked = 0
    while not state.is_over:
        view = view_of(game, layout, state)
        if state.current_player in llm_seats:
            action = agent.act(view)
            assert action == reference.act(view)
            asked += 1
        else:
            action = others.act(view)
        game.apply(state, action, rng)
    return agent, asked


@needs_openai
@pytest.mark.parametrize(
    "preset, players, bot, style",
    [
        ("perudo", 2, "belief", "final"),
        ("perudo_calza", 3, "cautious", "textarena"),
        ("perudo_palifico", 4, "belief", "canonical"),
        ("sanford_wild", 5, "cautious", "final"),
        ("common_hand_spot_on", 3, "cautious", "final"),
    ],
)
def test_games_through_the_http_agent_play_exactly_the_bots_moves(preset, players, bot, style):
    rules = RuleSet.preset(preset, num_players=players, dice_per_player=2)
    with BotServer(style=style) as server:
        agent, asked = _play_through_server(rules, bot, {0, players - 1}, 11, server)
    assert asked > 0 and agent.usage["fallbacks"] == 0 and agent.usage["requests"] == asked


def _one_decision(server: BotServer, **settings):
    rules = RuleSet.preset("perudo", num_players=3)
    game, layout = LiarsDiceGame(rules), ObservationLayout(rules)
    rng = np.random.default_rng(2)
    state = game.new_game(rng, first_player=1)
    game.apply(state, game.codec.encode_bid(3, 4), rng)
    view = view_of(game, layout, state)
    query = "&".join([f"base_url={server.base_url}", *(f"{k}={v}" for k, v in settings.items())])
    agent = make_agent(f"llm:belief?{query}", rules)
    return agent, view, agent.act(view), agent.take_transcript()


@needs_openai
@pytest.mark.parametrize(
    "mode, bad, settings, fallback, message",
    [
        (
            "junk",
            None,
            {"retries": 1},
            True,
            "no move found in the reply 'I would rather not say.'",
        ),
        ("illegal", None, {"retries": 2}, True, "is not legal now"),
        ("illegal_once", None, {"retries": 1}, False, "is not legal now"),
        (
            "slow",
            None,
            {"timeout": 0.2, "backoff": 1, "backoff_base": 0.01},
            True,
            "APITimeoutError",
        ),
        ("429", 2, {"backoff": 3, "backoff_base": 0.01}, False, None),
        ("500", 2, {"backoff": 3, "backoff_base": 0.01}, False, None),
        ("429", None, {"backoff": 2, "backoff_base": 0.01}, True, "HTTP 429"),
        ("500", None, {"backoff": 1, "backoff_base": 0.01}, True, "HTTP 500"),
        ("truncated", None, {"backoff": 1, "backoff_base": 0.01}, True, "request failed"),
        ("truncated", 1, {"backoff": 1, "backoff_base": 0.01}, False, None),
        ("drop", None, {"backoff": 1, "backoff_base": 0.01}, True, "APIConnectionError"),
        ("drop", 1, {"backoff": 2, "backoff_base": 0.01}, False, None),
    ],
)
def test_misbehaving_servers_get_the_documented_behaviour(mode, bad, settings, fallback, message):
    with BotServer(mode=mode, bad_requests=bad, delay=1.0) as server:
        agent, view, action, records = _one_decision(server, **settings)
        proper = [a for _, a in server.answered]
    assert view.mask[action]
    assert (agent.usage["fallbacks"] == 1) is fallback
    if fallback:
        assert action == view.codec.challenge  # the documented fallback: call the bid
        assert records[-1]["fallback"] == "call" and "Legal moves:" in records[-1]["legal"]
    else:
        assert action == proper[-1]
        assert records[-1]["move"] == move_text(view.codec, action)
    if message is not None:
        assert any(message in r.get("error", "") for r in records), records
    assert all("api_key" not in str(r).lower() for r in records)


@needs_openai
@pytest.mark.parametrize("mode", ["ok", "illegal", "junk", "429", "truncated", "drop"])
def test_liars_eval_records_the_words_and_counts_fallbacks(tmp_path, mode, capsys):
    from liars_env.play.recording import load_replay
    from liars_env.play.web.session import replay_json
    from liars_train.evaluation.tournament import evaluate

    rules = RuleSet.preset("perudo", num_players=2, dice_per_player=2)
    with BotServer(mode=mode) as server:
        spec = f"llm:cautious?base_url={server.base_url}&retries=1&backoff=1&backoff_base=0.01"
        result = evaluate(rules, [spec, "cautious"], games=2, progress=False, record=tmp_path)
    usage = result.agents[0].text_usage
    assert result.agents[1].text_usage is None
    assert usage["decisions"] > 0
    assert (usage["fallbacks"] == 0) is (mode == "ok")
    if mode != "ok":
        assert usage["fallbacks"] == usage["decisions"] and usage["fallback_rate"] == 1.0
    assert "fallbacks" in str([c.header for c in result.table().columns])
    files = sorted(tmp_path.glob("game_*.jsonl"))
    assert len(files) == 2
    moves = 0
    for path in files:
        replay = load_replay(path)  # whole: verified against the engine
        data = replay_json(replay)
        for frame in replay.frames[1:]:
            seat_spec = replay.header["seats"][frame.line["seat"]]["spec"]
            calls = frame.line.get("calls")
            assert (calls is not None) is (seat_spec == spec)
            if calls:
                moves += 1
                assert calls[0]["prompt"].startswith("Rules:")
                if mode == "ok":
                    assert calls[-1]["move"] == move_text(replay.game.codec, frame.line["action"])
                else:
                    assert calls[-1]["fallback"] == move_text(
                        replay.game.codec, frame.line["action"]
                    )
        assert any(f["event"] and f["event"]["calls"] for f in data["frames"])
    assert moves == usage["decisions"]
    from liars_env.play.web.replay import main as replay_main

    assert replay_main(["--check", str(files[0])]) == 0
    summary = capsys.readouterr().out
    fallbacks = "0 fallbacks" if mode == "ok" else "fallbacks"
    assert re.search(rf"seat \d \(llm:cautious\): \d+ moves, \d+ requests .*{fallbacks}", summary)


# ----------------------------------------------------------------- exploitability, through text
@needs_openai
def test_liars_solve_exploit_through_the_text_path_equals_the_bots_own(tmp_path, capsys):
    import json

    from liars_train.tools.solve import main

    with BotServer() as server:
        spec = f"llm:cautious?base_url={server.base_url}&concurrency=4"
        out = tmp_path / "solve.json"
        argv = ["--rules", "perudo", "--rule", "dice_per_player=1", "--rule", "faces=3"]
        assert main([*argv, "--exploit", spec, "cautious", "--out", str(out)]) == 0
        requests = len(server.requests)
    printed = capsys.readouterr().err
    result = json.loads(out.read_text())
    budget = result["budget"][spec]
    assert f"{budget['information_sets']} information sets x 1 samples" in printed
    assert (
        f"{budget['information_sets']}/{budget['information_sets']} information sets asked"
        in printed
    )
    # one preflight request, then one request per information set
    assert budget["first_asks"] == requests - 1 == result["exploit"][spec]["queries"]
    assert budget["calls"] == 3 * budget["first_asks"]  # at most 1 + retries each
    text, bot = result["exploit"][spec], result["exploit"]["cautious"]
    assert text["exploitability"] == pytest.approx(bot["exploitability"], abs=1e-12)
    assert text["best_response"] == pytest.approx(bot["best_response"], abs=1e-12)
    assert text["sampled"]["std_error"] == 0.0 and text["sampled"]["usage"]["fallbacks"] == 0


def test_sampled_exploitability_brackets_the_exact_value():
    from liars_env.solver import exploit, exploit_sampled

    rules = RuleSet.preset("perudo", num_players=2, dice_per_player=1, faces=3)
    bot = make_agent("bold", rules, seed=3)  # bluffs: a stochastic policy
    exact = exploit(bot, rules).exploitability
    result = exploit_sampled(bot, rules, samples=40, bootstrap=30, seed=1)
    assert result.calls == 40 * result.information_sets
    assert result.std_error > 0
    assert abs(result.exploitability - exact) < 4 * result.std_error + 0.02
    assert result.interval[0] <= result.exploitability + 1e-9


@needs_openai
@pytest.mark.slow
@pytest.mark.parametrize("bot", ["cautious", "belief"])
def test_text_path_exploitability_on_perudo_1x4(bot):
    from liars_env.solver import exploit, exploit_sampled

    rules = RuleSet.preset("perudo", num_players=2, dice_per_player=1, faces=4)
    with BotServer() as server:
        agent = make_agent(f"llm:{bot}?base_url={server.base_url}&concurrency=8", rules)
        text = exploit_sampled(agent, rules).exploitation
    own = exploit(make_agent(bot, rules, seed=0), rules)
    assert text.exploitability == pytest.approx(own.exploitability, abs=1e-12)


# ----------------------------------------------------------------- settings, secrets, cache
@needs_openai
@pytest.mark.parametrize(
    "spec, message",
    [
        ("llm:", "names no model"),
        ("llm:m?temperature=hot", "temperature='hot' is not a number"),
        ("llm:m?retries=-1", "retries='-1' must lie in [0, 100]"),
        ("llm:m?colour=red", "unknown setting 'colour'"),
        ("llm:m?timeout", "setting 'timeout' needs a value"),
        ("llm:m?api_key_env=MY-KEY", "api_key_env='MY-KEY' is not an environment variable name"),
        ("llm:m?api_key_env=LIARS_TEST_UNSET_KEY", "LIARS_TEST_UNSET_KEY that should hold"),
        ("llm:m?base_url=http://127.0.0.1:9/v1&system=/no/such/file", "system='/no/such/file'"),
    ],
)
def test_bad_llm_specs_are_clear_errors(spec, message, monkeypatch):
    monkeypatch.delenv("LIARS_TEST_UNSET_KEY", raising=False)
    with pytest.raises(ValueError) as info:
        make_agent(spec, RuleSet.preset("perudo"))
    assert message in str(info.value)


@needs_openai
def test_the_api_key_never_reaches_a_record_a_result_or_an_error(tmp_path, monkeypatch):
    import json

    from liars_train.evaluation.tournament import evaluate

    secret = "sk-test-7f3a9c2e51d4b8"
    monkeypatch.setenv("LIARS_TEST_KEY", secret)
    rules = RuleSet.preset("perudo", num_players=2, dice_per_player=1)
    with BotServer(api_key=secret) as server:
        spec = f"llm:cautious?base_url={server.base_url}&api_key_env=LIARS_TEST_KEY"
        result = evaluate(rules, [spec, "cautious"], games=2, progress=False, record=tmp_path)
        agent = make_agent(spec, rules)
    assert secret not in repr(agent) and secret not in agent.name
    assert secret not in json.dumps(result.to_json())
    assert all(secret not in p.read_text() for p in tmp_path.glob("*.jsonl"))
    monkeypatch.setenv("LIARS_TEST_KEY", "sk-wrong-key-0123456789")
    with BotServer(api_key=secret) as server:
        spec = f"llm:cautious?base_url={server.base_url}&api_key_env=LIARS_TEST_KEY"
        agent = make_agent(spec, rules)
        game, layout = LiarsDiceGame(rules), ObservationLayout(rules)
        view = view_of(game, layout, game.new_game(np.random.default_rng(0)))
        with pytest.raises(Exception) as info:
            agent.act(view)
    assert "refused the request: HTTP 401" in str(info.value)
    assert "sk-wrong-key" not in str(info.value) and "sk-wrong-key" not in repr(info.value)


@needs_openai
def test_the_cache_makes_a_rerun_free_and_resumes_a_longer_one(tmp_path):
    from liars_train.evaluation.tournament import evaluate

    rules = RuleSet.preset("perudo", num_players=2, dice_per_player=2)
    with BotServer(seed=5) as server:
        spec = f"llm:bold?base_url={server.base_url}&temperature=1&cache={tmp_path / 'cache'}"
        first = evaluate(rules, [spec, "cautious"], games=2, progress=False)
        paid = len(server.requests)
        again = evaluate(rules, [spec, "cautious"], games=2, progress=False)
        assert len(server.requests) == paid  # nothing paid twice
        longer = evaluate(rules, [spec, "cautious"], games=4, progress=False)
    assert again.agents[0].text_usage["cached"] == again.agents[0].text_usage["decisions"]
    assert again.to_json()["agents"][0]["wins"] == first.to_json()["agents"][0]["wins"]
    usage = longer.agents[0].text_usage
    assert usage["requests"] == len(server.requests) - paid > 0  # only the new games paid
    assert usage["cached"] >= first.agents[0].text_usage["decisions"]
    assert not list((tmp_path / "cache").rglob(".tmp-*"))  # written through renames


@needs_openai
def test_the_ladder_plays_an_llm_agent_on_the_batched_table():
    pytest.importorskip("torch")
    from liars_train.evaluation.ladder import cross_table

    rules = RuleSet.preset("perudo", num_players=2, dice_per_player=2)
    with BotServer() as server:
        spec = f"llm:cautious?base_url={server.base_url}&concurrency=8"
        table = cross_table(rules, ["cautious"], games=8, seed=0, rows=[spec])
        prompts = [p for p, _ in server.answered]
    cell = table[spec]["cautious"]
    assert cell["games"] >= 8
    # the same bot on both sides: the text path plays it as well as the bot itself
    assert 0.0 < cell["win_rate"] < 1.0
    assert prompts and all("Last round: not recorded at this table." in p for p in prompts)


def test_the_prompt_on_the_docs_page_is_what_the_code_writes():
    from pathlib import Path

    page = (Path(__file__).resolve().parents[1] / "docs" / "llm.md").read_text()
    shown = page.split("<!-- prompt example")[1].split("```text\n")[1].split("```")[0]
    rules = RuleSet.preset("perudo_calza", num_players=3)
    game = LiarsDiceGame(rules)
    rng = np.random.default_rng(7)
    dice = [[1, 2, 3, 4, 6], [1, 2, 2, 5, 6], [2, 3, 4, 5, 6]]
    state = game.new_game(rng, dice=dice, first_player=0)
    for bid in [(4, 2), (7, 2)]:
        game.apply(state, game.codec.encode_bid(*bid), rng)
    game.apply(state, game.codec.challenge, rng)
    game.apply(state, game.codec.encode_bid(3, 5), rng)
    assert shown == prompt_text(view_of(game, ObservationLayout(rules), state)) + "\n"


@needs_openai
def test_openai_s_key_is_not_sent_to_another_endpoint(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-openai-only-31415")
    with BotServer() as server:
        agent, view, action, _ = _one_decision(server)
        sent = list(server.authorizations)
    assert sent == ["Bearer none"] and view.mask[action]
    monkeypatch.delenv("OPENAI_API_KEY")
    with pytest.raises(ValueError, match="OPENAI_API_KEY that should hold the API key"):
        make_agent("llm:gpt-4o-mini", RuleSet.preset("perudo"))


# --------------------------------------------------------------------------- jokers
def _jokers_view(bids):
    rules = RuleSet.preset("jokers", num_players=2)
    game, layout = LiarsDiceGame(rules), ObservationLayout(rules)
    rng = np.random.default_rng(0)
    state = game.new_game(rng, dice=[[1, 5, 5, 2, 3], [1, 3, 4, 6, 6]], first_player=0)
    for quantity, face in bids:
        game.apply(state, game.codec.encode_bid(quantity, face), rng)
    return view_of(game, layout, state)


def test_jokers_prompt_names_the_rule_and_reads_back_as_jokers():
    rules = RuleSet.preset("jokers", num_players=2)
    text = rules_text(rules)
    assert "1s are jokers" in text and "a bid on 1s counts only 1s" in text
    # wild_biddable with face 1 wild plays the same bids; the text still tells them apart
    assert rules_from_text(text) == rules
    assert rules_text(rules.with_options(ones="wild_biddable")) != text


@pytest.mark.parametrize(
    "bids, reply, expected",
    [
        ([], "one 1", (1, 1)),  # the lowest opening bid
        ([], "[Bid: 2, 1]", (2, 1)),
        ([(3, 6)], "four ones", (4, 1)),
        ([(3, 1)], "3x2", (3, 2)),
    ],
)
def test_jokers_replies_on_ones_read_as_bids(bids, reply, expected):
    view = _jokers_view(bids)
    assert view.codec.decode_bid(read_move(reply, view)) == expected


@pytest.mark.parametrize(
    "bids, reply, reason",
    [
        ([(3, 6)], "3x1", "raise a higher quantity, or the same quantity with a higher face"),
        ([(3, 1)], "2x6", "raise a higher quantity, or the same quantity with a higher face"),
        ([(3, 1)], "11x1", "quantities run from 1 to 10, got 11"),
    ],
)
def test_jokers_illegal_replies_say_why(bids, reply, reason):
    view = _jokers_view(bids)
    with pytest.raises(MoveError, match=reason):
        read_move(reply, view)


def test_jokers_legal_moves_list_ones_first_as_the_lowest_face():
    from liars_env.text.view import legal_moves_text

    assert legal_moves_text(_jokers_view([])).startswith("Legal moves: bids 1x1 to 10x1, 1x2")
    perudo = RuleSet.preset("perudo", num_players=2)
    game, layout = LiarsDiceGame(perudo), ObservationLayout(perudo)
    state = game.new_game(np.random.default_rng(0))
    game.apply(state, game.codec.encode_bid(2, 2), np.random.default_rng(0))
    assert legal_moves_text(view_of(game, layout, state)).split("bids ")[1].startswith("3x2")
