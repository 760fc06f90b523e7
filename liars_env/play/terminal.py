"""``liars-play``: play Liar's Dice against bots or trained policies in the terminal.

Example::

    liars-play --rules perudo --players 3 --opponents checkpoint:checkpoints/perudo_3p probabilistic

Type bids in plain words (``4 3s``, ``4x3``, ``four threes``), ``challenge`` / ``liar``
/ ``dudo``, ``exact`` / ``calza`` where the rules have one, ``help`` or ``quit``. Works
with piped input too, and stops cleanly at the end of input.

``liars-play --web`` plays in the browser instead (a local server on 127.0.0.1; see
``docs/web.md``), and ``liars-play --web --watch --agents belief bayes checkpoint:PATH``
watches bots play each other.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import TextIO

import numpy as np

from liars_env.actions import describe_bid
from liars_env.agents import make_agent, view_of
from liars_env.cli import add_rule_arguments
from liars_env.engine import GameState, LiarsDiceGame
from liars_env.envs.render import render_reveal
from liars_env.observation import ObservationLayout
from liars_env.rules import resolve_rules, wild_name
from liars_env.text.moves import HELP, ParseError, minimum_raises, parse_move
from liars_env.text.view import rule_lines


def _is_terminal(stream: TextIO) -> bool:
    """Whether ``stream`` is an interactive terminal (piped input is not)."""
    isatty = getattr(stream, "isatty", None)
    return bool(isatty and isatty())


class TerminalGame:
    """One game between a human at ``human_seat`` and agents in the other seats."""

    def __init__(
        self,
        rules,
        opponents: Sequence[str],
        seed: int | None,
        human_seat: int,
        stdin: TextIO,
        console,
        preset: str = "custom rules",
    ) -> None:
        self.rules = rules
        self.preset = preset
        self.game = LiarsDiceGame(rules)
        self.layout = ObservationLayout(rules)
        self.codec = self.game.codec
        self.rng = np.random.default_rng(seed)
        self.human = human_seat
        self.stdin = stdin
        self.console = console
        n = rules.num_players
        # short seat labels keep the reveal's columns aligned; the header names the specs
        self.names = [f"player_{i}" for i in range(n)]
        self.names[human_seat] = "you"  # render.py conjugates for "you"
        self.specs: dict[int, str] = {}
        self.agents = {}
        others = [s for s in range(n) if s != human_seat]
        for k, seat in enumerate(others):
            spec = opponents[k % len(opponents)]
            self.agents[seat] = make_agent(spec, rules, seed=None if seed is None else seed + seat)
            self.specs[seat] = spec
        self.echo = not _is_terminal(stdin)
        """Piped input is echoed after the prompt, so the transcript shows your moves."""

    def header(self) -> list[str]:
        """The opening lines: the variant, who sits where, and the rules in plain words."""
        seats = ", ".join(
            f"{self.names[s]} (seat {s})"
            if s == self.human
            else f"{self.names[s]}: {self.specs[s]}"
            for s in range(self.rules.num_players)
        )
        return [
            f"Liar's Dice ({self.preset}). Seats, clockwise: {seats}.",
            "The rules:",
            *(f"  - {line}" for line in rule_lines(self.rules)),
            "Type a bid such as '4 3s' or '4x3', 'challenge', 'help' for every form, or 'quit'.",
        ]

    def say(self, text: str = "") -> None:
        """Prints to the terminal."""
        self.console.print(text, highlight=False, markup=False)

    def show_table(self, state: GameState) -> None:
        """Your dice, everyone's dice count, the round's bids and the turn."""
        rnd = f"Round {state.round + 1}" + (
            f" (palifico: {wild_name(self.rules)} not wild, face fixed)" if state.palifico else ""
        )
        self.say(f"\n{rnd}. Your dice: {' '.join(map(str, sorted(state.dice[self.human])))}")
        self.say(
            "Dice left: "
            + ", ".join(f"{self.names[s]} {n}" for s, n in enumerate(state.dice_left) if n > 0)
        )
        for seat, quantity, face in state.bids:
            self.say(f"  {self.names[seat]} bids {describe_bid(quantity, face)}")

    def ask_human(self, state: GameState) -> int | None:
        """Prompts until a legal move; ``None`` to quit (``quit`` or end of input)."""
        mask = self.game.legal_mask(state)
        options = ["a raise (" + minimum_raises(self.codec, mask) + " or higher)"]
        if state.bids:
            options.append("challenge")
            if self.codec.exact is not None:
                options.append("calza" if self.rules.exact_call == "calza" else "spot on")
        self.say("Your move: " + "; ".join(options) + ".")
        while True:
            self.console.print("> ", end="")
            line = self.stdin.readline()
            if not line:
                self.say("\n(end of input)")
                return None
            if self.echo:
                self.say(line.strip())
            try:
                move = parse_move(line, self.codec)
            except ParseError as exc:
                self.say(str(exc))
                continue
            if move == "quit":
                return None
            if move == "help":
                self.say(HELP)
                continue
            reason = self.game.illegal_reason(state, move)
            if reason is not None:
                self.say(
                    f"Not allowed: {reason}. Minimum raises: {minimum_raises(self.codec, mask)}."
                )
                continue
            return move

    def play(self) -> int:
        """Plays to the end (or until the human quits); returns an exit code."""
        state = self.game.new_game(self.rng)
        for line in self.header():
            self.say(line)
        shown_round = -1
        while not state.is_over:
            if state.round != shown_round and state.dice_left[self.human] > 0:
                self.show_table(state)
                shown_round = state.round
            seat = state.current_player
            if seat == self.human:
                action = self.ask_human(state)
                if action is None:
                    self.say("Bye.")
                    return 0
            else:
                action = self.agents[seat].act(view_of(self.game, self.layout, state))
                self.say(f"  {self.names[seat]}: {self.codec.describe(action)}")
            result = self.game.apply(state, action, self.rng)
            if result is not None:
                self.say("")
                for line in render_reveal(result, self.game, self.names):
                    self.say(line)
        places = state.places()
        self.say("\nGame over. Finishing order:")
        for seat in sorted(range(len(places)), key=lambda s: places[s]):
            self.say(f"  {places[seat]}. {self.names[seat]}")
        return 0


def build_parser() -> argparse.ArgumentParser:
    """The ``liars-play`` argument parser."""
    parser = argparse.ArgumentParser(prog="liars-play", description=__doc__.splitlines()[0])
    add_rule_arguments(parser, players=3, players_help="players at the table, you included")
    parser.add_argument(
        "--opponents",
        nargs="+",
        default=["probabilistic"],
        help="agent specs for the other seats (cycled if fewer)",
    )
    parser.add_argument("--seat", type=int, default=0, help="your seat (0 = first)")
    parser.add_argument(
        "--seed",
        type=int,
        default=None,
        help="seeds the dice and the bots, so a game can be replayed move for move "
        "(default: a new game each time)",
    )
    web = parser.add_argument_group("browser table")
    web.add_argument("--web", action="store_true", help="play in the browser (local server)")
    web.add_argument(
        "--watch",
        action="store_true",
        help="with --web: watch bots play each other (seats from --agents)",
    )
    web.add_argument(
        "--agents",
        nargs="+",
        default=None,
        help="with --watch: one spec per seat (cycled; default: the --opponents)",
    )
    web.add_argument(
        "--host",
        default="127.0.0.1",
        help="interface to serve on (default 127.0.0.1: this machine only)",
    )
    web.add_argument("--port", type=int, default=8765, help="port (0: any free port)")
    web.add_argument("--no-browser", action="store_true", help="do not open a browser")
    web.add_argument("--ttl", type=float, default=3600.0, help="seconds before idle games expire")
    web.add_argument("--max-games", type=int, default=64, help="games held at once")
    web.add_argument("--record", metavar="DIR", help="write every finished game here (JSON lines)")
    web.add_argument(
        "--delay", type=int, default=900, help="milliseconds between bot moves (page default)"
    )
    return parser


def web_main(args: argparse.Namespace, say=print) -> int:
    """``liars-play --web``: serves the browser table until Ctrl-C."""
    from liars_env.play.web.server import allowed_hosts_for, create_app, is_loopback, serve
    from liars_env.play.web.session import HUMAN, SessionStore

    rules = resolve_rules(args.rules, num_players=args.players)
    n = rules.num_players
    if args.watch:
        pool = args.agents or args.opponents
        specs = [pool[i % len(pool)] for i in range(n)]
    else:
        if not 0 <= args.seat < n:
            raise ValueError(f"--seat must be 0–{n - 1}, got {args.seat}")
        others = iter(args.opponents[k % len(args.opponents)] for k in range(n - 1))
        specs = [HUMAN if seat == args.seat else next(others) for seat in range(n)]
    for spec in dict.fromkeys(specs):  # fail fast on a bad spec, before serving
        if spec != HUMAN:
            make_agent(spec, rules)
    store = SessionStore(ttl=args.ttl, max_games=args.max_games, record_dir=args.record)
    defaults = {
        "rules": args.rules,
        "players": n,
        "specs": specs,
        "seed": args.seed,
        "autostart": True,
        "delay_ms": args.delay,
    }
    app = create_app(
        store,
        defaults,
        allow_any_spec=is_loopback(args.host),
        allowed_hosts=allowed_hosts_for(args.host),
        command_specs=[*args.opponents, *(args.agents or [])],  # pages may use these too
    )
    return serve(app, host=args.host, port=args.port, open_browser=not args.no_browser, say=say)


def main(argv: Sequence[str] | None = None, stdin: TextIO | None = None) -> int:
    """Entry point of ``liars-play``."""
    from rich.console import Console

    args = build_parser().parse_args(argv)
    # a transcript in a pipe or a file keeps its lines whole
    console = Console(highlight=False, soft_wrap=not sys.stdout.isatty())
    if args.web:
        try:
            return web_main(args, say=lambda text: console.print(text, markup=False))
        except (ValueError, ImportError) as exc:
            console.print(f"liars-play: {exc}", markup=False)
            return 2
    if args.watch:
        console.print("liars-play: --watch needs --web", markup=False)
        return 2
    try:
        rules = resolve_rules(args.rules, num_players=args.players)
        if not 0 <= args.seat < rules.num_players:
            raise ValueError(f"--seat must be 0–{rules.num_players - 1}, got {args.seat}")
        game = TerminalGame(
            rules,
            args.opponents,
            args.seed,
            args.seat,
            stdin or sys.stdin,
            console,
            preset=args.rules,
        )
    except ValueError as exc:
        console.print(f"liars-play: {exc}", markup=False)
        return 2
    try:
        return game.play()
    except KeyboardInterrupt:
        console.print("\nBye.")
        return 0


if __name__ == "__main__":
    sys.exit(main())
