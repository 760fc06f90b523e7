"""``liars-replay FILE``: open a recorded game in the browser, step by step.

The recording (from ``liars-eval --record DIR`` or the web table) is verified first by
re-simulating it with the engine; a tampered or truncated file is refused with the line
and the problem. ``--check`` only verifies and prints a summary, without a server.

Example::

    liars-replay runs/games/game_000003.jsonl
    liars-replay --check runs/games/game_000003.jsonl
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from liars_env.play.recording import ReplayError, load_replay


def text_agent_summary(replay) -> list[str]:
    """One line per seat whose moves carry requests (a text agent's).

    Each gives the seat's moves, requests (cached ones), re-prompts and fallbacks.
    Example: ``seat 0 (llm:qwen2.5:7b): 19 moves, 21 requests (3 cached), 2 re-prompts,
    0 fallbacks``.
    """
    seats: dict[int, list[int]] = {}
    for frame in replay.frames[1:]:
        calls = frame.line.get("calls")
        if not calls:
            continue
        row = seats.setdefault(frame.line["seat"], [0, 0, 0, 0, 0])
        asked = [c for c in calls if "fallback" not in c]
        row[0] += 1
        row[1] += len(asked)
        row[2] += sum(bool(c.get("cached")) for c in asked)
        row[3] += max(0, len(asked) - 1)
        row[4] += any("fallback" in c for c in calls)
    names = {s["seat"]: s["spec"] for s in replay.header["seats"]}
    return [
        f"seat {seat} ({names[seat].rpartition('?')[0] or names[seat]}): {m} moves, {r} "
        f"requests ({c} cached), {p} re-prompts, {f} fallbacks"
        for seat, (m, r, c, p, f) in sorted(seats.items())
    ]


def build_parser() -> argparse.ArgumentParser:
    """The ``liars-replay`` argument parser."""
    parser = argparse.ArgumentParser(prog="liars-replay", description=__doc__.splitlines()[0])
    parser.add_argument("file", help="a recording (JSON lines)")
    parser.add_argument(
        "--check", action="store_true", help="only verify the file and print a summary"
    )
    parser.add_argument("--host", default="127.0.0.1", help="interface (default: this machine)")
    parser.add_argument("--port", type=int, default=8765, help="port (0: any free port)")
    parser.add_argument("--no-browser", action="store_true", help="do not open a browser")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``liars-replay``."""
    from liars_env.play.web.session import replay_json

    args = build_parser().parse_args(argv)
    try:
        replay = load_replay(args.file)
        data = replay_json(replay)  # what the page shows: it must render, too
    except (ReplayError, OSError) as exc:
        print(f"liars-replay: {exc}", file=sys.stderr)
        return 2
    seats = ", ".join(f"{s['seat']}: {s['spec']}" for s in replay.header["seats"])
    places = replay.end["places"]
    print(
        f"{args.file}: {replay.rules.num_players} players ({seats}), "
        f"{len(replay.actions)} actions, {replay.final_state.round} rounds, "
        f"places {places}; verified against the engine"
    )
    for line in text_agent_summary(replay):
        print(line)
    if args.check:
        return 0
    from liars_env.play.web.server import allowed_hosts_for, create_app, is_loopback, serve
    from liars_env.play.web.session import SessionStore

    store = SessionStore()
    replay_id = store.add_replay(data)
    app = create_app(
        store, allow_any_spec=is_loopback(args.host), allowed_hosts=allowed_hosts_for(args.host)
    )
    return serve(
        app,
        host=args.host,
        port=args.port,
        open_browser=not args.no_browser,
        path=f"/?replay={replay_id}",
    )


if __name__ == "__main__":
    sys.exit(main())
