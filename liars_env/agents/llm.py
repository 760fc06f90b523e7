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
``timeout``         60           seconds per request
``system``          (built in)   a file holding the system prompt
``cache``           (none)       a folder for the response cache
``concurrency``     4            most requests in flight at once from this agent
``samples``         1            answers per position for ``action_probabilities``
                                 (exploitability); 1 at temperature 0 is exact
==================  ===========  ==================================================

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
concurrently through ``--workers`` processes, each with its own agent.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import tempfile
import threading
import time
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from liars_env.agents.text_agent import (
    ENV_NAME,
    RequestRefusedError,
    TextAgent,
    describe_error,
)
from liars_env.observation import PlayerView
from liars_env.rules import RuleSet
from liars_env.text.view import PROMPT_VERSION, prompt_text

SYSTEM_PROMPT = (
    "You are an expert Liar's Dice player. Each turn you are shown the rules, your own "
    "dice, the public state of the table and the legal moves. Play to win the game. Reply "
    "with your move; you may reason first, but end with a line 'Final answer: <move>'."
)
"""The default system prompt (``system=FILE`` replaces it)."""

_NO_RETRY_STATUS = (400, 401, 403, 404, 422)


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
    timeout: float = 60.0
    system: str | None = None
    cache: str | None = None
    concurrency: int = 4
    samples: int = 1


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
        default = getattr(LLMSettings, key)
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
            assert default is None
            values[key] = value
    env = values.get("api_key_env")
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
        super().__init__(
            name or f"llm:{model}",
            system,
            retries=settings.retries,
            concurrency=settings.concurrency,
            samples=settings.samples,
            temperature=settings.temperature,
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
            base_url=settings.base_url, api_key=key, timeout=settings.timeout, max_retries=0
        )
        self._gate = threading.Semaphore(settings.concurrency)

    def __repr__(self) -> str:
        s = self.settings
        return (
            f"LLMAgent(model={self.model!r}, base_url={s.base_url!r}, "
            f"temperature={s.temperature}, retries={s.retries})"
        )

    def tokens_per_call(self, view: PlayerView) -> int:
        """An upper estimate of one request's tokens at ``view``.

        The prompt at about 4 characters a token, plus ``max_tokens``.
        """
        return (len(self.system) + len(prompt_text(view))) // 4 + self.settings.max_tokens

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

    def complete(self, messages: list[dict[str, str]], draw: int, record: dict[str, Any]) -> str:
        """The reply text: from the cache, or from the endpoint (with bounded backoff)."""
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
            try:
                with self._gate:
                    self.count("requests")
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
                raise failure
            time.sleep(min(30.0, s.backoff_base * 2**retry))
        record.update(cached=False, tokens=tokens, latency_s=round(time.perf_counter() - start, 4))
        self.count("prompt_tokens", tokens["prompt"])
        self.count("completion_tokens", tokens["completion"])
        if path is not None:
            _write_atomic(path, {"reply": reply, "tokens": tokens})
        return reply

    def scrub(self, text: str) -> str:
        """``text`` with the API key replaced by ``***``."""
        return text.replace(self._secret, "***") if len(self._secret) >= 4 else text


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
