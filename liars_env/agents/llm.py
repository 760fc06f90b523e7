"""``llm:MODEL``: a language model behind any OpenAI-compatible chat-completions endpoint.

The agent shows the model the prompt of its seat's position
(:func:`liars_env.text.view.prompt_text`: the rules in brief, its own dice, every
player's dice count, this round's bids, the last reveal, the legal moves) and reads the
reply with :func:`liars_env.text.reader.read_move`.

Spec: ``llm:MODEL?key=value&key=value``, e.g.
``llm:qwen2.5:7b?base_url=http://127.0.0.1:11434/v1&temperature=0`` (``MODEL`` may hold
``:`` and ``/``; the settings follow the last ``?``, separated by ``&``):

==================  ===========  ==================================================
setting             default      meaning
==================  ===========  ==================================================
``base_url``        (OpenAI)     the endpoint, e.g. vLLM's ``http://HOST:8000/v1``
``api_key_env``     (see right)  the environment variable holding the API key
                                 (default: ``OPENAI_API_KEY`` without a ``base_url``;
                                 with one, no variable: the key ``none``)
``temperature``     0            sampling temperature
``max_tokens``      512          most tokens per reply
``retries``         2            re-prompts (with the error) after a bad reply
``backoff``         4            retries of a failed request (timeout, dropped
                                 connection, HTTP 429 or 5xx, a broken body)
``backoff_base``    1.0          seconds before the first of those; doubled each
                                 time, at most 30
``timeout``         (see right)  seconds per request; default
                                 ``30 + 0.25 * max_tokens`` (158 s at 512: a
                                 reply written at 4 tokens a second still arrives)
``system``          (built in)   a file holding the system prompt
``cache``           (none)       a folder for the response cache
``concurrency``     (see right)  most requests in flight at once from this agent;
                                 default: the slots the server reports
                                 (llama.cpp's ``GET /props``), else 4
``samples``         1            answers per position for ``action_probabilities``
                                 (exploitability); 1 at temperature 0 is exact
``fallback``        ``rule``     the move played without a legal answer: ``rule``
                                 (call, else the lowest bid) or ``random``
==================  ===========  ==================================================

**Never silent.** A retry says on standard error what failed and how long it waits
(``llm:m: HTTP 500 ...; retry 1 of 4 in 1.0 s``), and a request still unanswered after
:data:`WAIT_NOTICE_S` seconds says what it waits for, every :data:`WAIT_NOTICE_S`
seconds, until the reply or the ``timeout``.

**Preflight.** :func:`preflight` sends one request before a run and turns an endpoint
that cannot play (unreachable, HTTP 4xx or 5xx, an empty reply, a reply that repeats the
prompt, a reply without a readable move) into a :class:`PreflightError` naming the
endpoint and the likely cause; ``liars-eval`` and ``liars-solve`` run it for every
``llm:`` endpoint (``--no-preflight`` skips it).

**Fallback.** When ``retries`` re-prompts still give no legal move, or the requests
fail after ``backoff`` retries, the agent plays the *fallback*: ``call`` when a bid
stands, else the lowest legal opening bid. Each fallback is counted (:attr:`usage`,
``fallbacks``) and reported beside the win rates by ``liars-eval``. An HTTP 400, 401,
403 or 404 (a bad request, key or model name) is not retried: it raises
:class:`LLMError`.

**Records.** Every request of a decision is kept until :meth:`LLMAgent.take_transcript`
collects it: the prompt (the first) or the re-prompt, the reply, the move read (or the
error), tokens, latency and whether it came from the cache. ``liars-eval --record``
saves them on each move of the game record, beside the move.

**Cache.** With ``cache=DIR`` each reply is stored under a hash of the model, the
endpoint, the messages, the sampling settings and a draw index (a move at temperature 0
is draw 0; above 0 the game's seed and how often this game has asked the prompt, so
reruns draw the same answers; sample ``i`` of an exploitability run is draw ``i``),
written atomically (a temporary file, then a rename): a rerun pays
nothing twice, and a crashed run resumes where it stopped.

**Secrets.** The API key is read from the named variable when the agent is built and
kept only inside the client: it is in no record, result, ``repr`` or error message
(messages are scrubbed of it).

**Concurrency.** :meth:`LLMAgent.action_probabilities_batch` (what the exploitability
computation calls on a whole tree depth) sends up to ``concurrency`` requests at once.
``liars-eval`` plays a process's games one after another, so there games run
concurrently through ``--workers`` processes, each with its own agent (by default as
many as the endpoint reports slots, else 1: see :func:`endpoint_slots`).

**Tokens.** :meth:`LLMAgent.tokens_per_call` estimates a request's prompt at
:data:`CHARS_PER_TOKEN` characters a token (real tokenizers often take fewer characters
a token than the common rule of 4) until a reply reports the server's ``usage``; from
then on it uses the characters per token measured on that reply
(:attr:`LLMAgent.token_source` says which).
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from liars_env.agents.text_agent import (
    ENV_NAME,
    FALLBACKS,
    RequestRefusedError,
    TextAgent,
    describe_error,
)
from liars_env.observation import PlayerView
from liars_env.rules import RuleSet
from liars_env.text.view import PROMPT_VERSION, legal_moves_text, prompt_text

SYSTEM_PROMPT = (
    "You are an expert Liar's Dice player. Each turn you are shown the rules, your own "
    "dice, the public state of the table and the legal moves. Play to win the game. Reply "
    "with your move; you may reason first, but end with a line 'Final answer: <move>'."
)
"""The default system prompt (``system=FILE`` replaces it)."""

_NO_RETRY_STATUS = (400, 401, 403, 404, 422)

WAIT_NOTICE_S = 5.0
"""Seconds a request waits before the agent says so on standard error (and again each
time this long passes)."""

CHARS_PER_TOKEN = 3.0
"""Characters a token in the estimate of a prompt's tokens before the server reports any."""

DEFAULT_CONCURRENCY = 4
"""Requests in flight when the endpoint does not report its slots."""


def default_timeout(max_tokens: int) -> float:
    """The default ``timeout``: ``30 + 0.25 * max_tokens`` seconds.

    Thirty seconds for the prompt and the queue, plus a reply of ``max_tokens`` written
    at 4 tokens a second (a small model on a CPU).

    Example:
        >>> default_timeout(512)
        158.0
    """
    return 30.0 + 0.25 * max_tokens


LLMError = RequestRefusedError
"""A request that cannot succeed by retrying (a bad key, model or request): an alias of
:class:`~liars_env.agents.text_agent.RequestRefusedError`."""


@dataclass(frozen=True)
class LLMSettings:
    """The settings of an ``llm:`` spec (see the module docstring)."""

    base_url: str | None = None
    api_key_env: str | None = None
    temperature: float = 0.0
    max_tokens: int = 512
    retries: int = 2
    backoff: int = 4
    backoff_base: float = 1.0
    timeout: float | None = None
    system: str | None = None
    cache: str | None = None
    concurrency: int | None = None
    samples: int = 1
    fallback: str = "rule"

    @property
    def request_timeout(self) -> float:
        """``timeout``, or :func:`default_timeout` of ``max_tokens`` when it is unset."""
        return self.timeout if self.timeout is not None else default_timeout(self.max_tokens)

    def public(self) -> dict[str, Any]:
        """The settings as a JSON-able dict for result files (no key: only its variable's name).

        ``timeout`` is the one in force; ``concurrency`` is ``None`` when left to the
        endpoint.
        """
        out = {f.name: getattr(self, f.name) for f in fields(self)}
        out["timeout"] = self.request_timeout
        return out


_LIMITS = {
    "temperature": (0.0, 2.0),
    "max_tokens": (1, 1_000_000),
    "retries": (0, 100),
    "backoff": (0, 100),
    "backoff_base": (0.0, 600.0),
    "timeout": (0.001, 3600.0),
    "concurrency": (1, 1024),
    "samples": (1, 100_000),
}


def parse_llm_spec(spec: str) -> tuple[str, LLMSettings]:
    """The model name and the settings of ``llm:MODEL[?key=value&...]``.

    Example:
        >>> model, settings = parse_llm_spec("llm:llama3.1:8b?temperature=0.7&retries=1")
        >>> model, settings.temperature, settings.retries
        ('llama3.1:8b', 0.7, 1)

    Raises:
        ValueError: for a spec without a model, an unknown setting, or a value of the
            wrong type or out of range, naming it and what is expected.
    """
    name, colon, rest = spec.partition(":")
    if name != "llm" or not colon:
        raise ValueError(f"an llm spec is 'llm:MODEL[?key=value&...]', got {spec!r}")
    model, _, items = rest.rpartition("?") if "?" in rest else (rest, "", "")
    if not model:
        raise ValueError(f"llm spec {spec!r} names no model; expected e.g. 'llm:gpt-4o-mini'")
    known = {f.name: f for f in fields(LLMSettings)}
    values: dict[str, Any] = {}
    for item in items.split("&") if items else []:
        key, eq, value = (part.strip() for part in item.partition("="))
        if key not in known:
            raise ValueError(
                f"llm spec {spec!r}: unknown setting {key!r}; expected key=value with key one "
                f"of {', '.join(known)}"
            )
        if not eq or not value:
            raise ValueError(f"llm spec {spec!r}: setting {key!r} needs a value (key=value)")
        if key in _LIMITS:
            kind = type(_LIMITS[key][0])
            try:
                number = kind(value)
            except ValueError:
                what = "an int" if kind is int else "a number"
                raise ValueError(f"llm spec {spec!r}: {key}={value!r} is not {what}") from None
            lo, hi = _LIMITS[key]
            if not (lo <= number <= hi) or (kind is float and not math.isfinite(number)):
                raise ValueError(f"llm spec {spec!r}: {key}={value!r} must lie in [{lo}, {hi}]")
            values[key] = number
        else:
            values[key] = value
    env = values.get("api_key_env")
    if values.get("fallback", "rule") not in FALLBACKS:
        raise ValueError(
            f"llm spec {spec!r}: fallback={values['fallback']!r}; expected one of "
            f"{', '.join(FALLBACKS)}"
        )
    if env is not None and not ENV_NAME.fullmatch(env):
        raise ValueError(
            f"llm spec {spec!r}: api_key_env={env!r} is not an environment variable name "
            "(letters, digits and _, not starting with a digit)"
        )
    return model, LLMSettings(**values)


class LLMAgent(TextAgent):
    """A language model as a player (see the module docstring).

    Args:
        model: The model name the endpoint knows.
        rules: The variant (only to check views against).
        settings: The spec's settings.
        seed: The game's seed (part of the cache key above temperature 0).
        name: The agent's name (default: ``llm:MODEL``).

    Raises:
        ValueError: if the key's environment variable is unset where a key is needed, or
            the system-prompt file cannot be read.
        ImportError: if ``openai`` is not installed (the ``llm`` extra).
    """

    def __init__(
        self,
        model: str,
        rules: RuleSet,
        settings: LLMSettings | None = None,
        seed: int | None = None,
        name: str | None = None,
    ) -> None:
        try:
            import openai
        except ImportError as exc:
            raise ImportError(
                "the llm: agent needs the openai package: pip install 'liars-dice[llm]' "
                "(or pip install openai)"
            ) from exc
        self._openai = openai
        self.model = model
        self.rules = rules
        self.settings = settings = settings or LLMSettings()
        system = SYSTEM_PROMPT
        if settings.system is not None:
            try:
                system = Path(settings.system).read_text(encoding="utf-8")
            except OSError as exc:
                raise ValueError(
                    f"llm agent: cannot read the system prompt file system={settings.system!r}: "
                    f"{exc.strerror}"
                ) from None
        self._concurrency: int | None = settings.concurrency
        super().__init__(
            name or f"llm:{model}",
            system,
            retries=settings.retries,
            concurrency=settings.concurrency,
            samples=settings.samples,
            temperature=settings.temperature,
            fallback=settings.fallback,
        )
        self._seed = seed
        # a key goes only where it was meant to: OPENAI_API_KEY to OpenAI's own endpoint
        env = settings.api_key_env or ("OPENAI_API_KEY" if settings.base_url is None else None)
        key = os.environ.get(env) if env else "none"  # local servers take any key
        if not key:
            raise ValueError(
                f"llm agent {self.name!r}: the environment variable {env} that should hold "
                "the API key is not set (name another with api_key_env=NAME)"
            )
        self._secret = key
        self._client = openai.OpenAI(
            base_url=settings.base_url,
            api_key=key,
            timeout=settings.request_timeout,
            max_retries=0,
        )
        self._gate: threading.Semaphore | None = None
        self._chars_per_token: float | None = None
        self.notify = notice
        """Called with each line the agent has to say (retries, long waits); default:
        :func:`notice`, which prints to standard error."""

    @property
    def concurrency(self) -> int:
        """Most requests in flight: the setting, else the endpoint's slots, else 4."""
        if self._concurrency is None:
            slots = endpoint_slots(self.settings.base_url)
            self._concurrency = slots or DEFAULT_CONCURRENCY
        return self._concurrency

    @concurrency.setter
    def concurrency(self, value: int | None) -> None:
        self._concurrency = value

    @property
    def endpoint(self) -> str:
        """The endpoint's URL (OpenAI's own when ``base_url`` is unset)."""
        return self.settings.base_url or "https://api.openai.com/v1"

    @property
    def token_source(self) -> str:
        """``measured`` once a reply reported the server's token usage, else ``estimate``."""
        return "measured" if self._chars_per_token else "estimate"

    def __repr__(self) -> str:
        s = self.settings
        return (
            f"LLMAgent(model={self.model!r}, base_url={s.base_url!r}, "
            f"temperature={s.temperature}, retries={s.retries})"
        )

    def prompt_tokens(self, view: PlayerView) -> int:
        """The prompt's tokens at ``view`` (system prompt included; see :attr:`token_source`)."""
        chars = len(self.system) + len(prompt_text(view))
        return math.ceil(chars / (self._chars_per_token or CHARS_PER_TOKEN))

    def tokens_per_call(self, view: PlayerView) -> int:
        """An upper bound of a first request's tokens at ``view``: the prompt plus ``max_tokens``.

        The prompt's tokens are an estimate until a reply reports the server's usage
        (:attr:`token_source`).
        """
        return self.prompt_tokens(view) + self.settings.max_tokens

    def tokens_per_decision(self, view: PlayerView) -> int:
        """An upper bound of one decision's tokens at ``view``, re-prompts included.

        Attempt ``a`` (0 … ``retries``) sends the prompt plus ``a`` earlier replies of at
        most ``max_tokens`` and ``a`` error messages (each about as long as the legal
        moves' list), and gets at most ``max_tokens`` back.
        """
        m = self.settings.max_tokens
        cpt = self._chars_per_token or CHARS_PER_TOKEN
        error = math.ceil((len(legal_moves_text(view)) + 120) / cpt)
        prompt = self.prompt_tokens(view)
        return sum(prompt + a * (m + error) + m for a in range(self.retries + 1))

    def _cache_key(self, messages: list[dict[str, str]], draw: int) -> str:
        s = self.settings
        data = {
            "prompt_version": PROMPT_VERSION,
            "model": self.model,
            "base_url": s.base_url,
            "messages": messages,
            "temperature": s.temperature,
            "max_tokens": s.max_tokens,
            "draw": draw,
            "seed": self._seed if s.temperature > 0 else None,
        }
        return hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()

    def request(self, messages: list[dict[str, str]]) -> tuple[str, dict[str, int]]:
        """One request to the endpoint, no retry: the reply text and its reported tokens.

        Says on standard error (``notify``) when the reply takes longer than
        :data:`WAIT_NOTICE_S` seconds.

        Raises:
            Exception: what the ``openai`` client raises (``openai.APIError``: timeouts,
                connections, HTTP errors), or ``ValueError``, ``AttributeError`` or
                ``IndexError`` for a body without a reply.
        """
        s = self.settings
        with self._waiting():
            response = self._client.chat.completions.create(
                model=self.model,
                messages=messages,
                temperature=s.temperature,
                max_tokens=s.max_tokens,
            )
        reply = response.choices[0].message.content or ""
        usage = getattr(response, "usage", None)
        tokens = {
            "prompt": int(getattr(usage, "prompt_tokens", 0) or 0),
            "completion": int(getattr(usage, "completion_tokens", 0) or 0),
        }
        if tokens["prompt"] > 0:
            chars = sum(len(m["content"]) for m in messages)
            with self._lock:
                self._chars_per_token = chars / tokens["prompt"]
        return reply, tokens

    def complete(self, messages: list[dict[str, str]], draw: int, record: dict[str, Any]) -> str:
        """The reply text: from the cache, or from the endpoint (with bounded backoff).

        Raises:
            liars_env.agents.text_agent.RequestRefusedError: (``LLMError``) for HTTP 400,
                401, 403, 404 or 422 (retrying cannot help).
            liars_env.agents.text_agent.BudgetExhaustedError: when the run's ``budget``
                is spent.
            Exception: the last failure, after ``backoff`` retries.
        """
        s = self.settings
        path = None
        if s.cache:
            key = self._cache_key(messages, draw)
            path = Path(s.cache) / key[:2] / f"{key}.json"
            try:
                hit = json.loads(path.read_text(encoding="utf-8"))
                record.update(cached=True, tokens=hit["tokens"], latency_s=0.0)
                self.count("cached")
                return hit["reply"]
            except (OSError, ValueError, KeyError, TypeError):
                pass
        start = time.perf_counter()
        for retry in range(s.backoff + 1):
            if self.budget is not None:
                self.budget.take(self.name)
            try:
                with self._slot():
                    self.count("requests")
                    reply, tokens = self.request(messages)
                break
            except self._openai.APIStatusError as exc:
                if exc.status_code in _NO_RETRY_STATUS:
                    raise LLMError(
                        self.scrub(
                            f"llm agent {self.name!r}: the endpoint refused the request: "
                            f"{describe_error(exc)}"
                        )
                    ) from None
                failure: Exception = exc
            except (self._openai.APIError, ValueError, AttributeError, IndexError) as exc:
                failure = exc  # timeout, connection, a broken body
            self.count("request_retries" if retry < s.backoff else "failed_requests")
            if retry == s.backoff:
                record["latency_s"] = round(time.perf_counter() - start, 4)
                if s.backoff:
                    self.notify(
                        self.scrub(
                            f"{self.name}: {describe_error(failure)}; gave up after "
                            f"{s.backoff} retries: this move falls back ({s.fallback})"
                        )
                    )
                raise failure
            wait = min(30.0, s.backoff_base * 2**retry)
            self.notify(
                self.scrub(
                    f"{self.name}: {describe_error(failure)[:120]}; retry {retry + 1} of "
                    f"{s.backoff} in {wait:.1f} s"
                )
            )
            time.sleep(wait)
        record.update(cached=False, tokens=tokens, latency_s=round(time.perf_counter() - start, 4))
        self.count("prompt_tokens", tokens["prompt"])
        self.count("completion_tokens", tokens["completion"])
        if path is not None:
            _write_atomic(path, {"reply": reply, "tokens": tokens})
        return reply

    def _slot(self) -> threading.Semaphore:
        """The semaphore that keeps at most :attr:`concurrency` requests in flight."""
        with self._lock:
            if self._gate is None:
                self._gate = threading.Semaphore(self.concurrency)
            return self._gate

    @contextmanager
    def _waiting(self) -> Iterator[None]:
        """Says on ``notify`` what a request waits for, every :data:`WAIT_NOTICE_S` s."""
        done = threading.Event()
        timeout = self.settings.request_timeout

        def watch() -> None:
            waited = 0.0
            while not done.wait(WAIT_NOTICE_S):
                waited += WAIT_NOTICE_S
                self.notify(
                    f"{self.name}: waiting for a reply from {self.endpoint}: {waited:.0f} s "
                    f"so far (timeout {timeout:g} s)"
                )

        watcher = threading.Thread(target=watch, daemon=True)
        watcher.start()
        try:
            yield
        finally:
            done.set()

    def scrub(self, text: str) -> str:
        """``text`` with the API key replaced by ``***``."""
        return text.replace(self._secret, "***") if len(self._secret) >= 4 else text


class PreflightError(ValueError):
    """An endpoint that cannot play, found by :func:`preflight`: one line, endpoint and cause.

    A ``ValueError``, so the command-line tools exit with status 2.
    """


@dataclass
class PreflightReport:
    """What the preflight request of an ``llm:`` agent found (the endpoint can play).

    Attributes:
        name: The agent's name (its spec).
        endpoint: The endpoint's URL.
        latency_s: Seconds the request took.
        reply: The reply's text (its first 500 characters).
        move: The move read from it.
        prompt_tokens: The prompt's tokens as the server reported them (0 if it did not).
        completion_tokens: The reply's tokens as reported.
        slots: Requests the server serves at once, if it says (:func:`endpoint_slots`).
        concurrency: The agent's concurrency after the check.
        cached: Whether the reply came from the cache (no request was sent).
    """

    name: str
    cached: bool
    endpoint: str
    latency_s: float
    reply: str
    move: str
    prompt_tokens: int
    completion_tokens: int
    slots: int | None
    concurrency: int

    def line(self) -> str:
        """One line for the console."""
        slots = f"{self.slots} slots" if self.slots else "slots not reported"
        when = "earlier (from the cache)" if self.cached else f"in {self.latency_s:.1f} s"
        return (
            f"preflight {self.name}: {self.endpoint} answered {self.move!r} {when} "
            f"({self.prompt_tokens} prompt tokens, "
            f"{self.completion_tokens} reply tokens; {slots}; concurrency {self.concurrency})"
        )


def preflight(agent: LLMAgent, rules: RuleSet) -> PreflightReport:
    """Sends one request for the opening position of ``rules`` and checks the reply.

    The request bypasses the retries: it shows what the endpoint does now. With a
    ``cache``, a reply already kept for this prompt is checked instead (a rerun costs
    nothing), and a new one is kept. The request is counted in ``usage``
    (``requests``, tokens) but not in a run's request budget.

    Args:
        agent: The agent to check.
        rules: The variant it is about to play.

    Returns:
        What the request found, when the endpoint can play.

    Raises:
        PreflightError: naming the endpoint and the likely cause, when nothing answers,
            the server answers HTTP 4xx or 5xx, or the reply is empty, repeats the prompt
            or holds no legal move.
    """
    import numpy as np

    from liars_env.engine import LiarsDiceGame
    from liars_env.observation import ObservationLayout, view_of
    from liars_env.text.reader import MoveError, read_move
    from liars_env.text.view import move_text

    game = LiarsDiceGame(rules)
    rng = np.random.default_rng(0)
    state = game.new_game(rng, first_player=0)
    game.apply(state, int(game.codec.encode_bid(1, rules.faces)), rng)  # a bid stands
    view = view_of(game, ObservationLayout(rules), state)
    prompt = prompt_text(view)
    messages = [{"role": "system", "content": agent.system}, {"role": "user", "content": prompt}]
    where = f"{agent.name.partition('?')[0]} at {agent.endpoint}"
    openai = agent._openai
    start = time.perf_counter()
    path = None
    if agent.settings.cache:
        key = agent._cache_key(messages, 0)
        path = Path(agent.settings.cache) / key[:2] / f"{key}.json"
    try:
        hit = json.loads(path.read_text(encoding="utf-8")) if path else None
        reply, tokens = hit["reply"], hit["tokens"]
        cached = True
    except (OSError, ValueError, KeyError, TypeError):
        cached = False
    try:
        if not cached:
            agent.count("requests")
            reply, tokens = agent.request(messages)
    except openai.APITimeoutError:
        raise PreflightError(
            f"preflight {where}: no reply within the timeout of "
            f"{agent.settings.request_timeout:g} s: a slow or overloaded server "
            "(raise timeout=, lower max_tokens=)"
        ) from None
    except openai.APIConnectionError as exc:
        raise PreflightError(
            agent.scrub(
                f"preflight {where}: unreachable, or the connection dropped "
                f"({describe_error(exc)[:80]}): is the server running, and is base_url right "
                "(host, port, and usually a /v1 path)?"
            )
        ) from None
    except openai.APIStatusError as exc:
        code = exc.status_code
        cause = {
            401: "the key was refused: set the variable api_key_env= names",
            403: "the key was refused: set the variable api_key_env= names",
            404: f"no such model {agent.model!r} or path: check the model name and base_url "
            "(usually ending in /v1)",
            429: "rate limited: wait, or lower concurrency= and --workers",
        }.get(code)
        if cause is None:
            cause = (
                "the server failed: read its log (a model without a chat template, or out "
                "of memory)"
                if code >= 500
                else "the request was rejected: check the model name and that the server "
                "serves chat completions"
            )
        raise PreflightError(
            agent.scrub(f"preflight {where}: HTTP {code}: {cause} ({str(exc)[:100]})")
        ) from None
    except (openai.APIError, ValueError, AttributeError, IndexError) as exc:
        raise PreflightError(
            agent.scrub(
                f"preflight {where}: the reply is not a chat completion "
                f"({describe_error(exc)[:100]}): is base_url an OpenAI-compatible endpoint?"
            )
        ) from None
    latency = time.perf_counter() - start
    if not cached:
        agent.count("prompt_tokens", tokens["prompt"])
        agent.count("completion_tokens", tokens["completion"])
    elif tokens.get("prompt"):  # the kept reply's usage measures the tokenizer as well
        agent._chars_per_token = sum(len(m["content"]) for m in messages) / tokens["prompt"]
    text = reply.strip()
    if not text:
        raise PreflightError(
            f"preflight {where}: an empty reply: the server probably has no chat template "
            "for this model (llama.cpp: start it with --jinja or --chat-template), or "
            f"max_tokens={agent.settings.max_tokens} is too small for the model's reasoning"
        )
    if _echoes(text, prompt):
        raise PreflightError(
            f"preflight {where}: the reply repeats the prompt ({text[:60]!r}...): a base "
            "model, or a server without a chat template; serve an instruction-tuned "
            "model with its chat template"
        )
    try:
        action = read_move(text, view)
    except MoveError as exc:
        raise PreflightError(
            f"preflight {where}: no legal move can be read in the reply {text[:60]!r} "
            f"({exc.reason}): a base or very small model, or a chat template that drops the "
            "system prompt; try an instruction-tuned model, or put the instructions in "
            "the prompt (see docs/llm.md)"
        ) from None
    if path is not None and not cached:
        _write_atomic(path, {"reply": reply, "tokens": tokens})
    return PreflightReport(
        name=agent.name,
        cached=cached,
        endpoint=agent.endpoint,
        latency_s=round(latency, 3),
        reply=text[:500],
        move=move_text(view.codec, action),
        prompt_tokens=tokens["prompt"],
        completion_tokens=tokens["completion"],
        slots=endpoint_slots(agent.settings.base_url),
        concurrency=agent.concurrency,
    )


def _echoes(reply: str, prompt: str) -> bool:
    """Whether ``reply`` repeats the prompt: a line of 40+ characters of it, or its start."""
    lines = [line.strip() for line in prompt.splitlines() if len(line.strip()) >= 40]
    return prompt[:80] in reply or sum(line in reply for line in lines) >= 2


def notice(line: str) -> None:
    """Prints ``line`` on standard error at once (what an agent says while a run waits)."""
    print(line, file=sys.stderr, flush=True)


_SLOTS: dict[str, int | None] = {}


def endpoint_slots(base_url: str | None, timeout: float = 2.0) -> int | None:
    """How many requests the server at ``base_url`` serves at once, if it says; else ``None``.

    Asks llama.cpp's ``GET /props`` (``total_slots``, next to ``/v1``); vLLM, Ollama and
    hosted APIs do not say, and get ``None``. The answer is kept per ``base_url``.

    Example:
        >>> endpoint_slots(None) is None  # OpenAI's own endpoint: not asked
        True
    """
    if not base_url or not base_url.startswith(("http://", "https://")):
        return None
    if base_url in _SLOTS:
        return _SLOTS[base_url]
    import urllib.request

    root = base_url.rstrip("/")
    root = root[: -len("/v1")] if root.endswith("/v1") else root
    slots = None
    try:
        with urllib.request.urlopen(f"{root}/props", timeout=timeout) as response:  # noqa: S310
            value = json.loads(response.read()).get("total_slots")
        if type(value) is int and value > 0:
            slots = value
    except (OSError, ValueError, AttributeError):
        pass
    _SLOTS[base_url] = slots
    return slots


def _write_atomic(path: Path, data: dict[str, Any]) -> None:
    """Writes JSON to ``path`` through a temporary file in the same folder and a rename."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=".json")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            json.dump(data, handle)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def make_llm_agent(spec: str, rules: RuleSet, seed: int | None = None) -> LLMAgent:
    """The agent of an ``llm:`` spec (see :func:`parse_llm_spec`)."""
    model, settings = parse_llm_spec(spec)
    return LLMAgent(model, rules, settings, seed=seed, name=_public_name(spec))


def _public_name(spec: str) -> str:
    """The spec as the agent's name (it holds no key: keys come from the environment)."""
    return spec
