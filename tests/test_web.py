"""The web table: server API (test client), sessions and expiry, replays, liars-eval --record."""

from __future__ import annotations

import json

import numpy as np
import pytest

from liars_env import LiarsDiceGame, RuleSet
from liars_env.play.recording import GameRecorder, ReplayError, load_replay
from liars_env.play.web.session import ApiError, SessionStore, replay_json

pytest.importorskip("starlette", reason="the web table needs starlette: pip install -e '.[web]'")
try:
    import httpx2  # noqa: F401  (Starlette >= 1.10's test client)
except ImportError:
    pytest.importorskip("httpx", reason="Starlette's TestClient needs httpx2: pip install httpx2")

from starlette.testclient import TestClient  # noqa: E402

from liars_env.play.web.server import create_app  # noqa: E402


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def client():
    app = create_app(SessionStore(ttl=600, max_games=8))
    with TestClient(app) as c:
        yield c


def start(client, **body):
    body = {"rules": "perudo", "players": 3, "specs": ["human", "random", "random"], **body}
    response = client.post("/api/games", json=body)
    assert response.status_code == 201, response.text
    return response.json()


def advance_to_human(client, view):
    """Steps bots until the person is to act or the game is over."""
    while view["waiting_for"] == "bot":
        response = client.post(
            f"/api/games/{view['game_id']}/step", json={"turn": view["table"]["turn"]}
        )
        assert response.status_code == 200, response.text
        view = response.json()
    return view


def test_page_and_static_files_are_served(client):
    page = client.get("/")
    assert page.status_code == 200 and "/static/app.js" in page.text
    for name in ("app.js", "style.css"):
        assert client.get(f"/static/{name}").status_code == 200
    config = client.get("/api/config").json()
    assert "perudo" in config["presets"] and "belief" in config["agents"]


def test_start_game_shows_only_your_dice_and_legal_moves(client):
    view = advance_to_human(client, start(client, seed=5))
    seats = view["table"]["seats"]
    assert view["you"] == 0 and len(seats[0]["dice"]) == 5
    assert seats[1]["dice"] is None and seats[2]["dice"] is None
    legal = view["legal"]
    game = LiarsDiceGame(RuleSet.preset("perudo"))
    ids = [b["id"] for b in legal["bids"]]
    assert ids == sorted(ids) and all(game.codec.is_bid(a) for a in ids)
    if view["table"]["bids"]:
        assert legal["challenge"] == game.codec.challenge
        # Perudo conversions: a bid on ones is offered at ceil(q/2) of the last bid
        last = view["table"]["bids"][-1]
        if last["face"] != 1:
            ones = [b["quantity"] for b in legal["bids"] if b["face"] == 1]
            assert ones and min(ones) == -(-last["quantity"] // 2)
    else:
        assert legal["challenge"] is None
        assert all(b["face"] != 1 for b in legal["bids"])  # no opening bid on ones


def test_illegal_and_stale_actions_are_refused_and_change_nothing(client):
    view = advance_to_human(client, start(client, seed=11))
    gid, turn = view["game_id"], view["table"]["turn"]
    before = client.get(f"/api/games/{gid}").json()
    legal_ids = {b["id"] for b in view["legal"]["bids"]}
    illegal = next(a for a in range(90) if a not in legal_ids)
    response = client.post(f"/api/games/{gid}/act", json={"turn": turn, "action": illegal})
    assert response.status_code == 400
    assert response.json()["error"].startswith("illegal move:")
    response = client.post(
        f"/api/games/{gid}/act", json={"turn": turn - 1, "action": min(legal_ids)}
    )
    assert response.status_code == 409 and "stale move" in response.json()["error"]
    assert response.json()["turn"] == turn
    response = client.post(f"/api/games/{gid}/act", json={"turn": turn, "action": "4 3s"})
    assert response.status_code == 400 and "int action id" in response.json()["error"]
    response = client.post(f"/api/games/{gid}/act", content=b"turn=1", headers={})
    assert response.status_code == 415
    response = client.post(f"/api/games/{gid}/step", json={"turn": turn})
    assert response.status_code == 409 and "your turn" in response.json()["error"]
    assert client.get(f"/api/games/{gid}").json() == before
    # and the legal move at the right turn is accepted
    response = client.post(f"/api/games/{gid}/act", json={"turn": turn, "action": min(legal_ids)})
    assert response.status_code == 200 and response.json()["table"]["turn"] == turn + 1


def test_play_to_the_finish_with_reveals_and_places(client):
    view = start(client, seed=2, specs=["human", "bold", "random"])
    gid = view["game_id"]
    # the seed deals every hand: the person sees it only once the game is over
    assert view["seed"] is None and client.get(f"/api/games/{gid}").json()["seed"] is None
    events = list(view["events"])
    while not view["table"]["over"]:
        view = advance_to_human(client, view)
        events += view["events"]
        if view["table"]["over"]:
            break
        legal = view["legal"]
        action = legal["challenge"] if legal["challenge"] is not None else legal["quick"][0]["id"]
        response = client.post(
            f"/api/games/{gid}/act",
            json={"turn": view["table"]["turn"], "action": action, "since": len(events)},
        )
        assert response.status_code == 200, response.text
        view = response.json()
        events += view["events"]
    # during play the bots' probabilities (which depend on their dice) stay hidden
    assert all(e["probs"] is None for e in events)
    full = client.get(f"/api/games/{gid}?since=0").json()
    assert [e["turn"] for e in full["events"]] == list(range(full["table"]["turn"]))
    reveals = [e["reveal"] for e in full["events"] if e["reveal"]]
    assert reveals and all(r["summary"] for r in reveals)
    for reveal in reveals:
        counted = sum(d["match"] for h in reveal["hands"] for d in h["dice"])
        assert counted == reveal["count"]
        assert all(d["match"] for h in reveal["hands"] for d in h["dice"] if d["wild"])
    places = full["table"]["places"]
    assert sorted(places) == [1, 2, 3] and full["waiting_for"] is None
    assert full["seed"] == "2" and view["seed"] == "2"
    # once over, the bots' probabilities (random's too: uniform) and the recording are there
    assert all((e["probs"] is not None) == (e["seat"] != 0) for e in full["events"])
    record = client.get(f"/api/games/{gid}/record")
    assert record.status_code == 200
    replay = load_replay(record.text.splitlines(keepends=True))
    assert replay.end["places"] == places
    rid = client.post(f"/api/games/{gid}/replay", json={}).json()["replay_id"]
    frames = client.get(f"/api/replays/{rid}").json()["frames"]
    assert len(frames) == full["table"]["turn"] + 1
    assert frames[-1]["table"]["places"] == places


def test_spectator_game_shows_all_dice_and_probabilities(client):
    view = start(client, specs=["probabilistic", "bold", "random"], seed=4)
    assert view["mode"] == "watch" and view["you"] is None and view["seed"] == "4"
    assert all(s["dice"] is not None for s in view["table"]["seats"])
    gid = view["game_id"]
    response = client.post(f"/api/games/{gid}/act", json={"turn": 0, "action": 3})
    assert response.status_code == 409 and "spectator" in response.json()["error"]
    for _ in range(6):
        view = client.post(f"/api/games/{gid}/step", json={"turn": view["table"]["turn"]}).json()
        if view["table"]["over"]:
            break
    probs = [e["probs"] for e in client.get(f"/api/games/{gid}").json()["events"]]
    bots = [e["seat"] for e in client.get(f"/api/games/{gid}").json()["events"]]
    assert any(p for p, seat in zip(probs, bots, strict=True) if seat != 2)


def test_games_are_independent(client):
    a = advance_to_human(client, start(client, seed=3))
    b = advance_to_human(client, start(client, seed=3))
    assert a["game_id"] != b["game_id"]
    assert a["table"] == b["table"]  # same seed, same deal
    assert a["legal"]["quick"], "seed 3: the person can raise"
    action = a["legal"]["quick"][0]["id"]
    client.post(
        f"/api/games/{a['game_id']}/act", json={"turn": a["table"]["turn"], "action": action}
    )
    assert client.get(f"/api/games/{b['game_id']}").json()["table"] == b["table"]
    assert (
        client.get(f"/api/games/{a['game_id']}").json()["table"]["turn"] == a["table"]["turn"] + 1
    )


def test_idle_games_expire_and_the_number_is_bounded():
    clock = FakeClock()
    store = SessionStore(ttl=0.5, max_games=2, clock=clock)
    with TestClient(create_app(store)) as client:
        a = start(client)
        clock.now += 0.4
        b = start(client)
        clock.now += 0.2  # a idle 0.6 s, b 0.2 s
        response = client.get(f"/api/games/{a['game_id']}")
        assert response.status_code == 404 and "expired" in response.json()["error"]
        assert client.get(f"/api/games/{b['game_id']}").status_code == 200
        start(client)
        response = client.post("/api/games", json={"specs": ["human", "random", "random"]})
        assert response.status_code == 503 and "too many games" in response.json()["error"]


def test_bad_requests_get_clear_errors(client):
    cases = [
        ({"rules": "nope"}, "unknown rules"),
        ({"players": "3"}, "'players' must be an int"),
        ({"players": 12}, "num_players"),
        ({"specs": ["human", "human", "random"]}, "at most one human"),
        ({"specs": ["human", "no_such_bot"]}, "not allowed from the page"),
        ({"specs": ["human", "bold:nope=1"]}, "bad setting"),
        ({"seed": -1}, "'seed'"),
    ]
    for body, message in cases:
        response = client.post("/api/games", json={"specs": ["human", "random", "random"], **body})
        assert response.status_code == 400 and message in response.json()["error"], response.text
    assert client.get("/api/games/nope").status_code == 404


def test_exposed_server_only_allows_known_specs():
    app = create_app(allow_any_spec=False, defaults={"specs": ["human", "belief", "belief"]})
    with TestClient(app) as client:
        response = client.post(
            "/api/games", json={"specs": ["human", "liars_env.agents.base:RandomAgent", "random"]}
        )
        assert response.status_code == 400 and "not allowed" in response.json()["error"]
        assert start(client, specs=["human", "belief", "random"])["game_id"]


def test_cross_site_requests_are_refused(client):
    body = {"specs": ["human", "random", "random"]}
    # a "simple" request (no CORS preflight) whose content type only mentions JSON
    for content_type in ("text/plain; x=application/json", "text/plain", "application/jsonx"):
        response = client.post(
            "/api/games", content=json.dumps(body), headers={"Content-Type": content_type}
        )
        assert response.status_code == 415, (content_type, response.text)
    response = client.post(
        "/api/games",
        content=json.dumps(body),
        headers={"Content-Type": "Application/JSON; charset=utf-8"},
    )
    assert response.status_code == 201, response.text
    gid = response.json()["game_id"]
    # state-changing requests from another origin (or port, or scheme) are refused
    for origin in (
        "https://evil.example",
        "http://testserver:8080",
        "https://testserver",
        "null",
    ):
        headers = {"Origin": origin}
        for method, path, payload in (
            ("POST", "/api/games", body),
            ("POST", f"/api/games/{gid}/step", {"turn": 0}),
            ("POST", f"/api/games/{gid}/act", {"turn": 0, "action": 3}),
            ("POST", f"/api/games/{gid}/replay", {}),
            ("DELETE", f"/api/games/{gid}", None),
        ):
            response = client.request(method, path, json=payload, headers=headers)
            assert response.status_code == 403, (origin, path, response.text)
            assert "origin" in response.json()["error"]
    assert client.get(f"/api/games/{gid}").status_code == 200  # nothing was dropped
    # the page's own origin (and requests without one, e.g. curl) are accepted
    for headers in ({"Origin": "http://testserver"}, {"Origin": "http://TestServer:80"}, {}):
        response = client.post("/api/games", json=body, headers=headers)
        assert response.status_code == 201, (headers, response.text)
    with TestClient(create_app(), base_url="http://127.0.0.1:8765") as local:
        ok = local.post("/api/games", json=body, headers={"Origin": "http://127.0.0.1:8765"})
        assert ok.status_code == 201, ok.text
        bad = local.post("/api/games", json=body, headers={"Origin": "http://localhost:8765"})
        assert bad.status_code == 403


def test_pages_may_not_import_modules_even_on_loopback(client):
    for spec in ("liars_env.agents.base:RandomAgent", "no_such_entry_point", "solver:x"):
        response = client.post("/api/games", json={"specs": ["human", spec, "random"]})
        assert response.status_code == 400, (spec, response.text)
        assert "not allowed" in response.json()["error"]
    table = client.app.state.table
    for spec in ("random", "belief", "bold:bluff_rate=0.1", "solver", "checkpoint:runs/x"):
        assert table.check_spec(spec) == spec
    assert start(client, specs=["human", "bold:bluff_rate=0.1", "random"])["game_id"]
    # a custom agent given on the command line is fine
    custom = "liars_env.agents.base:RandomAgent"
    app = create_app(defaults={"specs": ["human", custom, "random"]})
    with TestClient(app) as c:
        assert start(c, specs=["human", custom, "random"])["game_id"]
        assert "MODULE:ATTR" not in c.get("/api/config").json()["agents"]


def test_loopback_server_refuses_foreign_host_headers():
    app = create_app(allowed_hosts=["127.0.0.1", "localhost"])
    with TestClient(app, base_url="http://evil.example") as client:
        assert client.get("/api/config").status_code == 400
    with TestClient(app, base_url="http://127.0.0.1:8765") as client:
        assert client.get("/api/config").status_code == 200


# ------------------------------------------------------------------------ recordings
def record_game(rules=None, seed=9):
    rules = rules or RuleSet.preset("perudo_calza")
    game = LiarsDiceGame(rules)
    rng = np.random.default_rng(seed)
    state = game.new_game(rng)
    recorder = GameRecorder(game, seed=seed, seats=["a"] * rules.num_players)
    pick = np.random.default_rng(0)
    while not state.is_over:
        legal = game.legal_actions(state)
        action = legal[-1] if len(state.bids) > 2 else legal[pick.integers(min(4, len(legal)))]
        recorder.apply(state, action, rng, probs=[[int(action), 1.0]])
    recorder.finish(state)
    return recorder, state


def test_recording_round_trip(tmp_path):
    recorder, state = record_game()
    path = recorder.write(tmp_path / "g.jsonl")
    replay = load_replay(path)
    assert replay.final_state == state and replay.actions == state.actions
    assert replay.end["places"] == state.places()
    assert sum(f.result is not None for f in replay.frames) == state.round
    # the engine's own replay agrees
    assert LiarsDiceGame(replay.rules).replay(9, state.actions) == state


def edit(path, number, change):
    lines = path.read_text().splitlines(keepends=True)
    line = json.loads(lines[number - 1])
    change(line)
    lines[number - 1] = json.dumps(line) + "\n"
    path.write_text("".join(lines))


def test_tampered_and_truncated_recordings_are_refused(tmp_path):
    recorder, _ = record_game()
    good = recorder.text()
    lines = good.splitlines(keepends=True)
    first_call = next(i for i, line in enumerate(lines) if '"reveal"' in line) + 1
    path = tmp_path / "g.jsonl"

    def check(change_or_text, number, message, at=None):
        if callable(change_or_text):
            path.write_text(good)
            edit(path, number, change_or_text)
        else:
            path.write_text(change_or_text)
        with pytest.raises(ReplayError, match=message) as info:
            load_replay(path)
        assert f"{path} line {number if at is None else at}:" in str(info.value)

    def set_die(line):
        hands = line["reveal"]["dice"]
        hands["0"][0] = hands["0"][0] % 6 + 1

    check(set_die, first_call, "recorded reveal dice")
    # a wrong seed deals other dice: the first action's recorded state or seat differs
    check(lambda line: line.update(seed=10), 1, "re-simulated", at=2)
    check(lambda line: line.update(action=line["action"] + 1), 2, "re-simulated", at=3)
    check(lambda line: line.update(seat=(line["seat"] + 1) % 3), 3, "seat .* acts")
    check(lambda line: line["state"].update(dice_left=[9, 9, 9]), 2, "recorded state dice_left")
    check(lambda line: line.update(places=[3, 2, 1]), len(lines), "recorded places")
    check(lambda line: line.update(version=99), 1, "version 99")
    check("".join(lines[:-1]), len(lines) - 1, "without the final 'end' line")
    check("".join(lines[:-3]) + lines[-3][:25], len(lines) - 2, "not valid JSON.*cut short")
    check("", 1, "empty file")
    check(good + lines[1], len(lines) + 1, "after the final 'end' line")
    # malformed fields are ReplayErrors too, not crashes (here or when rendered)
    check(lambda line: line.update(state=[1, 2]), 2, "'state'")
    check(lambda line: line.update(seats=[1, 2, 3]), 1, "'seats'")
    check(lambda line: line["seats"][1].update(seat="1"), 1, "'seats'")
    check(lambda line: line["seats"][1].update(seat=2), 1, "'seats'")
    check(lambda line: line["seats"][0].update(spec=None), 1, "'seats'")
    check(lambda line: line["seats"][0].update(name=["x"]), 1, "'seats'")
    check(lambda line: line.update(probs=[[1000000, 0.5]]), 2, "'probs'")
    check(lambda line: line.update(probs=[[-1, 0.5]]), 2, "'probs'")
    check(lambda line: line.update(probs="x"), 2, "'probs'")
    check(lambda line: line.update(probs=["x"]), 2, "'probs'")
    check(lambda line: line.update(probs=[[0, "0.5"]]), 2, "'probs'")
    check(lambda line: line.update(probs=[[True, 0.5]]), 2, "'probs'")
    check(lambda line: line.update(probs=[[0, 0.5, 1]]), 2, "'probs'")
    check(lambda line: line.update(probs=[[0, 1.5]]), 2, "'probs'")
    check(lambda line: line.update(probs=[[0, float("nan")]]), 2, "NaN is not a JSON number")
    check(lambda line: line.update(source=float("inf")), 1, "Infinity is not a JSON number")
    check(lambda line: line.update(reveal=[1]), first_call, "reveal")
    path.write_text(good)
    edit(path, 2, lambda line: line.update(probs=None, state=None))  # both optional
    assert replay_json(load_replay(path))["frames"][1]["event"]["probs"] is None


def test_replay_cli_refuses_malformed_recordings(tmp_path, capsys, monkeypatch):
    import liars_env.play.web.server as server
    from liars_env.play.web.replay import main

    monkeypatch.setattr(server, "serve", lambda *a, **k: pytest.fail("served a bad file"))
    recorder, _ = record_game()
    path = tmp_path / "g.jsonl"
    for number, change in (
        (1, lambda line: line.update(seats=[1, 2, 3])),
        (2, lambda line: line.update(probs=[[1000000, 0.5]])),
        (2, lambda line: line.update(probs="x")),
        (2, lambda line: line.update(state=[1, 2])),
    ):
        for argv in (["--check", str(path)], ["--no-browser", "--port", "0", str(path)]):
            path.write_text(recorder.text())
            edit(path, number, change)
            assert main(argv) == 2
            err = capsys.readouterr().err
            assert err.startswith("liars-replay: ") and f"line {number}:" in err


def test_replay_cli_check(tmp_path, capsys):
    from liars_env.play.web.replay import main

    recorder, _ = record_game()
    path = recorder.write(tmp_path / "g.jsonl")
    assert main(["--check", str(path)]) == 0
    assert "verified" in capsys.readouterr().out
    path.write_text(recorder.text()[:-30])
    assert main(["--check", str(path)]) == 2
    assert "line" in capsys.readouterr().err


# ------------------------------------------------------------------------ liars-eval
def test_eval_record_round_trip(tmp_path):
    from liars_train.evaluation.tournament import evaluate

    specs = ["bold", "random", "probabilistic"]
    plain = evaluate("perudo", specs, games=6, seed=3, workers=1, progress=False)
    recorded = evaluate(
        "perudo", specs, games=6, seed=3, workers=2, progress=False, record=tmp_path / "rec"
    )
    assert recorded.agents == plain.agents  # recording changes nothing
    files = sorted((tmp_path / "rec").glob("game_*.jsonl"))
    assert [f.name for f in files] == [f"game_{g:06d}.jsonl" for g in range(6)]
    decisions = 0
    for path in files:
        replay = load_replay(path)
        decisions += len(replay.actions)
        header = replay.header
        assert header["source"] == "liars-eval" and sorted(s["spec"] for s in header["seats"]) == [
            "bold",
            "probabilistic",
            "random",
        ]
        lines = [json.loads(x) for x in path.read_text().splitlines()[1:-1]]
        for line in lines:  # every bot exposes its probabilities (random: uniform)
            spec = header["seats"][line["seat"]]["spec"]
            assert "probs" in line
            if spec == "random":
                assert len({round(p, 3) for _, p in line["probs"]}) == 1
            if "probs" in line:
                assert abs(sum(p for _, p in line["probs"]) - 1) < 1e-2
                assert line["action"] in [a for a, _ in line["probs"]]
    assert decisions == plain.decisions


def test_eval_record_without_probabilities_loads_and_replays(tmp_path):
    from liars_env.play.web.replay import main as replay_main
    from liars_env.play.web.session import replay_json
    from liars_train.evaluation.tournament import evaluate

    specs = ["bold", "probabilistic", "cautious"]
    both = evaluate("perudo", specs, games=3, seed=5, workers=1, progress=False,
                    record=tmp_path / "with")  # fmt: skip
    moves = evaluate("perudo", specs, games=3, seed=5, workers=1, progress=False,
                     record=tmp_path / "moves", record_probabilities=False)  # fmt: skip
    assert moves.agents == both.agents and moves.decisions == both.decisions
    for g in range(3):
        name = f"game_{g:06d}.jsonl"
        with_probs = load_replay(tmp_path / "with" / name)
        without = load_replay(tmp_path / "moves" / name)
        assert without.actions == with_probs.actions  # the same games, verified
        assert without.end == with_probs.end
        assert with_probs.header["probabilities"] is True
        assert without.header["probabilities"] is False
        assert any("probs" in f.line for f in with_probs.frames[1:])
        assert not any("probs" in f.line for f in without.frames[1:])
        assert replay_main(["--check", str(tmp_path / "moves" / name)]) == 0

    # the page's replay API serves it, every event without probabilities
    store = SessionStore(ttl=600, max_games=8)
    replay = load_replay(tmp_path / "moves" / "game_000000.jsonl")
    rid = store.add_replay(replay_json(replay))
    with TestClient(create_app(store)) as c:
        response = c.get(f"/api/replays/{rid}")
    assert response.status_code == 200, response.text
    frames = response.json()["frames"]
    assert len(frames) == len(replay.actions) + 1
    assert frames[0]["event"] is None
    assert all(f["event"]["probs"] is None for f in frames[1:])
    assert frames[-1]["table"]["over"] and response.json()["header"]["probabilities"] is False


def test_eval_cli_record(tmp_path):
    from liars_train.evaluation.tournament import main

    out = tmp_path / "rec"
    assert main(["--agents", "random", "random", "--games", "2", "--workers", "1",
                 "--no-progress", "--record", str(out)]) == 0  # fmt: skip
    assert len(list(out.glob("*.jsonl"))) == 2
    out = tmp_path / "moves"
    assert main(["--agents", "probabilistic", "bold", "--games", "2", "--workers", "1",
                 "--no-progress", "--record", str(out),
                 "--no-record-probabilities"]) == 0  # fmt: skip
    for path in sorted(out.glob("*.jsonl")):
        lines = [json.loads(x) for x in path.read_text().splitlines()]
        assert lines[0]["probabilities"] is False
        assert not any("probs" in line for line in lines)
        load_replay(path)


def test_game_creation_is_bounded_when_concurrent(monkeypatch):
    import threading
    import time

    import liars_env.play.web.session as session_module

    real = session_module.make_agent

    def slow_make_agent(*args, **kwargs):  # building agents can be slow (solver, checkpoints)
        time.sleep(0.3)
        return real(*args, **kwargs)

    monkeypatch.setattr(session_module, "make_agent", slow_make_agent)
    store = SessionStore(ttl=600, max_games=1)
    rules = RuleSet.preset("perudo")
    results: list[object] = []
    barrier = threading.Barrier(2)

    def create():
        barrier.wait()
        try:
            results.append(store.create(rules, ["human", "random", "random"]))
        except ApiError as exc:
            results.append(exc)

    threads = [threading.Thread(target=create) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=20)
    errors = [r for r in results if isinstance(r, ApiError)]
    assert len(results) == 2 and len(errors) == 1 and errors[0].status == 503
    assert len(store.games) == 1
    # a failed creation frees its slot
    store.remove(next(iter(store.games)))
    with pytest.raises(ApiError):
        store.create(rules, ["human", "human", "random"])
    assert store.create(rules, ["human", "random", "random"]).id in store.games


def test_slow_work_does_not_block_other_requests(monkeypatch):
    import threading
    import urllib.request

    import liars_env.play.web.session as session_module
    from liars_env.play.web.server import ServerThread

    real = session_module.make_agent
    building, release = threading.Event(), threading.Event()

    def blocked_make_agent(*args, **kwargs):  # e.g. the solver solving a game
        building.set()
        release.wait(timeout=20)
        return real(*args, **kwargs)

    monkeypatch.setattr(session_module, "make_agent", blocked_make_agent)
    thread = ServerThread(create_app(allowed_hosts=["127.0.0.1"]), port=0).start()
    created: list[int] = []

    def create():
        request = urllib.request.Request(
            thread.url + "/api/games",
            data=json.dumps({"specs": ["human", "random", "random"]}).encode(),
            headers={"Content-Type": "application/json"},
        )
        with urllib.request.urlopen(request, timeout=30) as response:
            created.append(response.status)

    creator = threading.Thread(target=create)
    try:
        creator.start()
        assert building.wait(timeout=10)
        with urllib.request.urlopen(thread.url + "/api/config", timeout=3) as response:
            assert "presets" in json.loads(response.read())
    finally:
        release.set()
        creator.join(timeout=30)
        thread.stop()
    assert created == [201]


def test_store_errors_are_api_errors():
    store = SessionStore(ttl=10, max_games=1)
    with pytest.raises(ApiError) as info:
        store.get("missing")
    assert info.value.status == 404
    with pytest.raises(ValueError, match="ttl"):
        SessionStore(ttl=0)


# ------------------------------------------------------------------------ commands
def test_liars_play_web_builds_the_table(monkeypatch):
    import liars_env.play.web.server as server
    from liars_env.play import main

    served = {}

    def fake_serve(app, host, port, open_browser, say=print, path="/"):
        served.update(app=app, host=host, port=port, open_browser=open_browser)
        return 0

    monkeypatch.setattr(server, "serve", fake_serve)
    argv = ["--web", "--no-browser", "--port", "0", "--seat", "1", "--opponents", "bold"]
    assert main(argv) == 0
    assert served["host"] == "127.0.0.1" and served["open_browser"] is False
    with TestClient(served["app"], base_url="http://127.0.0.1") as client:
        defaults = client.get("/api/config").json()["defaults"]
        assert defaults["specs"] == ["bold", "human", "bold"] and defaults["autostart"]
        assert client.post("/api/games", json={}).json()["you"] == 1
    argv = ["--web", "--watch", "--no-browser", "--agents", "belief", "random", "--players", "3"]
    assert main(argv) == 0
    with TestClient(served["app"], base_url="http://localhost") as client:
        assert client.get("/api/config").json()["defaults"]["specs"] == [
            "belief",
            "random",
            "belief",
        ]
    # every spec of the command line may be used from the page, even one no seat got
    custom = "liars_env.agents.base:RandomAgent"
    argv = ["--web", "--no-browser", "--players", "2", "--opponents", "bold", custom]
    assert main(argv) == 0
    with TestClient(served["app"], base_url="http://127.0.0.1") as client:
        assert client.get("/api/config").json()["defaults"]["specs"] == ["human", "bold"]
        response = client.post("/api/games", json={"players": 2, "specs": ["human", custom]})
        assert response.status_code == 201, response.text
        assert custom in client.get("/api/config").json()["agents"]
        response = client.post("/api/games", json={"specs": ["human", "os:getpid"]})
        assert response.status_code == 400 and "not allowed" in response.json()["error"]


def test_liars_play_web_refuses_bad_options(capsys):
    from liars_env.play import main

    assert main(["--web", "--no-browser", "--opponents", "no_such_bot"]) == 2
    assert "unknown agent spec" in capsys.readouterr().out
    assert main(["--watch"]) == 2
    assert "--watch needs --web" in capsys.readouterr().out


def test_server_thread_serves_over_http():
    import urllib.request

    from liars_env.play.web.server import ServerThread

    thread = ServerThread(create_app(allowed_hosts=["127.0.0.1"]), port=0).start()
    try:
        assert thread.port > 0
        with urllib.request.urlopen(thread.url + "/api/config", timeout=10) as response:
            assert "presets" in json.loads(response.read())
    finally:
        thread.stop()
    assert not thread.thread.is_alive()


def test_jokers_table_offers_one_1_to_open_and_marks_jokers_at_the_reveal(client):
    config = client.get("/api/config").json()
    assert "jokers" in config["presets"]
    view = start(client, rules="jokers", players=2, specs=["human", "random"], seed=3)
    view = advance_to_human(client, view)
    legal = view["legal"]
    if not view["table"]["bids"]:  # the person opens: every bid, "one 1" the lowest
        assert (legal["bids"][0]["quantity"], legal["bids"][0]["face"]) == (1, 1)
    ones = [b for b in legal["bids"] if b["face"] == 1]
    assert ones  # ones are biddable under jokers (Perudo's opening forbids them)
