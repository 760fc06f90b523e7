"""The web table in a real browser: headless Chromium driven by Playwright.

Plays a whole 3-player game against bots by clicking the page's legal-move controls,
checks the reveal and the final places, saves a screenshot, then opens the replay and
steps through it. Uses the system Chromium (Debian's ``chromium`` package); skips with
the reason where Playwright or the browser is missing.

``LIARS_UPDATE_SCREENSHOT=1 pytest tests/test_browser.py`` also rewrites
``docs/web_table.png``.
"""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS_PNG = ROOT / "docs" / "web_table.png"

pytest.importorskip("starlette", reason="the web table needs starlette: pip install -e '.[web]'")
pytest.importorskip("uvicorn", reason="the web table needs uvicorn: pip install -e '.[web]'")
playwright_api = pytest.importorskip(
    "playwright.sync_api", reason="the browser test needs Playwright: pip install playwright"
)


def find_chromium() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable"):
        path = shutil.which(name)
        if path:
            return path
    return None


CHROMIUM = os.environ.get("LIARS_CHROMIUM") or find_chromium()


@pytest.fixture(scope="module")
def server():
    from liars_env.play.web.server import ServerThread, create_app
    from liars_env.play.web.session import SessionStore

    store = SessionStore(ttl=600, max_games=8)
    defaults = {
        "rules": "perudo",
        "players": 3,
        "specs": ["human", "probabilistic", "bold"],
        "seed": 7,
        "autostart": True,
        "delay_ms": 100,
    }
    app = create_app(store, defaults, allowed_hosts=["127.0.0.1", "localhost"])
    thread = ServerThread(app, port=0).start()
    yield thread, store
    thread.stop()


@pytest.fixture(scope="module")
def browser():
    if CHROMIUM is None:
        pytest.skip(
            "no Chromium installed (apt-get install chromium, or set LIARS_CHROMIUM to a "
            "Chrome/Chromium binary)"
        )
    with playwright_api.sync_playwright() as p:
        try:
            browser = p.chromium.launch(
                executable_path=CHROMIUM, headless=True, args=["--no-sandbox"]
            )
        except playwright_api.Error as exc:
            pytest.skip(f"Chromium at {CHROMIUM} does not start under Playwright: {exc}")
        yield browser
        browser.close()


def small_png(src: Path, dst: Path) -> None:
    """A palette PNG of the screenshot (a few tens of KB)."""
    from PIL import Image

    with Image.open(src) as image:
        image.convert("RGB").quantize(colors=96).save(dst, optimize=True)


def covered_points(page, selector: str) -> list[str]:
    """Points of the element (centre and inset corners) where another element is on top.

    Scrolls the element into view first (``elementFromPoint`` only sees the viewport).
    """
    return page.evaluate(
        """(selector) => {
            const node = document.querySelector(selector);
            node.scrollIntoView({block: "nearest"});
            const r = node.getBoundingClientRect();
            const points = [[0.5, 0.5], [0.1, 0.1], [0.9, 0.1], [0.1, 0.9], [0.9, 0.9]];
            const covered = [];
            for (const [fx, fy] of points) {
                const x = r.left + fx * r.width, y = r.top + fy * r.height;
                const hit = document.elementFromPoint(x, y);
                if (!hit || !node.contains(hit)) {
                    covered.push(`(${fx}, ${fy}): ${hit ? hit.tagName + "#" + hit.id : "nothing"}`);
                }
            }
            return covered;
        }""",
        selector,
    )


def focused_id(page) -> str:
    return page.evaluate("document.activeElement ? document.activeElement.id : ''")


def assert_seats_visible(page, seats: int) -> None:
    for seat in range(seats):
        assert page.locator(f"#seat-{seat}").is_visible()
        assert covered_points(page, f"#seat-{seat}") == [], f"seat {seat} is covered"


def test_play_a_whole_game_in_the_browser(server, browser, tmp_path):
    thread, _ = server
    page = browser.new_page(viewport={"width": 1100, "height": 860})
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.goto(thread.url + "/")
    page.wait_for_selector("#game:not([hidden])")
    page.wait_for_function("document.body.dataset.mode === 'play'")
    assert page.locator("#your-dice .die").count() == 5
    shot = tmp_path / "table.png"
    moves = reveals_checked = 0
    while True:
        page.wait_for_selector("#moves button.move, body[data-over='1']", timeout=30_000)
        if page.get_attribute("body", "data-over") == "1":
            break
        if page.locator("#reveal-count").count():
            text = page.inner_text("#reveal-count")
            m = re.match(r"Count of (\d)s: (\d+) \(bid (\d+)\)", text)
            assert m, text
            assert page.locator("#reveal .die.match").count() == int(m.group(2))
            assert page.locator("#reveal .die.wild").count() <= int(m.group(2))
            reveals_checked += 1
            if not shot.exists() and page.locator("#bid-list li").count() >= 2:
                page.screenshot(path=str(shot))
        turn = page.get_attribute("body", "data-turn")
        challenge = page.locator("#challenge-btn")
        if challenge.count() and moves % 3 == 2:
            challenge.click()
        elif page.locator("#moves .quick button").count():
            page.locator("#moves .quick button").first.click()
        else:
            challenge.click()
        moves += 1
        page.wait_for_function(f"document.body.dataset.turn !== '{turn}'")
        assert moves < 200, "the game does not end"
    assert reveals_checked > 0
    places = page.locator("#places li")
    assert places.count() == 3
    shown = sorted(int(places.nth(i).get_attribute("data-place")) for i in range(3))
    assert shown == [1, 2, 3]
    assert page.inner_text("#places li:first-child").startswith("1st")
    # the result box takes the focus and hides no seat (your own included) ...
    assert page.locator("#final").is_visible()
    assert focused_id(page) == "final"
    assert_seats_visible(page, 3)
    assert covered_points(page, "#final") == []
    # ... and closes with Escape; focus goes to the Result button that reopens it
    page.keyboard.press("Escape")
    assert page.locator("#final").is_hidden()
    assert focused_id(page) == "results-btn"
    assert_seats_visible(page, 3)
    assert page.locator("#new-game-btn").is_visible()
    assert covered_points(page, "#new-game-btn") == []
    page.keyboard.press("Enter")  # Result: the box again, focused
    assert page.locator("#final").is_visible() and focused_id(page) == "final"
    page.keyboard.press("Tab")
    assert focused_id(page) == "final-close"
    page.keyboard.press("Enter")  # the Close button, by keyboard
    assert page.locator("#final").is_hidden() and focused_id(page) == "results-btn"
    assert_seats_visible(page, 3)
    page.click("#results-btn")
    assert page.locator("#final").is_visible()
    if not shot.exists():
        page.screenshot(path=str(shot))
    assert shot.stat().st_size > 10_000
    if os.environ.get("LIARS_UPDATE_SCREENSHOT"):
        small_png(shot, DOCS_PNG)
    # a stale move from an old turn is refused with a message, and nothing changes
    status, error = page.evaluate(
        """async () => {
            const r = await fetch(`/api/games/${S.view.game_id}/act`, {method: 'POST',
                headers: {'Content-Type': 'application/json'},
                body: JSON.stringify({turn: 0, action: 5})});
            return [r.status, (await r.json()).error];
        }"""
    )
    assert status == 409 and error.startswith("stale move: it was made at turn 0"), error

    # the replay of that game, stepped forward and back
    page.click("#replay-btn")
    page.wait_for_selector("#replay-controls:not([hidden])")
    assert page.get_attribute("body", "data-frame") == "0"
    assert page.locator("#table .die.hidden-die").count() == 15
    for k in range(1, 4):
        page.click("#fwd-btn")
        assert page.get_attribute("body", "data-frame") == str(k)
    assert page.locator("#event-text").inner_text()
    page.keyboard.press("ArrowLeft")
    assert page.get_attribute("body", "data-frame") == "2"
    page.check("#show-all")
    assert page.locator("#table .die.hidden-die").count() == 0
    page.click("#last-btn")
    assert page.get_attribute("body", "data-over") == "1"
    assert page.locator("#places li").count() == 3
    page.screenshot(path=str(tmp_path / "replay.png"))
    assert not errors, errors
    page.close()


def test_replay_of_a_recorded_tournament_game(server, browser, tmp_path):
    from liars_env.play.recording import load_replay
    from liars_env.play.web.session import replay_json
    from liars_train.evaluation.tournament import evaluate

    thread, store = server
    evaluate("perudo", ["bold", "random", "probabilistic"], 3, seed=1, progress=False,
             record=tmp_path)  # fmt: skip
    rid = store.add_replay(replay_json(load_replay(tmp_path / "game_000000.jsonl")))
    page = browser.new_page(viewport={"width": 390, "height": 800})  # phone width
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.goto(f"{thread.url}/?replay={rid}")
    page.wait_for_selector("#replay-controls:not([hidden])")
    page.click("#fwd-btn")
    page.click("#fwd-btn")
    # the probability bots expose their action probabilities
    frames = [f["event"] for f in store.get_replay(rid)["frames"][1:3]]
    if any(e["probs"] for e in frames):
        assert page.locator("#event .probs li").count() > 0
    width = page.evaluate("document.documentElement.scrollWidth")
    assert width <= 390, f"the page is {width}px wide at phone width"
    # at the end, the result box hides no seat at phone width either, and closes with Escape
    page.click("#last-btn")
    assert page.locator("#final").is_visible() and focused_id(page) == "final"
    assert_seats_visible(page, 3)
    assert covered_points(page, "#final") == []
    page.keyboard.press("Escape")
    assert page.locator("#final").is_hidden()
    assert focused_id(page) == "last-btn"  # back where the focus was
    assert_seats_visible(page, 3)
    assert page.locator("#new-game-btn").is_visible()
    assert covered_points(page, "#new-game-btn") == []
    page.keyboard.press("Home")  # leaving the end and coming back shows the result again
    assert page.locator("#final").is_hidden() and page.locator("#results-btn").is_hidden()
    page.keyboard.press("End")
    assert page.locator("#final").is_visible()
    width = page.evaluate("document.documentElement.scrollWidth")
    assert width <= 390, f"the page is {width}px wide at phone width"
    assert not errors, errors
    page.close()


def test_replay_recorded_without_probabilities(server, browser, tmp_path):
    from liars_env.play.recording import load_replay
    from liars_env.play.web.session import replay_json
    from liars_train.evaluation.tournament import evaluate

    thread, store = server
    evaluate("perudo", ["bold", "probabilistic", "cautious"], 3, seed=2, progress=False,
             record=tmp_path, record_probabilities=False)  # fmt: skip
    rid = store.add_replay(replay_json(load_replay(tmp_path / "game_000000.jsonl")))
    page = browser.new_page(viewport={"width": 1000, "height": 760})
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.goto(f"{thread.url}/?replay={rid}")
    page.wait_for_selector("#replay-controls:not([hidden])")
    assert "moves only" in page.inner_text("#info")
    for k in range(1, 4):
        page.keyboard.press("ArrowRight")
        assert page.get_attribute("body", "data-frame") == str(k)
        assert page.locator("#event-text").inner_text()
        assert page.locator("#event .probs").count() == 0
    page.click("#last-btn")
    assert page.locator("#places li").count() == 3
    assert not errors, errors
    page.close()


def test_watch_bots_play(server, browser):
    thread, _ = server
    page = browser.new_page(viewport={"width": 1000, "height": 700})
    page.goto(thread.url + "/")
    page.wait_for_selector("#game:not([hidden])")
    page.click("#new-game-btn")
    page.check("input[name=mode][value=watch]")
    page.fill("#setup-specs", "random bold")
    page.click("#setup-start")
    page.wait_for_function("document.body.dataset.mode === 'watch'")
    page.wait_for_function("Number(document.body.dataset.turn) >= 3", timeout=20_000)
    assert page.locator("#moves button").count() == 0
    page.keyboard.press(" ")  # pause
    # a bot's move may still be in flight: wait for it, then nothing more may happen
    page.wait_for_function("document.body.dataset.busy !== '1'")
    turn = page.get_attribute("body", "data-turn")
    delay = page.evaluate("S.delay")
    page.wait_for_timeout(4 * delay + 500)  # longer than the pause after a reveal (3x)
    assert page.get_attribute("body", "data-turn") == turn
    assert page.evaluate("S.paused && S.timer === null")
    page.close()


def test_replay_shows_a_text_agents_words_beside_its_moves(server, browser, tmp_path):
    pytest.importorskip("openai")
    from liars_env.play.bot_server import BotServer
    from liars_env.play.recording import load_replay
    from liars_env.play.web.session import replay_json
    from liars_env.rules import RuleSet
    from liars_train.evaluation.tournament import evaluate

    thread, store = server
    rules = RuleSet.preset("perudo", num_players=2, dice_per_player=2)
    with BotServer(mode="illegal_once") as bots:  # each move: a bad reply, then a good one
        spec = f"llm:cautious?base_url={bots.base_url}"
        evaluate(rules, [spec, "belief"], 2, seed=3, progress=False, record=tmp_path)
    data = replay_json(load_replay(tmp_path / "game_000000.jsonl"))
    rid = store.add_replay(data)
    first = next(i for i, f in enumerate(data["frames"]) if f["event"] and f["event"]["calls"])
    page = browser.new_page(viewport={"width": 390, "height": 800})  # phone width
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.goto(f"{thread.url}/?replay={rid}")
    page.wait_for_selector("#replay-controls:not([hidden])")
    for _ in range(first):
        page.click("#fwd-btn")
    words = page.locator("#event .words li")
    assert words.count() == 2  # the refused reply and the one played
    assert "is not legal now" in words.nth(0).inner_text()
    assert "Final answer:" in words.nth(1).inner_text() and "read as" in words.nth(1).inner_text()
    width = page.evaluate("document.documentElement.scrollWidth")
    assert width <= 390, f"the page is {width}px wide at phone width"
    assert not errors, errors
    page.close()
