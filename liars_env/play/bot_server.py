"""A chat-completions server on 127.0.0.1 that answers as one of our bots, from the prompt.

:class:`BotServer` speaks enough of OpenAI's ``POST /v1/chat/completions`` for the
``openai`` client (and so the ``llm:`` agent) to play against it: the request's
``model`` is a bot spec (``belief``, ``cautious``, ``probabilistic``, ...); the server
reads the position back from the last user message that holds one
(:func:`liars_env.text.parse.view_from_text`, nothing else), asks the bot, and replies
with the move. At ``temperature`` 0 (or absent) the reply is the bot's ``act``; above 0
it is drawn from the bot's ``action_probabilities``, once per choice (``n``).

Misbehaviour, for tests of the agent's error handling (``mode``; with ``bad_requests``
only the first that many requests misbehave, the others are answered properly):

==================  ================================================================
``ok``              answer as the bot
``junk``            a reply with no move in it
``echo``            the prompt repeated back (what a base model without a chat
                    template does)
``empty``           an empty reply (what a server without a chat template may send)
``illegal``         a move that is not legal now
``illegal_once``    an illegal move to a first prompt, the bot's move to a re-prompt
``slow``            the bot's move after ``delay`` seconds
``429``             HTTP 429 (rate limited), with a JSON error body
``500``             HTTP 500
``truncated``       HTTP 200 with a body cut off in the middle of the JSON
``drop``            the connection closed without a response
==================  ================================================================

With ``slots``, ``GET /props`` answers ``{"total_slots": slots}`` as llama.cpp's server
does (how many requests it serves at once); without, it is a 404, as on vLLM.

The reply's wording is ``style``: ``final`` (``Final answer: 5x3`` after a sentence),
``canonical`` (``5x3``) or ``textarena`` (``[Bid: 5, 3]``, ``[Call]``).

Example:
    >>> with BotServer() as server:  # doctest: +SKIP
    ...     agent = make_agent(f"llm:belief?base_url={server.base_url}", rules)
"""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import numpy as np

from liars_env.observation import PlayerView
from liars_env.text.parse import view_from_text
from liars_env.text.view import move_text

MODES = (
    "ok",
    "junk",
    "echo",
    "empty",
    "illegal",
    "illegal_once",
    "slow",
    "429",
    "500",
    "truncated",
    "drop",
)
"""The server's behaviours (see the module docstring)."""
STYLES = ("final", "canonical", "textarena")
"""The wordings of the server's replies (see the module docstring)."""


class BotServer:
    """A local chat-completions server answering as a bot; a context manager.

    Args:
        mode: One of :data:`MODES`.
        style: One of :data:`STYLES`.
        bad_requests: Only the first this many requests misbehave (``None``: all).
        delay: Seconds a ``slow`` reply waits.
        seed: Seeds the bots and the draws at ``temperature`` > 0.
        api_key: If given, requests without ``Authorization: Bearer <api_key>`` get 401.
        slots: What ``GET /props`` reports as ``total_slots`` (``None``: a 404).

    Attributes:
        requests: Every request body received, in order (for tests).
        authorizations: The ``Authorization`` header of each, in order.
        answered: ``(prompt, action)`` of each proper answer, in order.
    """

    def __init__(
        self,
        mode: str = "ok",
        style: str = "final",
        bad_requests: int | None = None,
        delay: float = 1.0,
        seed: int = 0,
        api_key: str | None = None,
        slots: int | None = None,
    ) -> None:
        if mode not in MODES:
            raise ValueError(f"BotServer mode must be one of {', '.join(MODES)}, got {mode!r}")
        if style not in STYLES:
            raise ValueError(f"BotServer style must be one of {', '.join(STYLES)}, got {style!r}")
        self.mode, self.style, self.bad_requests, self.delay = mode, style, bad_requests, delay
        self.seed, self.api_key, self.slots = seed, api_key, slots
        self.requests: list[dict[str, Any]] = []
        self.authorizations: list[str | None] = []
        self.answered: list[tuple[str, int]] = []
        self._bots: dict[tuple, Any] = {}
        self._lock = threading.Lock()
        self._rng = np.random.default_rng(seed)
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # ------------------------------------------------------------------ lifecycle
    def start(self) -> BotServer:
        """Starts serving on 127.0.0.1, on a free port, in a daemon thread."""
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:  # quiet
                pass

            def do_POST(self) -> None:  # noqa: N802 (http.server's name)
                server._handle(self)

            def do_GET(self) -> None:  # noqa: N802 (http.server's name)
                if self.path.rstrip("/") == "/props" and server.slots is not None:
                    return _send(self, 200, {"total_slots": server.slots})
                return _send(self, 404, {"error": {"message": f"no route {self.path}"}})

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stops serving and closes the socket."""
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    def __enter__(self) -> BotServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def base_url(self) -> str:
        """The ``base_url`` to give an OpenAI client: ``http://127.0.0.1:PORT/v1``."""
        if self._httpd is None:
            raise RuntimeError("the server is not running; call start() first")
        return f"http://127.0.0.1:{self._httpd.server_address[1]}/v1"

    # ------------------------------------------------------------------ requests
    def _handle(self, handler: BaseHTTPRequestHandler) -> None:
        if handler.path.rstrip("/") not in ("/v1/chat/completions", "/chat/completions"):
            return _send(handler, 404, {"error": {"message": f"no route {handler.path}"}})
        length = int(handler.headers.get("Content-Length") or 0)
        try:
            body = json.loads(handler.rfile.read(length) or b"{}")
        except json.JSONDecodeError:
            return _send(handler, 400, {"error": {"message": "the body is not JSON"}})
        authorization = handler.headers.get("Authorization")
        if self.api_key is not None and authorization != f"Bearer {self.api_key}":
            return _send(handler, 401, {"error": {"message": "test server: bad API key"}})
        with self._lock:
            self.requests.append(body)
            self.authorizations.append(authorization)
            index = len(self.requests)
        misbehave = self.mode != "ok" and (self.bad_requests is None or index <= self.bad_requests)
        mode = self.mode if misbehave else "ok"
        if mode == "drop":
            handler.close_connection = True
            handler.connection.close()
            return None
        if mode in ("429", "500"):
            status = int(mode)
            return _send(handler, status, {"error": {"message": f"test server: HTTP {status}"}})
        messages = body.get("messages") or []
        prompts = [m.get("content", "") for m in messages if m.get("role") == "user"]
        prompt = next((p for p in reversed(prompts) if "\nPosition:\n" in p), None)
        if prompt is None:
            return _send(handler, 400, {"error": {"message": "no position in the messages"}})
        try:
            view = view_from_text(prompt)
            bot = self._bot(str(body.get("model")), view)
        except ValueError as exc:
            return _send(handler, 400, {"error": {"message": str(exc)}})
        choices = []
        for i in range(int(body.get("n") or 1)):
            action = self._answer(bot, view, float(body.get("temperature") or 0.0))
            if mode == "illegal" or (mode == "illegal_once" and len(prompts) == 1):
                reply = _illegal_reply(view)
            elif mode == "junk":
                reply = "I would rather not say."
            elif mode == "echo":
                reply = f"{prompt}\n{prompt[:200]}"
            elif mode == "empty":
                reply = ""
            else:
                reply = self._words(view, action)
                with self._lock:
                    self.answered.append((prompt, action))
            choices.append(
                {
                    "index": i,
                    "message": {"role": "assistant", "content": reply},
                    "finish_reason": "stop",
                }
            )
        if mode == "slow":
            time.sleep(self.delay)
        completion = sum(len(c["message"]["content"]) for c in choices) // 4 + 1
        payload = {
            "id": f"chatcmpl-test-{index}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": body.get("model"),
            "choices": choices,
            "usage": {
                "prompt_tokens": sum(len(m.get("content", "")) for m in messages) // 4 + 1,
                "completion_tokens": completion,
                "total_tokens": 0,
            },
        }
        payload["usage"]["total_tokens"] = (
            payload["usage"]["prompt_tokens"] + payload["usage"]["completion_tokens"]
        )
        if mode == "truncated":
            raw = json.dumps(payload).encode()
            raw = raw[: len(raw) // 2]
            handler.send_response(200)
            handler.send_header("Content-Type", "application/json")
            handler.send_header("Content-Length", str(len(raw)))
            handler.end_headers()
            handler.wfile.write(raw)
            return None
        return _send(handler, 200, payload)

    def _bot(self, spec: str, view: PlayerView) -> Any:
        from liars_env.agents.registry import make_agent

        key = (spec, view.rules)
        with self._lock:
            if key not in self._bots:
                self._bots[key] = make_agent(spec, view.rules, seed=self.seed)
            return self._bots[key]

    def _answer(self, bot: Any, view: PlayerView, temperature: float) -> int:
        with self._lock:
            if temperature <= 0 or not hasattr(bot, "action_probabilities"):
                return int(bot.act(view))
            probs = np.asarray(bot.action_probabilities(view), dtype=float)
            return int(self._rng.choice(len(probs), p=probs / probs.sum()))

    def _words(self, view: PlayerView, action: int) -> str:
        codec = view.codec
        if self.style == "canonical":
            return move_text(codec, action)
        if self.style == "textarena":
            if codec.is_bid(action):
                quantity, face = codec.decode_bid(action)
                return f"I raise. [Bid: {quantity}, {face}]"
            return "[Call]" if action == codec.challenge else "[Exact]"
        return (
            f"I hold {' '.join(map(str, view.dice))}; weighing the bids.\n"
            f"Final answer: {move_text(codec, action)}"
        )


def _illegal_reply(view: PlayerView) -> str:
    """A move that is not legal at ``view``: a call before a bid, else a bid below it."""
    if not view.bids:
        return "Final answer: call"
    illegal = np.flatnonzero(view.mask[: view.codec.num_bids] == 0)
    return f"Final answer: {move_text(view.codec, int(illegal[0]))}"


def _send(handler: BaseHTTPRequestHandler, status: int, payload: dict[str, Any]) -> None:
    raw = json.dumps(payload).encode()
    handler.send_response(status)
    handler.send_header("Content-Type", "application/json")
    handler.send_header("Content-Length", str(len(raw)))
    handler.end_headers()
    handler.wfile.write(raw)
