"""What every text agent shares: prompt, read, re-prompt, fall back, record, sample.

A :class:`TextAgent` shows its seat's prompt (:func:`liars_env.text.view.prompt_text`)
to something that answers in words and reads the answer with
:func:`liars_env.text.reader.read_move`. A subclass supplies only :meth:`TextAgent.complete`
(one request: chat messages in, reply text out). Two do: ``llm:`` (an OpenAI-compatible
endpoint, :mod:`liars_env.agents.llm`) and ``textarena:`` (a TextArena agent,
:mod:`liars_env.agents.textarena_agent`).

* A reply that is not a legal move is answered with the reader's error (why, and the
  legal moves), up to ``retries`` times; then the agent plays the **fallback**
  (:data:`FALLBACKS`: ``rule``, :func:`fallback_action`: ``call`` when a bid stands, else
  the lowest legal bid; or ``random``, a legal move drawn uniformly, seeded by the game
  and the position, so that a weak model can be told from a weak fallback). A request
  that fails (after the subclass's own retries) falls back at once.
* A :class:`RequestBudget` shared by the agents of a run caps the real requests
  (re-prompts and retries included); past it a request raises
  :class:`BudgetExhaustedError`, which stops the run instead of falling back.
* Every request is recorded (prompt or re-prompt, reply, the move read or the error, and
  what the subclass adds: tokens, latency, cache) until :meth:`TextAgent.take_transcript`
  collects them; ``liars-eval --record`` puts them on the game record.
* :attr:`TextAgent.usage` counts decisions, requests, cache hits, re-prompts, retried and
  failed requests, fallbacks and tokens.
* :meth:`TextAgent.sample_moves` asks several views at once, ``concurrency`` at a time
  (what :func:`liars_env.solver.exploit_sampled` uses).
"""

from __future__ import annotations

import re
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np

from liars_env.engine import LiarsDiceGame, unknown_reveal
from liars_env.observation import ObservationLayout, PlayerView, view_of
from liars_env.text.reader import MoveError, read_move
from liars_env.text.view import legal_moves_text, move_text, prompt_text

ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
"""What an environment variable's name looks like (for ``api_key_env`` settings)."""

USAGE_KEYS = (
    "decisions",
    "requests",
    "cached",
    "reprompts",
    "request_retries",
    "failed_requests",
    "fallbacks",
    "prompt_tokens",
    "completion_tokens",
)
"""The counts of :attr:`TextAgent.usage`."""

FALLBACKS = ("rule", "random")
"""What a text agent plays when it gets no legal move: ``rule`` (:func:`fallback_action`)
or ``random`` (a uniformly drawn legal move, seeded by the game's seed and the position)."""


class BudgetExhaustedError(RuntimeError):
    """The run's request budget (``--max-calls``) is spent: the run stops, it does not fall back.

    Attributes:
        records: What the tool had measured when the budget ran out (set by the tool
            that catches it, e.g. the games finished so far).
    """

    def __init__(self, message: str, records: list | None = None) -> None:
        super().__init__(message)
        self.records = records or []


class RequestBudget:
    """A cap on real requests, shared by threads and (through ``counter``) processes.

    Args:
        limit: Most requests in all (re-prompts and retries of failed requests included;
            cached replies are not requests).
        counter: A ``multiprocessing.Value("q")`` to share the count between processes
            (default: a new one).

    Raises:
        ValueError: if ``limit`` is not a non-negative int.
    """

    def __init__(self, limit: int, counter: Any = None) -> None:
        if type(limit) is not int or limit < 0:
            raise ValueError(f"a request budget must be a non-negative int, got {limit!r}")
        import multiprocessing

        self.limit = limit
        self.counter = counter if counter is not None else multiprocessing.Value("q", 0)

    @property
    def used(self) -> int:
        """Requests taken so far."""
        return int(self.counter.value)

    def take(self, who: str) -> None:
        """Counts one request by ``who``.

        Raises:
            BudgetExhaustedError: if ``limit`` requests were already taken.
        """
        with self.counter.get_lock():
            if self.counter.value >= self.limit:
                raise BudgetExhaustedError(
                    f"{who}: the request budget of {self.limit} calls (--max-calls) is spent"
                )
            self.counter.value += 1


class RequestRefusedError(ValueError):
    """A request that cannot succeed by retrying: a bad key, model name or request.

    A ``ValueError``, so the command-line tools report it as bad input (exit status 2).
    """


def fallback_action(view: PlayerView) -> int:
    """The documented fallback move: ``call`` when a bid stands, else the lowest legal bid."""
    if view.bids and view.mask[view.codec.challenge]:
        return view.codec.challenge
    return int(view.legal_actions[0])


class TextAgent:
    """The shared part of text agents (see the module docstring).

    Args:
        name: The agent's name.
        system: The system prompt.
        retries: Re-prompts after a bad reply.
        concurrency: Most requests in flight at once in :meth:`sample_moves`.
        samples: Answers per view in :meth:`action_probabilities_batch`.
        temperature: Above 0, each request of a prompt within a game is a new draw
            (numbered, for caches); at 0 every request of a prompt is draw 0.
        fallback: One of :data:`FALLBACKS`.

    Raises:
        ValueError: for a ``fallback`` not in :data:`FALLBACKS`.
    """

    def __init__(
        self,
        name: str,
        system: str,
        *,
        retries: int = 2,
        concurrency: int = 1,
        samples: int = 1,
        temperature: float = 0.0,
        fallback: str = "rule",
    ) -> None:
        if fallback not in FALLBACKS:
            raise ValueError(
                f"text agent {name!r}: fallback={fallback!r}; expected one of "
                f"{', '.join(FALLBACKS)}"
            )
        self.fallback = fallback
        self.budget: RequestBudget | None = None
        """The run's request budget, if the tool running the agent set one."""
        self.name = name
        self.system = system
        self.retries, self.concurrency, self.samples = retries, concurrency, samples
        self.temperature = temperature
        self._lock = threading.Lock()
        self._transcript: list[dict[str, Any]] = []
        self._draws: dict[str, int] = {}
        self._seed: int | None = None
        self.usage: dict[str, int] = dict.fromkeys(USAGE_KEYS, 0)
        """Counts since the agent was built (:data:`USAGE_KEYS`)."""

    def complete(self, messages: list[dict[str, str]], draw: int, record: dict[str, Any]) -> str:
        """One request: the reply to ``messages`` (a subclass's job).

        Args:
            messages: Chat messages: the system prompt, the prompt, and for a re-prompt
                the earlier reply and the error.
            draw: Which draw of this prompt this is (0 at temperature 0).
            record: The request's record, to add ``tokens``, ``latency_s``, ``cached``.

        Raises:
            RequestRefusedError: if retrying cannot help (the run should stop).
            Exception: any other failure, after the subclass's own retries: the agent
                then plays the fallback.
        """
        raise NotImplementedError

    def scrub(self, text: str) -> str:
        """``text`` without secrets (a subclass with a key removes it)."""
        return text

    # ------------------------------------------------------------------ agent API
    def reset(self, seed: int | None = None) -> None:
        """Starts a game: ``seed`` is the game's (it names the draws above temperature 0)."""
        with self._lock:
            self._seed = seed
            self._draws.clear()

    def act(self, view: PlayerView) -> int:
        """The agent's legal move at ``view`` (the fallback if it gives none)."""
        action, records = self.decide(view, draw=self._next_draw(view))
        with self._lock:
            self._transcript.extend(records)
        return action

    def take_transcript(self) -> list[dict[str, Any]]:
        """The requests since the last call, as JSON-able records (and forgets them)."""
        with self._lock:
            out, self._transcript = self._transcript, []
        return out

    def action_probabilities_batch(self, views: list[PlayerView]) -> np.ndarray:
        """Per view, the share of ``samples`` answers that chose each action.

        At temperature 0 with one sample this is the agent's answer as a one-hot row.
        """
        moves = self.sample_moves(views, self.samples)
        out = np.zeros((len(views), views[0].codec.num_actions if views else 0))
        for row, picks in enumerate(moves):
            for action in picks:
                out[row, action] += 1.0 / len(picks)
        return out

    def sample_moves(self, views: list[PlayerView], samples: int) -> list[list[int]]:
        """``samples`` moves per view (draws 0 … samples − 1), ``concurrency`` at a time."""
        jobs = [(i, draw) for i in range(len(views)) for draw in range(samples)]
        out: list[list[int]] = [[] for _ in views]
        with ThreadPoolExecutor(max_workers=self.concurrency) as pool:
            results = pool.map(lambda job: self.decide(views[job[0]], job[1])[0], jobs)
            for (i, _), action in zip(jobs, results, strict=True):
                out[i].append(action)
        return out

    def act_batch(self, env: Any, rows: Any, generator: Any = None) -> Any:
        """Moves for the acting players of a batched table's games ``rows``, concurrently.

        What the ladder and the league call (as for ``search:`` members): up to
        ``concurrency`` requests at once across the games. The batch keeps no history,
        so the prompts say the last reveal is not recorded; the requests are counted in
        :attr:`usage` but not kept as records. ``generator`` is unused (the agent
        samples by itself).
        """
        import torch

        if getattr(self, "_batch_rules", None) != env.rules:
            self._batch_game = LiarsDiceGame(env.rules)
            self._batch_layout = ObservationLayout(env.rules)
            self._batch_rules = env.rules
        views = []
        for state in env.states(rows):
            state.last_reveal = unknown_reveal()
            views.append(view_of(self._batch_game, self._batch_layout, state))
        with ThreadPoolExecutor(max_workers=self.concurrency) as pool:
            moves = list(pool.map(lambda v: self.decide(v, self._next_draw(v))[0], views))
        return torch.as_tensor(moves, dtype=torch.long, device=env.device)

    def decide(self, view: PlayerView, draw: int) -> tuple[int, list[dict[str, Any]]]:
        """The move at ``view`` and the records of the requests it took."""
        messages = [
            {"role": "system", "content": self.system},
            {"role": "user", "content": prompt_text(view)},
        ]
        records: list[dict[str, Any]] = []
        self.count("decisions")
        for attempt in range(self.retries + 1):
            record: dict[str, Any] = {"attempt": attempt, "prompt": messages[-1]["content"]}
            records.append(record)
            try:
                reply = self.complete(messages, draw, record)
            except RequestRefusedError:
                raise
            except BudgetExhaustedError:
                self.count("decisions", -1)  # not decided: the run stops here
                raise
            except Exception as exc:  # the request failed after its retries
                record["error"] = self.scrub(f"request failed: {describe_error(exc)}")
                break
            record["reply"] = reply
            try:
                action = read_move(reply, view)
            except MoveError as exc:
                record["error"] = str(exc)
                if attempt < self.retries:
                    self.count("reprompts")
                    messages = [
                        *messages,
                        {"role": "assistant", "content": reply},
                        {
                            "role": "user",
                            "content": f"That reply cannot be played: {exc.reason}. "
                            f"{exc.legal} Answer again; end with 'Final answer: <move>'.",
                        },
                    ]
                continue
            record["move"] = move_text(view.codec, action)
            return action, records
        action = self.fallback_move(view, draw)
        self.count("fallbacks")
        records.append(
            {
                "fallback": move_text(view.codec, action),
                "rule": self.fallback,
                "why": "no legal move after the re-prompts"
                if "reply" in records[-1]
                else "the request failed",
                "legal": legal_moves_text(view),
            }
        )
        return action, records

    def fallback_move(self, view: PlayerView, draw: int = 0) -> int:
        """The move played when the agent gives none (its :data:`FALLBACKS` setting).

        ``random`` draws a legal move uniformly, seeded by the game's seed, the position
        and ``draw``, so a rerun falls back the same way.
        """
        if self.fallback == "rule":
            return fallback_action(view)
        import hashlib

        digest = hashlib.sha256(prompt_text(view).encode()).digest()
        rng = np.random.default_rng([self._seed or 0, draw, int.from_bytes(digest[:8], "little")])
        return int(rng.choice(view.legal_actions))

    def count(self, key: str, amount: int = 1) -> None:
        """Adds ``amount`` to ``usage[key]`` (thread-safe)."""
        with self._lock:
            self.usage[key] += amount

    # ------------------------------------------------------------------ internals
    def _next_draw(self, view: PlayerView) -> int:
        if self.temperature <= 0:
            return 0
        key = prompt_text(view)
        with self._lock:
            draw = self._draws.get(key, 0)
            self._draws[key] = draw + 1
        return draw


def describe_error(exc: BaseException) -> str:
    """``HTTP 429: ...`` for an HTTP error, else ``TypeName: ...`` (200 characters at most)."""
    status = getattr(exc, "status_code", None)
    head = f"HTTP {status}" if status else type(exc).__name__
    return f"{head}: {str(exc)[:200]}"
