"""Games held by the web server: one :class:`GameSession` per game id, in a bounded store.

Everything about a game lives here, on the server: the state, the dice, the agents, the
recording. The page only gets JSON views (:meth:`GameSession.view`) and submits action
ids with the turn number it saw; a move for another turn (a stale page, a second tab) or
an illegal move raises :class:`ApiError` and changes nothing. Bots move one action per
:meth:`GameSession.step`, so the page sets the pace.

Nothing here imports the web framework; :mod:`liars_env.play.web.server` maps
:class:`ApiError` to HTTP responses.

Example:
    >>> from liars_env import RuleSet
    >>> store = SessionStore(ttl=60, max_games=4)
    >>> session = store.create(RuleSet.preset("perudo"), ["human", "random", "random"], seed=1)
    >>> view = session.view()
    >>> view["you"], view["table"]["turn"], len(view["table"]["seats"][0]["dice"])
    (0, 0, 5)
"""

from __future__ import annotations

import dataclasses
import secrets
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from liars_env.actions import describe_bid
from liars_env.agents import make_agent, view_of
from liars_env.engine import GameState, LiarsDiceGame, RoundResult
from liars_env.envs.render import render_reveal
from liars_env.observation import ObservationLayout
from liars_env.play.recording import GameRecorder, Replay, action_probabilities
from liars_env.rules import PRESETS, RuleSet, counts_as_match

HUMAN = "human"
"""The seat spec of the person at the table."""


class ApiError(Exception):
    """A refused request: ``status`` is the HTTP status, the message says why.

    Args:
        status: 400 (bad or illegal request), 404 (no such game), 409 (stale or out of
            turn), 503 (too many games).
        message: What was wrong, for the page to show.
        **extra: More JSON fields of the error response.
    """

    def __init__(self, status: int, message: str, **extra: Any) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.extra = extra


# ------------------------------------------------------------------------ JSON views
def preset_name(rules: RuleSet) -> str | None:
    """The preset these rules are (at any player count), or ``None`` for custom rules.

    Example:
        >>> preset_name(RuleSet.preset("perudo_calza", num_players=4))
        'perudo_calza'
        >>> preset_name(RuleSet.preset("openspiel_liars_dice"))
        'openspiel_liars_dice'
    """
    for name, preset in PRESETS.items():
        try:
            if dataclasses.replace(preset, num_players=rules.num_players) == rules:
                return name
        except ValueError:  # a preset that cannot take this player count
            continue
    return None


def exact_name(rules: RuleSet) -> str | None:
    """What the exact call is called in these rules (``None`` if there is none)."""
    return {"spot_on": "spot on", "calza": "calza"}.get(rules.exact_call)


def reveal_json(result: RoundResult, game: LiarsDiceGame, names: Sequence[str]) -> dict[str, Any]:
    """A reveal for the page: each hand's dice marked counted/wild, losses, a summary."""
    quantity, face = result.bid
    hands = []
    for seat, hand in result.dice.items():
        counted = seat in result.counted_seats
        dice = []
        for die in hand:
            match = counted and counts_as_match(game.rules, die, face, palifico=result.palifico)
            dice.append({"face": die, "match": match, "wild": match and die != face})
        hands.append({"seat": seat, "counted": counted, "dice": dice})
    summary = render_reveal(result, game, names)  # title, hands, count, then the outcome
    return {
        "call": result.call,
        "call_text": "challenge" if result.call == "challenge" else exact_name(game.rules),
        "bid": [quantity, face],
        "bid_text": describe_bid(quantity, face),
        "bidder": result.bidder,
        "caller": result.caller,
        "count": result.count,
        "palifico": result.palifico,
        "hands": hands,
        "losers": list(result.losers),
        "gainers": list(result.gainers),
        "eliminated": list(result.eliminated),
        "dice_left": list(result.dice_left),
        "next_opener": result.next_opener,
        "summary": summary,
        "outcome": [line.strip() for line in summary[2 + len(hands) :]],
    }


def table_json(
    state: GameState,
    names: Sequence[str],
    specs: Sequence[str],
    show_dice: Callable[[int], bool],
) -> dict[str, Any]:
    """The public table (plus the dice of the seats ``show_dice`` allows)."""
    places = state.places()
    out_seats = {s for group in state.out_order for s in group}
    seats = []
    for seat, count in enumerate(state.dice_left):
        over_or_out = state.is_over or seat in out_seats
        seats.append(
            {
                "seat": seat,
                "name": names[seat],
                "spec": specs[seat],
                "kind": "human" if specs[seat] == HUMAN else "bot",
                "dice_left": count,
                "dice": sorted(state.dice[seat]) if show_dice(seat) else None,
                "out": seat in out_seats,
                "place": places[seat] if over_or_out else None,
            }
        )
    return {
        "round": state.round,
        "turn": len(state.actions),
        "palifico": state.palifico,
        "opener": state.opener,
        "current_player": None if state.is_over else state.current_player,
        "over": state.is_over,
        "winner": state.winner,
        "places": places if state.is_over else None,
        "seats": seats,
        "bids": [
            {"seat": s, "quantity": q, "face": f, "text": describe_bid(q, f)}
            for s, q, f in state.bids
        ],
        "total_dice": sum(state.dice_left),
    }


def legal_json(game: LiarsDiceGame, state: GameState) -> dict[str, Any]:
    """The legal moves of the player to act, from the action mask.

    ``bids`` lists every legal bid (conversions to and from ones included, as the mask
    gives them); ``quick`` the lowest legal quantity of each face, for one-click raises.
    """
    codec = game.codec
    mask = game.legal_mask(state)
    bids = [
        {"id": int(a), "quantity": int(codec.bid_quantity[a]), "face": int(codec.bid_face[a])}
        for a in np.flatnonzero(mask[: codec.num_bids])
    ]
    lowest: dict[int, dict[str, int]] = {}
    for bid in bids:
        if bid["face"] not in lowest:
            lowest[bid["face"]] = bid
    quick = [
        {**b, "text": describe_bid(b["quantity"], b["face"])} for _, b in sorted(lowest.items())
    ]
    return {
        "bids": bids,
        "quick": quick,
        "challenge": codec.challenge if mask[codec.challenge] else None,
        "exact": codec.exact if codec.exact is not None and mask[codec.exact] else None,
        "exact_name": exact_name(game.rules),
    }


def probs_json(pairs: list[list[float]] | None, game: LiarsDiceGame, top: int = 8) -> Any:
    """The ``top`` most likely actions as ``{action, text, p}`` (``None`` if unknown)."""
    if pairs is None:
        return None
    return [{"action": a, "text": game.codec.describe(int(a)), "p": p} for a, p in pairs[:top]]


def calls_json(calls: Any) -> list[dict[str, Any]]:
    """A text agent's words at a move, for the page: ``{attempt, reply, move, error}``.

    The prompt is left out (the page shows the table); a fallback becomes an entry whose
    ``error`` says what was played instead.
    """
    out = []
    for call in calls or []:
        if "fallback" in call:
            out.append({"fallback": str(call["fallback"]), "error": str(call.get("why", ""))})
            continue
        out.append(
            {
                "attempt": call.get("attempt"),
                "reply": call.get("reply"),
                "move": call.get("move"),
                "error": call.get("error"),
                "cached": bool(call.get("cached")),
            }
        )
    return out


def replay_json(replay: Replay) -> dict[str, Any]:
    """A loaded :class:`~liars_env.play.recording.Replay` as frames for the page."""
    header = replay.header
    names = [s.get("name") or f"player_{i}" for i, s in enumerate(header["seats"])]
    specs = [str(s.get("spec", "?")) for s in header["seats"]]
    frames = []
    last_reveal = None
    for frame in replay.frames:
        event = None
        if frame.line is not None:
            reveal = None
            if frame.result is not None:
                reveal = last_reveal = reveal_json(frame.result, replay.game, names)
            event = {
                "turn": frame.line["turn"],
                "seat": frame.line["seat"],
                "action": frame.line["action"],
                "text": replay.game.codec.describe(frame.line["action"]),
                "round": (frame.line.get("state") or {}).get("round"),
                "probs": probs_json(frame.line.get("probs"), replay.game),
                "calls": calls_json(frame.line.get("calls")),
                "reveal": reveal,
            }
        frames.append(
            {
                "table": table_json(frame.state, names, specs, lambda seat: True),
                "event": event,
                "last_reveal": last_reveal,
            }
        )
    return {
        "mode": "replay",
        "source": replay.source,
        "rules": replay.rules.to_dict(),
        "preset": header.get("preset") or preset_name(replay.rules),
        "seed": str(header.get("seed")),
        "header": header,
        "end": replay.end,
        "frames": frames,
    }


# ------------------------------------------------------------------------ sessions
class GameSession:
    """One game at the web table: a person and bots, or bots only (spectator mode).

    Args:
        rules: The variant.
        specs: One spec per seat: :data:`HUMAN` for the person (at most one), or an
            agent spec as in ``liars-eval`` (``belief``, ``checkpoint:PATH``, …).
        seed: Seeds the dice and the agents (default: a random seed, recorded).
        preset: The preset's name, for display.
        record_dir: If given, the finished game is written there as JSON lines.
        clock: Time source (seconds), for expiry.

    Raises:
        ValueError: for a bad spec or more than one human seat.
    """

    def __init__(
        self,
        rules: RuleSet,
        specs: Sequence[str],
        seed: int | None = None,
        preset: str | None = None,
        record_dir: str | Path | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        specs = list(specs)
        if len(specs) != rules.num_players:
            raise ValueError(f"need one spec per seat ({rules.num_players}), got {len(specs)}")
        humans = [s for s, spec in enumerate(specs) if spec == HUMAN]
        if len(humans) > 1:
            raise ValueError(f"at most one human seat, got seats {humans}")
        self.id = secrets.token_urlsafe(12)
        self.rules = rules
        self.preset = preset
        self.specs = specs
        self.you: int | None = humans[0] if humans else None
        self.mode = "play" if humans else "watch"
        self.seed = seed if seed is not None else secrets.randbits(48)
        self.game = LiarsDiceGame(rules)
        self.layout = ObservationLayout(rules)
        self.agents = {
            seat: make_agent(spec, rules, seed=self.seed + seat + 1)
            for seat, spec in enumerate(specs)
            if spec != HUMAN
        }
        self.names = [
            "you" if spec == HUMAN else f"player_{seat} ({spec})" for seat, spec in enumerate(specs)
        ]
        self.rng = np.random.default_rng(self.seed)
        self.state = self.game.new_game(self.rng)
        self.recorder = GameRecorder(
            self.game,
            seed=self.seed,
            seats=specs,
            names=self.names,
            source="liars-play --web",
            extra={"preset": preset},
        )
        self.events: list[dict[str, Any]] = []
        self.last_reveal: dict[str, Any] | None = None
        self.record_dir = Path(record_dir) if record_dir is not None else None
        self.record_path: Path | None = None
        self.clock = clock
        self.touched = clock()
        self.lock = threading.Lock()

    # ------------------------------------------------------------------ moves
    def _check_turn(self, turn: Any) -> None:
        if isinstance(turn, bool) or not isinstance(turn, int):
            raise ApiError(400, f"'turn' must be the int turn number shown, got {turn!r}")
        now = len(self.state.actions)
        if turn != now:
            raise ApiError(
                409,
                f"stale move: it was made at turn {turn}, but the game is at turn {now}; "
                "the table has been refreshed, nothing was played",
                turn=now,
            )
        if self.state.is_over:
            raise ApiError(409, "the game is over", turn=now)

    def act(self, action: Any, turn: Any) -> None:
        """The person plays ``action`` at ``turn`` (the turn number the page showed).

        Raises:
            ApiError: 400 for a malformed or illegal action, 409 for a stale turn, a
                game that is over, or when it is not the person's turn; nothing changes.
        """
        self._check_turn(turn)
        if self.you is None:
            raise ApiError(409, "this is a spectator game: nobody plays from the page")
        if self.state.current_player != self.you:
            raise ApiError(
                409,
                f"not your turn: {self.names[self.state.current_player]} is to act",
                turn=len(self.state.actions),
            )
        if isinstance(action, bool) or not isinstance(action, int):
            raise ApiError(400, f"'action' must be an int action id, got {action!r}")
        reason = self.game.illegal_reason(self.state, action)
        if reason is not None:
            raise ApiError(400, f"illegal move: {reason}", turn=len(self.state.actions))
        self._apply(action, probs=None)

    def step(self, turn: Any) -> None:
        """Plays one bot move (the bot to act) at ``turn``.

        Raises:
            ApiError: 409 for a stale turn, a game that is over, or the person's turn.
        """
        self._check_turn(turn)
        seat = self.state.current_player
        if seat == self.you:
            raise ApiError(409, "it is your turn: the bots wait for your move")
        agent = self.agents[seat]
        view = view_of(self.game, self.layout, self.state)
        probs = action_probabilities(agent, view)
        action = int(agent.act(view))
        reason = self.game.illegal_reason(self.state, action)
        if reason is not None:  # a broken custom agent: say so instead of a 500
            raise ApiError(500, f"agent {self.specs[seat]} played an illegal move: {reason}")
        self._apply(action, probs)

    def _apply(self, action: int, probs: list[list[float]] | None) -> None:
        state = self.state
        seat, round_ = state.current_player, state.round
        result = self.recorder.apply(state, action, self.rng, probs=probs)
        reveal = None
        if result is not None:
            reveal = self.last_reveal = reveal_json(result, self.game, self.names)
        self.events.append(
            {
                "turn": len(state.actions) - 1,
                "seat": seat,
                "name": self.names[seat],
                "action": action,
                "text": self.game.codec.describe(action),
                "round": round_,
                "probs": probs_json(probs, self.game),
                "reveal": reveal,
            }
        )
        if state.is_over:
            self.recorder.finish(state)
            if self.record_dir is not None:
                name = f"web_{time.strftime('%Y%m%d_%H%M%S')}_{self.id[:8]}.jsonl"
                self.record_path = self.recorder.write(self.record_dir / name)

    # ------------------------------------------------------------------ views
    def view(self, since: int = 0) -> dict[str, Any]:
        """The page's JSON: table, legal moves when the person is to act, new events.

        A person sees their own dice; a spectator (and anyone once the game is over)
        sees every seat's. Bots' action probabilities depend on their hidden dice, so
        the person sees them only once the game is over; so does the seed (``None``
        until then), which deals every hand.
        """
        state = self.state
        spectator = self.you is None
        over = state.is_over
        your_turn = not over and state.current_player == self.you
        events = self.events[max(0, since) :]
        if not spectator and not over:
            events = [{**e, "probs": None} for e in events]
        waiting = None if over else ("you" if your_turn else "bot")
        return {
            "game_id": self.id,
            "mode": self.mode,
            "you": self.you,
            "preset": self.preset,
            "rules": self.rules.to_dict(),
            "seed": str(self.seed) if spectator or over else None,
            "exact_name": exact_name(self.rules),
            "table": table_json(
                state,
                self.names,
                self.specs,
                lambda seat: spectator or seat == self.you,
            ),
            "legal": legal_json(self.game, state) if your_turn else None,
            "waiting_for": waiting,
            "events": events,
            "events_total": len(self.events),
            "last_reveal": self.last_reveal,
            "record_path": str(self.record_path) if self.record_path else None,
        }


class SessionStore:
    """The server's games by id, bounded in number and dropped when idle.

    At most ``max_games`` games are held; each expires ``ttl`` seconds after its last
    request (checked lazily, on every look-up).

    Args:
        ttl: Idle seconds before a game is dropped.
        max_games: Games held at once; creating one more is refused (503) until some
            expire.
        record_dir: Where finished games are written (``None``: not written).
        clock: Time source in seconds (tests pass a fake one).
    """

    def __init__(
        self,
        ttl: float = 3600.0,
        max_games: int = 64,
        record_dir: str | Path | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if ttl <= 0:
            raise ValueError(f"ttl must be positive seconds, got {ttl!r}")
        if max_games < 1:
            raise ValueError(f"max_games must be at least 1, got {max_games!r}")
        self.ttl = ttl
        self.max_games = max_games
        self.record_dir = record_dir
        self.clock = clock
        self.games: dict[str, GameSession] = {}
        self.replays: dict[str, dict[str, Any]] = {}
        self.pending = 0
        """Games being built (agents can take a while): they hold a place already."""
        self.lock = threading.Lock()

    def expire(self) -> list[str]:
        """Drops the games idle longer than ``ttl``; returns their ids."""
        now = self.clock()
        with self.lock:
            old = [gid for gid, s in self.games.items() if now - s.touched > self.ttl]
            for gid in old:
                del self.games[gid]
        return old

    def create(
        self,
        rules: RuleSet,
        specs: Sequence[str],
        seed: int | None = None,
        preset: str | None = None,
    ) -> GameSession:
        """Starts a game (see :class:`GameSession`).

        Safe to call from several threads: the place is taken under the lock before the
        game is built (outside it, since building agents may be slow), so at most
        ``max_games`` games are ever held.

        Raises:
            ApiError: 503 when ``max_games`` games are held; 400 for a bad spec.
        """
        self.expire()
        with self.lock:
            if len(self.games) + self.pending >= self.max_games:
                raise ApiError(
                    503,
                    f"too many games at once (the limit is {self.max_games}); close other "
                    "tabs or wait until idle games expire",
                )
            self.pending += 1
        session = None
        try:
            session = GameSession(
                rules, specs, seed=seed, preset=preset, record_dir=self.record_dir, clock=self.clock
            )
        except ValueError as exc:
            raise ApiError(400, str(exc)) from None
        finally:
            with self.lock:
                self.pending -= 1
                if session is not None:
                    self.games[session.id] = session
        return session

    def get(self, game_id: str) -> GameSession:
        """The game ``game_id``, marked as used now.

        Raises:
            ApiError: 404 if there is no such game or it expired.
        """
        self.expire()
        with self.lock:
            session = self.games.get(game_id)
        if session is None:
            raise ApiError(
                404,
                f"no game {game_id!r}: it expired (idle games are dropped after "
                f"{self.ttl:g} s) or never existed; start a new game",
            )
        session.touched = self.clock()
        return session

    def remove(self, game_id: str) -> None:
        """Drops a game (no error if it is gone already)."""
        with self.lock:
            self.games.pop(game_id, None)

    def add_replay(self, data: dict[str, Any]) -> str:
        """Keeps a replay's JSON (see :func:`replay_json`); returns its id."""
        rid = secrets.token_urlsafe(9)
        with self.lock:
            if len(self.replays) >= self.max_games:
                self.replays.pop(next(iter(self.replays)))
            self.replays[rid] = data
        return rid

    def get_replay(self, replay_id: str) -> dict[str, Any]:
        """A replay's JSON.

        Raises:
            ApiError: 404 if there is no such replay.
        """
        with self.lock:
            data = self.replays.get(replay_id)
        if data is None:
            raise ApiError(404, f"no replay {replay_id!r} on this server")
        return data
