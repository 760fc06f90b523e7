"""Game recordings as JSON lines: writing them while a game is played, and loading them.

A recording is one JSON object per line (format ``liars-dice-replay``, version
:data:`FORMAT_VERSION`):

1. a header: ``{"type": "header", "format", "version", "rules", "preset", "seed",
   "options", "seats", "source", ...}``; ``seed`` is what ``numpy.random.default_rng``
   was given (an int or a list of ints), ``options`` the keyword arguments of
   :meth:`~liars_env.engine.LiarsDiceGame.new_game`, ``seats`` one
   ``{"seat", "name", "spec"}`` per seat (``spec`` is ``"human"`` for a person);
2. one line per action: ``{"type": "action", "turn", "seat", "action", "text",
   "state", "probs"?, "reveal"?}``; ``state`` is the public state *before* the action
   (round, dice left, this round's bids, opener, palifico, the seat to act); ``probs``
   holds ``[action, probability]`` pairs when the acting agent exposes
   ``action_probabilities(view)``; ``calls`` holds a text agent's requests for the move
   (``llm:``: each with ``prompt``, ``reply``, ``move`` or ``error``, ``tokens``,
   ``latency_s``, ``cached``; a last ``{"fallback", "why", "legal"}`` entry when it
   fell back); a call carries ``reveal``: every active hand's dice,
   the count, who lost, gained or was eliminated and the dice left after it;
3. a final ``{"type": "end", "turns", "places", "winner"}``.

:func:`load_replay` re-simulates the game from ``(rules, seed, options, actions)`` with
the engine and checks every recorded state and reveal against it, so a file that was
edited or cut short raises :class:`ReplayError` naming the line and what is wrong.

Example:
    >>> import numpy as np, io
    >>> from liars_env import LiarsDiceGame, RuleSet
    >>> rules = RuleSet.preset("perudo")
    >>> game, rng = LiarsDiceGame(rules), np.random.default_rng(3)
    >>> state = game.new_game(rng)
    >>> rec = GameRecorder(game, seed=3, seats=["a", "b", "c"])
    >>> while not state.is_over:
    ...     _ = rec.apply(state, game.legal_actions(state)[-1], rng)
    >>> rec.finish(state)
    >>> replay = load_replay(io.StringIO(rec.text()))
    >>> replay.final_state == state, len(replay.frames) == len(state.actions) + 1
    (True, True)
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

import numpy as np

from liars_env.engine import GameState, LiarsDiceGame, RoundResult
from liars_env.rules import RuleSet

FORMAT = "liars-dice-replay"
"""The ``format`` field of every recording's header."""
FORMAT_VERSION = 1
"""The version this module writes and reads."""


class ReplayError(ValueError):
    """A recording that cannot be loaded: the message names the line and the problem."""


def action_probabilities(agent: Any, view: Any) -> list[list[float]] | None:
    """The agent's action distribution as sorted ``[action, p]`` pairs, or ``None``.

    Uses ``agent.action_probabilities(view)`` when the agent has one (checkpoints and
    the probability bots do); keeps the actions with ``p >= 1e-4``, rounded to 4 places.
    """
    method = getattr(agent, "action_probabilities", None)
    if not callable(method):
        return None
    probs = method(view)
    if hasattr(probs, "detach"):  # a torch tensor
        probs = probs.detach().cpu().numpy()
    probs = np.asarray(probs, dtype=float).ravel()
    pairs = [[int(a), round(float(probs[a]), 4)] for a in np.flatnonzero(probs >= 1e-4)]
    pairs.sort(key=lambda pair: -pair[1])
    return pairs


def agent_calls(agent: Any) -> list[dict[str, Any]] | None:
    """The request records of an agent's last move (``take_transcript()``), or ``None``.

    Text agents (``llm:``) keep one record per request until collected; other agents
    have none.
    """
    take = getattr(agent, "take_transcript", None)
    return take() if callable(take) else None


def public_state(state: GameState) -> dict[str, Any]:
    """What every player sees of ``state`` (no dice), as a JSON-able dict."""
    return {
        "round": state.round,
        "dice_left": list(state.dice_left),
        "bids": [list(b) for b in state.bids],
        "opener": state.opener,
        "palifico": state.palifico,
        "current_player": state.current_player,
    }


def reveal_record(result: RoundResult) -> dict[str, Any]:
    """The recorded part of a reveal (dice by seat, count, who lost or gained)."""
    return {
        "call": result.call,
        "dice": {str(seat): list(hand) for seat, hand in result.dice.items()},
        "count": result.count,
        "losers": list(result.losers),
        "gainers": list(result.gainers),
        "eliminated": list(result.eliminated),
        "dice_left": list(result.dice_left),
        "next_opener": result.next_opener,
    }


class GameRecorder:
    """Records one game, action by action, as the lines of a recording.

    Args:
        game: The engine the game is played with.
        seed: What the game's ``numpy.random.default_rng`` was built from.
        seats: One agent spec per seat (``"human"`` for a person).
        names: Display names per seat (default: ``player_0`` …).
        source: What played the game (``"liars-eval"``, ``"liars-play --web"``).
        options: The keyword arguments given to ``new_game`` (default: none).
        extra: More header fields (e.g. ``game_index``, ``agent_seeds``).
    """

    def __init__(
        self,
        game: LiarsDiceGame,
        seed: int | Sequence[int] | None,
        seats: Sequence[str],
        names: Sequence[str] | None = None,
        source: str = "liars_env",
        options: dict[str, Any] | None = None,
        extra: dict[str, Any] | None = None,
    ) -> None:
        rules = game.rules
        if len(seats) != rules.num_players:
            raise ValueError(f"need one spec per seat ({rules.num_players}), got {len(seats)}")
        self.game = game
        names = list(names) if names is not None else [f"player_{i}" for i in range(len(seats))]
        header = {
            "type": "header",
            "format": FORMAT,
            "version": FORMAT_VERSION,
            "rules": rules.to_dict(),
            "seed": seed if seed is None or isinstance(seed, int) else [int(s) for s in seed],
            "options": dict(options or {}),
            "seats": [
                {"seat": i, "name": name, "spec": spec}
                for i, (name, spec) in enumerate(zip(names, seats, strict=True))
            ],
            "source": source,
            **(extra or {}),
        }
        self.lines: list[dict[str, Any]] = [header]
        self.finished = False

    def apply(
        self,
        state: GameState,
        action: int,
        rng: np.random.Generator,
        probs: list[list[float]] | None = None,
        calls: list[dict[str, Any]] | None = None,
    ) -> RoundResult | None:
        """Applies ``action`` with the engine (as ``game.apply``) and records it.

        Args:
            state: The game; mutated.
            action: A legal action id.
            rng: The game's generator.
            probs: The acting agent's ``[action, p]`` pairs (see
                :func:`action_probabilities`), if known.
            calls: A text agent's request records for this move (see
                :func:`agent_calls`), if any.

        Returns:
            The engine's :class:`~liars_env.engine.RoundResult` for a call, else ``None``.
        """
        before = public_state(state)
        seat = state.current_player
        turn = len(state.actions)
        result = self.game.apply(state, action, rng)
        line: dict[str, Any] = {
            "type": "action",
            "turn": turn,
            "seat": seat,
            "action": int(action),
            "text": self.game.codec.describe(int(action)),
            "state": before,
        }
        if probs is not None:
            line["probs"] = probs
        if calls:
            line["calls"] = calls
        if result is not None:
            line["reveal"] = reveal_record(result)
        self.lines.append(line)
        return result

    def finish(self, state: GameState) -> None:
        """Adds the final line (places and winner) once the game is over."""
        if not state.is_over:
            raise ValueError("the game is not over yet")
        if not self.finished:
            self.lines.append(
                {
                    "type": "end",
                    "turns": len(state.actions),
                    "places": state.places(),
                    "winner": state.winner,
                }
            )
            self.finished = True

    def text(self) -> str:
        """The recording so far as JSON lines (one object per line, newline-terminated)."""
        return "".join(json.dumps(line, separators=(",", ":")) + "\n" for line in self.lines)

    def write(self, path: str | Path) -> Path:
        """Writes the recording to ``path`` atomically (through a temporary file)."""
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(path.name + ".tmp")
        tmp.write_text(self.text())
        os.replace(tmp, path)
        return path


# ----------------------------------------------------------------------------- loading
@dataclass
class Frame:
    """The game after ``turn`` actions (frame 0: before the first action).

    Attributes:
        turn: Actions applied so far.
        state: The full re-simulated state (every seat's dice).
        line: The recorded action line that led here (``None`` for frame 0).
        result: The engine's reveal if that action was a call.
    """

    turn: int
    state: GameState
    line: dict[str, Any] | None = None
    result: RoundResult | None = None


@dataclass
class Replay:
    """A loaded and verified recording.

    Attributes:
        header: The header line.
        rules: The rule set.
        game: An engine for the rules.
        frames: One :class:`Frame` per action, plus the start.
        end: The final line.
        source: Where the recording was read from.
    """

    header: dict[str, Any]
    rules: RuleSet
    game: LiarsDiceGame
    frames: list[Frame] = field(default_factory=list)
    end: dict[str, Any] = field(default_factory=dict)
    source: str = "<recording>"

    @property
    def final_state(self) -> GameState:
        """The state after the last action."""
        return self.frames[-1].state

    @property
    def actions(self) -> list[int]:
        """Every action of the game, in order."""
        return list(self.final_state.actions)


def load_replay(source: str | Path | TextIO | Iterable[str], name: str | None = None) -> Replay:
    """Loads a recording and verifies it by re-simulating the game with the engine.

    Args:
        source: A path, or an open text file / iterable of lines.
        name: What to call the source in messages (default: the path or file name).

    Raises:
        ReplayError: naming the line (1-based) and what is wrong: not JSON, a missing
            or wrong field, an illegal action, a state or reveal that differs from the
            re-simulated game, or a file cut short (no final line).
        OSError: if the file cannot be read.
    """
    if isinstance(source, (str, Path)):
        with open(source, encoding="utf-8") as handle:
            return _load_lines(list(handle), name or str(source))
    return _load_lines(list(source), name or getattr(source, "name", "<recording>"))


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def _parse(raw: str, number: int, where: str) -> dict[str, Any]:
    try:
        line = json.loads(raw, parse_constant=_no_constant)  # no NaN, Infinity
    except json.JSONDecodeError as exc:
        hint = "" if raw.endswith("\n") else " (the file may be cut short)"
        raise ReplayError(f"{where} line {number}: not valid JSON: {exc.msg}{hint}") from None
    except ValueError as exc:
        raise ReplayError(f"{where} line {number}: not valid JSON: {exc}") from None
    if not isinstance(line, dict) or not isinstance(line.get("type"), str):
        raise ReplayError(f"{where} line {number}: expected a JSON object with a 'type' field")
    return line


def _need(line: dict[str, Any], key: str, kind: type | tuple, number: int, where: str) -> Any:
    value = line.get(key)
    if not isinstance(value, kind) or isinstance(value, bool) and kind is int:
        raise ReplayError(
            f"{where} line {number}: {line['type']} line needs '{key}' "
            f"({getattr(kind, '__name__', kind)}), got {value!r}"
        )
    return value


def _load_lines(raw_lines: list[str], where: str) -> Replay:
    numbered = [(i + 1, raw) for i, raw in enumerate(raw_lines) if raw.strip()]
    if not numbered:
        raise ReplayError(f"{where} line 1: empty file; expected a header line")
    number, raw = numbered[0]
    header = _parse(raw, number, where)
    if header["type"] != "header" or header.get("format") != FORMAT:
        raise ReplayError(
            f"{where} line {number}: expected the header "
            f'{{"type": "header", "format": "{FORMAT}", ...}}, got type {header["type"]!r}'
        )
    if header.get("version") != FORMAT_VERSION:
        raise ReplayError(
            f"{where} line {number}: format version {header.get('version')!r} is not "
            f"supported (this reader knows version {FORMAT_VERSION})"
        )
    try:
        rules = RuleSet.from_dict(header.get("rules"))
        game = LiarsDiceGame(rules)
        rng = np.random.default_rng(header.get("seed"))
        state = game.new_game(rng, **dict(header.get("options") or {}))
    except (ValueError, TypeError) as exc:
        raise ReplayError(f"{where} line {number}: bad rules, seed or options: {exc}") from None
    seats = header.get("seats")
    if not isinstance(seats, list) or len(seats) != rules.num_players:
        raise ReplayError(
            f"{where} line {number}: 'seats' must list {rules.num_players} seats, got {seats!r}"
        )
    for index, seat in enumerate(seats):
        if not (
            isinstance(seat, dict)
            and type(seat.get("seat")) is int
            and seat["seat"] == index
            and isinstance(seat.get("spec"), str)
            and isinstance(seat.get("name", ""), (str, type(None)))
        ):
            raise ReplayError(
                f"{where} line {number}: 'seats' entry {index} must be "
                f'{{"seat": {index}, "name": str, "spec": str}}, got {seat!r}'
            )
    replay = Replay(header=header, rules=rules, game=game, source=where)
    replay.frames.append(Frame(turn=0, state=state.clone()))
    end = None
    for number, raw in numbered[1:]:
        line = _parse(raw, number, where)
        if end is not None:
            raise ReplayError(f"{where} line {number}: unexpected line after the final 'end' line")
        if line["type"] == "end":
            end = line
            _check_end(state, line, number, where)
            continue
        if line["type"] != "action":
            raise ReplayError(
                f"{where} line {number}: unknown line type {line['type']!r} "
                "(expected 'action' or 'end')"
            )
        _check_and_apply(game, state, rng, line, number, where, replay)
    if end is None:
        last = numbered[-1][0]
        raise ReplayError(
            f"{where} line {last}: the file ends after turn {len(state.actions)} without "
            "the final 'end' line (cut short?)"
            + ("" if state.is_over else "; the game is not over at that point")
        )
    replay.end = end
    return replay


def _check_and_apply(
    game: LiarsDiceGame,
    state: GameState,
    rng: np.random.Generator,
    line: dict[str, Any],
    number: int,
    where: str,
    replay: Replay,
) -> None:
    turn = _need(line, "turn", int, number, where)
    if turn != len(state.actions):
        raise ReplayError(
            f"{where} line {number}: turn {turn} out of order; expected turn {len(state.actions)}"
        )
    if state.is_over:
        raise ReplayError(f"{where} line {number}: an action after the game was over")
    seat = _need(line, "seat", int, number, where)
    if seat != state.current_player:
        raise ReplayError(
            f"{where} line {number}: seat {seat} acts, but in the re-simulated game seat "
            f"{state.current_player} is to act"
        )
    recorded = line.get("state")
    if recorded is not None and not isinstance(recorded, dict):
        raise ReplayError(f"{where} line {number}: 'state' must be an object, got {recorded!r}")
    if recorded is not None:
        _expect_same(recorded, public_state(state), "state", f"{where} line {number}")
    action = _need(line, "action", int, number, where)
    _check_probs(game, line.get("probs"), number, where)
    calls = line.get("calls")
    if calls is not None and not (
        isinstance(calls, list) and all(isinstance(c, dict) for c in calls)
    ):
        raise ReplayError(
            f"{where} line {number}: 'calls' must be a list of request records (objects), "
            f"got {calls!r:.120}"
        )
    reason = game.illegal_reason(state, action)
    if reason is not None:
        raise ReplayError(f"{where} line {number}: illegal action: {reason}")
    result = game.apply(state, action, rng)
    reveal = line.get("reveal")
    if result is None and reveal is not None:
        raise ReplayError(
            f"{where} line {number}: a reveal is recorded but action {action} "
            f"({game.codec.describe(action)}) is not a call"
        )
    if result is not None:
        if not isinstance(reveal, dict):
            raise ReplayError(
                f"{where} line {number}: the call {game.codec.describe(action)} has no "
                "recorded 'reveal'"
            )
        _expect_same(
            reveal,
            reveal_record(result),
            "reveal",
            f"{where} line {number}",
            " (dice, seed or actions edited?)",
        )
    replay.frames.append(Frame(turn=turn + 1, state=state.clone(), line=line, result=result))


def _check_probs(game: LiarsDiceGame, probs: Any, number: int, where: str) -> None:
    """Refuses ``probs`` unless absent or ``[action id, probability from 0 to 1]`` pairs."""
    if probs is None:
        return
    problem = None
    if not isinstance(probs, list):
        problem = "it is not a list"
    else:
        for pair in probs:
            if not isinstance(pair, list) or len(pair) != 2:
                problem = f"{pair!r} is not an [action, probability] pair"
            elif type(pair[0]) is not int or not 0 <= pair[0] < game.codec.num_actions:
                problem = f"{pair[0]!r} is not an action id 0-{game.codec.num_actions - 1}"
            elif (
                type(pair[1]) not in (int, float)
                or not math.isfinite(pair[1])
                or not 0 <= pair[1] <= 1
            ):
                problem = f"{pair[1]!r} is not a probability"
            if problem:
                break
    if problem:
        raise ReplayError(
            f"{where} line {number}: 'probs' must be [action, probability] pairs; {problem} "
            f"(got {probs!r:.120})"
        )


def _check_end(state: GameState, line: dict[str, Any], number: int, where: str) -> None:
    if not state.is_over:
        raise ReplayError(
            f"{where} line {number}: the final line comes after turn {len(state.actions)}, "
            "but the re-simulated game is not over (actions missing?)"
        )
    for key, value in (
        ("turns", len(state.actions)),
        ("places", state.places()),
        ("winner", state.winner),
    ):
        if line.get(key) != value:
            raise ReplayError(
                f"{where} line {number}: recorded {key}={line.get(key)!r} differs from the "
                f"re-simulated game's {value!r}"
            )


def _expect_same(
    recorded: dict[str, Any], actual: dict[str, Any], what: str, where: str, hint: str = ""
) -> None:
    """Raises :class:`ReplayError` at the first field of ``actual`` that ``recorded`` differs on."""
    for key, value in actual.items():
        if recorded.get(key) != value:
            raise ReplayError(
                f"{where}: recorded {what} {key}={recorded.get(key)!r} differs from the "
                f"re-simulated game's {value!r}{hint}"
            )
