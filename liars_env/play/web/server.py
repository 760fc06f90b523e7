"""The web table's HTTP server: a Starlette app (:func:`create_app`) run by uvicorn.

Routes (all JSON but the page and its static files):

==========================================  ==================================================
``GET /``                                   the page (``?replay=ID`` opens a replay)
``GET /static/...``                         its script, style sheet and icon
``GET /api/config``                         presets, agent names, the defaults of the command
``POST /api/games``                         start a game: ``{rules, players, specs, seed}``
``GET /api/games/{id}?since=K``             the table; events from the K-th on
``POST /api/games/{id}/act``                the person's move: ``{turn, action}``
``POST /api/games/{id}/step``               one bot move: ``{turn}``
``GET /api/games/{id}/record``              the recording so far, as JSON lines
``POST /api/games/{id}/replay``             a finished game as a replay; returns its id
``DELETE /api/games/{id}``                  drop a game
``GET /api/replays/{id}``                   a replay's frames
==========================================  ==================================================

Errors are ``{"error": message}`` with status 400 (bad or illegal request), 403 (a
POST or DELETE from another web site's page), 404 (no such game: unknown or expired),
409 (stale turn, not your turn, game over), 415 (POST without a JSON body) or 503 (too
many games).

Cross-site requests: every POST must be ``Content-Type: application/json`` (exactly
that media type), which a browser sends cross-site only after a CORS preflight that
this server never approves; and a POST or DELETE whose ``Origin`` header names another
origin than the server's own (scheme, host and port of the request) is refused with
403. Routes that build agents or move bots run in Starlette's thread pool, so a slow
agent (the ``solver`` spec, a checkpoint) does not hold up other games.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Sequence
from importlib import resources
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from liars_env.agents import AGENT_NAMES, BOT_PRESETS
from liars_env.play.web.session import HUMAN, ApiError, SessionStore
from liars_env.rules import PRESETS, resolve_rules

try:
    from starlette.applications import Starlette
    from starlette.concurrency import run_in_threadpool
    from starlette.middleware import Middleware
    from starlette.middleware.trustedhost import TrustedHostMiddleware
    from starlette.requests import Request
    from starlette.responses import FileResponse, JSONResponse, Response
    from starlette.routing import Mount, Route
    from starlette.staticfiles import StaticFiles

    _MISSING: ImportError | None = None
except ImportError as exc:  # pragma: no cover - depends on the install
    _MISSING = exc  # this module still imports (docs, doctests); create_app says what to do


def _require_web() -> None:
    """Raises an ImportError saying how to install the web extra, if it is missing."""
    if _MISSING is not None:
        raise ImportError(
            "the web table needs Starlette and uvicorn: pip install 'liars-dice[web]' "
            f"(missing: {_MISSING.name})"
        ) from _MISSING
    try:
        import uvicorn  # noqa: F401
    except ImportError as exc:
        raise ImportError("the web table needs uvicorn: pip install 'liars-dice[web]'") from exc


STATIC = Path(str(resources.files("liars_env.play.web") / "static"))
"""The folder of the page's files (installed as package data)."""

LOOPBACK = ("127.0.0.1", "localhost", "::1")
"""Hosts that only this machine can reach."""

BUILTIN_SPECS = ("random", *BOT_PRESETS)
"""Agent specs any page may ask for, even when the server is exposed with ``--host``."""

BUILTIN_NAMES = frozenset(name for name in AGENT_NAMES if ":" not in name and "?" not in name)
"""The built-in specs without settings: ``random``, the bot presets, ``solver``."""

PAGE_SPEC_FORMS = (*BUILTIN_SPECS, "solver", "NAME:key=value", "checkpoint:PATH")
"""The spec forms a page on a loopback server may use (:func:`is_builtin_spec`)."""


def is_builtin_spec(spec: str) -> bool:
    """Whether ``spec`` is a built-in form of :data:`~liars_env.agents.AGENT_NAMES`.

    Those import nothing the page names: ``random``, a bot preset, ``NAME:key=value``
    (settings of a bot preset), ``solver``, ``checkpoint:PATH``. ``MODULE:ATTR`` import
    paths and entry-point names are not built-in.

    Example:
        >>> [is_builtin_spec(s) for s in ("belief", "bold:bluff_rate=0.1", "os:abort", "x")]
        [True, True, False, False]
    """
    name, colon, arg = spec.partition(":")
    if not colon:
        return spec in BUILTIN_NAMES
    if name == "checkpoint":
        return bool(arg)
    return name in BOT_PRESETS and bool(arg)


def is_loopback(host: str) -> bool:
    """Whether binding to ``host`` keeps the server reachable from this machine only."""
    return host in LOOPBACK or host.startswith("127.")


class WebTable:
    """The server's state and settings, shared by the routes.

    Args:
        store: The games and replays.
        defaults: The page's new-game form defaults: ``rules``, ``players``, ``specs``
            (one per seat, ``"human"`` for the person), ``seed``, ``autostart``.
        allow_any_spec: Whether pages may ask for any built-in spec form (settings,
            ``solver``, ``checkpoint:PATH``: see :func:`is_builtin_spec`); for a server
            on loopback. When false (server exposed with ``--host``), only the built-in
            bots (:data:`BUILTIN_SPECS`) are accepted. Either way the specs of
            ``defaults`` (the command line's) are accepted too, and nothing else: a page
            never names a ``MODULE:ATTR`` import path or an entry point.
        command_specs: More specs given on the command line (accepted like those of
            ``defaults``).
    """

    def __init__(
        self,
        store: SessionStore,
        defaults: dict[str, Any] | None = None,
        allow_any_spec: bool = True,
        command_specs: Sequence[str] = (),
    ) -> None:
        self.store = store
        self.defaults = {
            "rules": "perudo",
            "players": 3,
            "specs": [HUMAN, "probabilistic", "probabilistic"],
            "seed": None,
            "autostart": False,
            "delay_ms": 900,
            **(defaults or {}),
        }
        self.allow_any_spec = allow_any_spec
        self.command_specs = [*self.defaults["specs"], *command_specs]
        self.allowed_specs = {HUMAN, *BUILTIN_SPECS, *self.command_specs}

    def check_spec(self, spec: Any) -> str:
        """Refuses specs a page may not use (see :class:`WebTable`); returns the spec.

        Non-strings are refused; import paths and entry points unless given on the
        command line; when exposed, anything but the built-in bots and those.
        """
        if not isinstance(spec, str) or not spec.strip():
            raise ApiError(400, f"agent specs must be non-empty strings, got {spec!r}")
        spec = spec.strip()
        if spec in self.allowed_specs or (self.allow_any_spec and is_builtin_spec(spec)):
            return spec
        if self.allow_any_spec:
            raise ApiError(
                400,
                f"agent spec {spec!r} is not allowed from the page: use "
                + ", ".join(PAGE_SPEC_FORMS)
                + " (custom agents, MODULE:ATTR or entry-point names, only when given on "
                "the command line)",
            )
        raise ApiError(
            400,
            f"agent spec {spec!r} is not allowed on an exposed server; allowed: "
            + ", ".join(sorted(self.allowed_specs)),
        )

    @property
    def page_agents(self) -> list[str]:
        """The spec forms to suggest on the page."""
        forms = PAGE_SPEC_FORMS if self.allow_any_spec else BUILTIN_SPECS
        extra = (s for s in self.command_specs if s != HUMAN)
        return list(dict.fromkeys([*forms, *extra]))


def _default_port(scheme: str) -> int | None:
    return {"http": 80, "https": 443, "ws": 80, "wss": 443}.get(scheme)


def _origin_key(scheme: str, netloc: str) -> tuple[str, str, int | None] | None:
    """``(scheme, host, port)`` with the default port filled in; ``None`` if malformed."""
    try:
        parts = urlsplit(f"//{netloc}")
        port = parts.port
    except ValueError:
        return None
    if not parts.hostname:
        return None
    scheme = scheme.lower()
    return scheme, parts.hostname.lower(), port if port is not None else _default_port(scheme)


def check_origin(request: Request) -> None:
    """Refuses (403) a request whose ``Origin`` is not the server's own origin.

    The server's origin is the request's scheme and its ``Host`` (host and port).

    Requests without ``Origin`` (command-line clients; browsers send it on every
    cross-origin POST) pass. ``Origin: null`` (sandboxed frames, files) is refused.
    """
    origin = request.headers.get("origin")
    if origin is None:
        return
    own = _origin_key(request.url.scheme, request.headers.get("host", ""))
    parts = urlsplit(origin.strip())
    theirs = _origin_key(parts.scheme, parts.netloc) if parts.scheme else None
    if own is None or theirs != own:
        raise ApiError(
            403,
            f"cross-site request refused: origin {origin!r} is not this server's "
            "(open the table's own page to play)",
        )


def check_post(request: Request) -> None:
    """Refuses a POST from another origin (403) or without a JSON body (415).

    See :func:`check_origin`. The media type must be exactly ``application/json``, so
    that "simple" cross-site requests (forms, ``text/plain; x=application/json``),
    which browsers send without asking the server first, never pass.
    """
    check_origin(request)
    media_type = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if media_type != "application/json":
        raise ApiError(415, "send the request body as JSON (Content-Type: application/json)")


async def _json_body(request: Request) -> dict[str, Any]:
    """The JSON object of a POST, after :func:`check_post`."""
    check_post(request)
    try:
        body = await request.json()
    except (json.JSONDecodeError, UnicodeDecodeError):
        raise ApiError(400, "the request body is not valid JSON") from None
    if not isinstance(body, dict):
        raise ApiError(400, f"the request body must be a JSON object, got {body!r}")
    return body


def create_app(
    store: SessionStore | None = None,
    defaults: dict[str, Any] | None = None,
    allow_any_spec: bool = True,
    allowed_hosts: Sequence[str] | None = None,
    command_specs: Sequence[str] = (),
) -> Starlette:
    """Builds the app.

    Args:
        store: The games (default: a fresh :class:`SessionStore`).
        defaults: See :class:`WebTable`.
        allow_any_spec: See :class:`WebTable`.
        allowed_hosts: ``Host`` headers to accept (``None``: any). A server on
            127.0.0.1 accepts only loopback names, which defeats DNS rebinding.
        command_specs: See :class:`WebTable`.

    Returns:
        The Starlette application (``app.state.table`` is the :class:`WebTable`).
    """
    _require_web()
    table = WebTable(store or SessionStore(), defaults, allow_any_spec, command_specs)

    def session_view(game_id: str, since: int = 0) -> dict[str, Any]:
        session = table.store.get(game_id)
        with session.lock:
            return session.view(since)

    async def index(request: Request) -> Response:
        return FileResponse(STATIC / "index.html", headers={"Cache-Control": "no-store"})

    async def config(request: Request) -> Response:
        return JSONResponse(
            {
                "presets": sorted(PRESETS),
                "agents": table.page_agents,
                "defaults": table.defaults,
                "allow_any_spec": table.allow_any_spec,
                "ttl": table.store.ttl,
            }
        )

    def start_game(body: dict[str, Any]) -> dict[str, Any]:
        preset = body.get("rules", table.defaults["rules"])
        players = body.get("players", table.defaults["players"])
        specs = body.get("specs", table.defaults["specs"])
        seed = body.get("seed")
        if not isinstance(preset, str) or preset not in PRESETS:
            raise ApiError(
                400, f"unknown rules {preset!r}; expected one of {', '.join(sorted(PRESETS))}"
            )
        if isinstance(players, bool) or not isinstance(players, int):
            raise ApiError(400, f"'players' must be an int, got {players!r}")
        if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int) or seed < 0):
            raise ApiError(400, f"'seed' must be a non-negative int or null, got {seed!r}")
        if not isinstance(specs, list) or not specs:
            raise ApiError(400, f"'specs' must be a list of agent specs, got {specs!r}")
        specs = [table.check_spec(s) for s in specs]
        try:
            rules = resolve_rules(preset, num_players=players)
        except ValueError as exc:
            raise ApiError(400, str(exc)) from None
        if len(specs) != players:  # cycle the bots, keeping the person's seat
            human = specs.index(HUMAN) if HUMAN in specs else None
            bots = [s for s in specs if s != HUMAN] or ["probabilistic"]
            specs = [bots[i % len(bots)] for i in range(players)]
            if human is not None:
                specs[min(human, players - 1)] = HUMAN
        session = table.store.create(rules, specs, seed=seed, preset=preset)
        with session.lock:
            return session.view()

    # Building agents (the solver, checkpoints) and bot moves can take a while, and the
    # session locks are threading locks: such work runs in the thread pool, never on
    # the event loop (plain ``def`` routes run there too).
    async def games(request: Request) -> Response:
        body = await _json_body(request)
        return JSONResponse(await run_in_threadpool(start_game, body), status_code=201)

    def game(request: Request) -> Response:
        game_id = request.path_params["game_id"]
        if request.method == "DELETE":
            check_origin(request)
            table.store.remove(game_id)
            return JSONResponse({"deleted": game_id})
        try:
            since = int(request.query_params.get("since", 0))
        except ValueError:
            raise ApiError(400, "'since' must be an int") from None
        return JSONResponse(session_view(game_id, since))

    def move(kind: str):
        def play(game_id: str, body: dict[str, Any]) -> dict[str, Any]:
            session = table.store.get(game_id)
            since = body.get("since", 0)
            with session.lock:
                if kind == "act":
                    session.act(body.get("action"), body.get("turn"))
                else:
                    session.step(body.get("turn"))
                return session.view(since if isinstance(since, int) else 0)

        async def endpoint(request: Request) -> Response:
            body = await _json_body(request)
            game_id = request.path_params["game_id"]
            return JSONResponse(await run_in_threadpool(play, game_id, body))

        return endpoint

    def record(request: Request) -> Response:
        session = table.store.get(request.path_params["game_id"])
        with session.lock:
            if session.you is not None and not session.state.is_over:
                raise ApiError(409, "the recording shows every hand: finish the game first")
            text = session.recorder.text()
        return Response(
            text,
            media_type="application/x-ndjson",
            headers={"Content-Disposition": f'attachment; filename="game_{session.id[:8]}.jsonl"'},
        )

    def to_replay(request: Request) -> Response:
        from liars_env.play.recording import load_replay
        from liars_env.play.web.session import replay_json

        check_post(request)
        session = table.store.get(request.path_params["game_id"])
        with session.lock:
            if not session.state.is_over:
                raise ApiError(409, "the game is not over yet")
            text = session.recorder.text()
        data = replay_json(load_replay(text.splitlines(keepends=True), f"game {session.id[:8]}"))
        return JSONResponse({"replay_id": table.store.add_replay(data)}, status_code=201)

    async def replay(request: Request) -> Response:
        return JSONResponse(table.store.get_replay(request.path_params["replay_id"]))

    async def api_error(request: Request, exc: ApiError) -> Response:
        return JSONResponse({"error": exc.message, **exc.extra}, status_code=exc.status)

    routes = [
        Route("/", index),
        Route("/api/config", config),
        Route("/api/games", games, methods=["POST"]),
        Route("/api/games/{game_id}", game, methods=["GET", "DELETE"]),
        Route("/api/games/{game_id}/act", move("act"), methods=["POST"]),
        Route("/api/games/{game_id}/step", move("step"), methods=["POST"]),
        Route("/api/games/{game_id}/record", record),
        Route("/api/games/{game_id}/replay", to_replay, methods=["POST"]),
        Route("/api/replays/{replay_id}", replay),
        Mount("/static", app=StaticFiles(directory=STATIC), name="static"),
    ]
    middleware = []
    if allowed_hosts is not None:
        middleware.append(Middleware(TrustedHostMiddleware, allowed_hosts=list(allowed_hosts)))
    app = Starlette(routes=routes, middleware=middleware, exception_handlers={ApiError: api_error})
    app.state.table = table
    return app


class ServerThread:
    """Runs an app with uvicorn in a background thread (for the commands and tests).

    Example::

        server = ServerThread(create_app(), port=0).start()
        print(server.url)   # http://127.0.0.1:PORT
        server.stop()

    Args:
        app: The ASGI app.
        host: Interface to bind.
        port: Port (0: any free port; :attr:`url` says which).
    """

    def __init__(self, app: Any, host: str = "127.0.0.1", port: int = 0) -> None:
        _require_web()
        import uvicorn

        self.host = host
        config = uvicorn.Config(app, host=host, port=port, log_level="warning", lifespan="off")
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, daemon=True, name="liars-web")
        self.port = port

    def start(self, timeout: float = 20.0) -> ServerThread:
        """Starts serving; returns once the socket listens.

        Raises:
            RuntimeError: if the server did not start (port taken, …) within ``timeout``.
        """
        self.thread.start()
        deadline = time.monotonic() + timeout
        while not self.server.started:
            if not self.thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError(
                    f"the web server did not start on {self.host}:{self.port} "
                    "(port in use? see the message above)"
                )
            time.sleep(0.02)
        sockets = [s for server in self.server.servers for s in server.sockets]
        self.port = sockets[0].getsockname()[1]
        return self

    @property
    def url(self) -> str:
        """The server's base URL."""
        host = "127.0.0.1" if self.host in ("0.0.0.0", "::") else self.host
        host = f"[{host}]" if ":" in host else host
        return f"http://{host}:{self.port}"

    def stop(self) -> None:
        """Stops serving and waits for the thread."""
        self.server.should_exit = True
        self.thread.join(timeout=10)


def serve(
    app: Any,
    host: str = "127.0.0.1",
    port: int = 8765,
    open_browser: bool = True,
    path: str = "/",
    say=print,
) -> int:
    """Serves ``app`` until Ctrl-C, opening ``path`` in the browser unless told not to.

    Returns:
        An exit code (0).
    """
    if not is_loopback(host):
        say(
            f"WARNING: serving on {host}: anyone who can reach this machine on port "
            f"{port} can use the table. Only custom agent specs given on the command line "
            "are allowed from pages."
        )
    server = ServerThread(app, host=host, port=port).start()
    url = server.url + path
    say(f"Liar's Dice table at {url}  (Ctrl-C to stop)")
    if open_browser:
        import webbrowser

        webbrowser.open(url)
    try:
        while server.thread.is_alive():
            server.thread.join(timeout=0.5)
    except KeyboardInterrupt:
        say("\nstopping")
    finally:
        server.stop()
    return 0


def allowed_hosts_for(host: str) -> list[str] | None:
    """The ``Host`` headers to accept when bound to ``host`` (``None``: any)."""
    if is_loopback(host):
        return list(dict.fromkeys(["127.0.0.1", "localhost", "::1", host]))
    return None
