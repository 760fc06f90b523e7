"""Tournaments between any agents on any preset, with intervals and ratings.

``liars-eval --rules perudo --players 3 --agents probabilistic random random --games 2000
--seed 0 --out results.json`` plays the games with seats rotated (every agent plays
every seat equally often), in several processes if asked, and reports per agent: games,
wins, win rate with a 95% Wilson interval, mean finishing place and an openskill
(Plackett-Luce) rating from the finishing orders; plus pairwise head-to-head rates. It
prints a table, and writes JSON and a PNG plot when asked.

Results depend only on the rules, the agent specs, the number of games and the seed,
never on the number of worker processes.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

from liars_env.agents import make_agent, view_of
from liars_env.engine import LiarsDiceGame
from liars_env.observation import ObservationLayout
from liars_env.rules import PRESETS, RuleSet, resolve_rules
from liars_train.config import parse_rule_overrides
from liars_train.stats import wilson_interval

CHUNK = 25
"""Games per work unit handed to a worker process."""


def seat_assignment(game_index: int, num_players: int, seed: int = 0) -> list[int]:
    """Agent index per seat in game ``game_index``.

    Games come in blocks of ``N``: each block draws a seeded random order of the agents
    and rotates it by one seat per game, so within every block each agent plays each
    seat exactly once, and across blocks the agents meet in every relative order.

    Example:
        >>> block = [seat_assignment(g, 3, seed=0) for g in range(3)]
        >>> sorted(tuple(sorted(col)) for col in zip(*block))  # each seat saw every agent
        [(0, 1, 2), (0, 1, 2), (0, 1, 2)]
    """
    block, shift = divmod(game_index, num_players)
    order = np.random.default_rng([seed, block, 7919]).permutation(num_players).tolist()
    return [order[(seat + shift) % num_players] for seat in range(num_players)]


def _agent_seed(seed: int, game_index: int, agent_index: int) -> int:
    return int(np.random.SeedSequence([seed, game_index, agent_index]).generate_state(1)[0])


_WORKER_CACHE: dict = {}


def _init_worker() -> None:
    """Gives each worker process one intra-op thread.

    The workers already fill the cores; torch's default of a thread per core in every
    worker oversubscribes them badly (measured: over 10x slower with two workers).
    """
    os.environ["OMP_NUM_THREADS"] = "1"
    try:
        import torch

        torch.set_num_threads(1)
    except ImportError:  # torch is only needed for checkpoint agents
        pass


def play_games(
    rules: RuleSet,
    specs: Sequence[str],
    game_indices: Sequence[int],
    seed: int,
    record: str | None = None,
    record_probabilities: bool = True,
) -> list[tuple[int, list[int], int, list[dict | None]]]:
    """Plays the given games; returns ``(game_index, place per agent, decisions, usage)``.

    ``usage`` holds, per agent, what a text agent (``llm:``) spent in that game (its
    ``usage`` counts (:class:`~liars_env.agents.text_agent.TextAgent`): requests, cached replies,
    re-prompts, fallbacks, tokens), ``None`` for other agents.

    With ``record`` (a folder), each game is also written there as
    ``game_{index:06d}.jsonl`` (see :mod:`liars_env.play.recording`), by the process that
    played it; with ``record_probabilities`` (the default) each move also carries the
    acting agent's action probabilities where it exposes them, and a text agent's requests
    (prompt, reply, move read, tokens, latency).
    """
    from liars_env.play.recording import agent_calls

    key = (rules, tuple(specs))
    if key not in _WORKER_CACHE:  # build agents once per process
        _WORKER_CACHE.clear()
        agents = [make_agent(spec, rules) for spec in specs]
        _WORKER_CACHE[key] = (LiarsDiceGame(rules), ObservationLayout(rules), agents)
    game, layout, agents = _WORKER_CACHE[key]
    n = rules.num_players
    records = []
    for g in game_indices:
        seats = seat_assignment(g, n, seed)
        for i, agent in enumerate(agents):
            agent.reset(_agent_seed(seed, g, i))
        rng = np.random.default_rng([seed, g])
        state = game.new_game(rng)
        recorder = _recorder(game, specs, seats, seed, g, record_probabilities) if record else None
        with_probs = recorder is not None and record_probabilities
        decisions = 0
        before = [dict(getattr(agent, "usage", None) or {}) for agent in agents]
        while not state.is_over:
            agent = agents[seats[state.current_player]]
            view = view_of(game, layout, state)
            probs = _probabilities(agent, view) if with_probs else None
            action = agent.act(view)
            calls = agent_calls(agent)
            if recorder:
                recorder.apply(state, action, rng, probs=probs, calls=calls)
            else:
                game.apply(state, action, rng)
            decisions += 1
        if recorder:
            recorder.finish(state)
            recorder.write(Path(record) / f"game_{g:06d}.jsonl")
        seat_places = state.places()
        places = [0] * n
        for seat, agent_index in enumerate(seats):
            places[agent_index] = seat_places[seat]
        usage = [_usage_delta(a, b) for a, b in zip(agents, before, strict=True)]
        records.append((g, places, decisions, usage))
    return records


def _usage_delta(agent, before: dict) -> dict | None:
    """What a text agent's usage counts grew by since ``before``; ``None`` for others."""
    usage = getattr(agent, "usage", None)
    if not isinstance(usage, dict):
        return None
    return {key: value - before.get(key, 0) for key, value in usage.items()}


def _total_usage(records: Sequence[tuple], agent_index: int) -> dict | None:
    """An agent's text-usage counts summed over games, with its fallback rate."""
    rows = [r[3][agent_index] for r in records if len(r) > 3 and r[3][agent_index] is not None]
    if not rows:
        return None
    total: dict = {}
    for row in rows:
        for key, value in row.items():
            total[key] = total.get(key, 0) + value
    total["fallback_rate"] = total.get("fallbacks", 0) / max(1, total.get("decisions", 0))
    return total


def _recorder(
    game: LiarsDiceGame,
    specs: Sequence[str],
    seats: list[int],
    seed: int,
    g: int,
    probabilities: bool = True,
):
    """A :class:`~liars_env.play.recording.GameRecorder` for game ``g`` of a tournament."""
    from liars_env.play.recording import GameRecorder

    names = display_names(specs)
    return GameRecorder(
        game,
        seed=[seed, g],
        seats=[specs[a] for a in seats],
        names=[f"player_{s} ({names[a]})" for s, a in enumerate(seats)],
        source="liars-eval",
        extra={
            "game_index": g,
            "agent_seeds": [_agent_seed(seed, g, a) for a in seats],
            "probabilities": probabilities,
        },
    )


def _probabilities(agent, view):
    from liars_env.play.recording import action_probabilities

    return action_probabilities(agent, view)


@dataclass
class AgentResult:
    """One agent's line of the results."""

    name: str
    spec: str
    games: int
    wins: int
    win_rate: float
    ci95: tuple[float, float]
    mean_place: float
    rating: float
    rating_sigma: float
    text_usage: dict | None = None
    """For a text agent (``llm:``), its counts summed over the games: ``decisions``,
    ``requests``, ``cached``, ``reprompts``, ``request_retries``, ``failed_requests``,
    ``fallbacks`` (moves it did not choose: see :mod:`liars_env.agents.llm`),
    ``prompt_tokens``, ``completion_tokens`` and ``fallback_rate``; ``None`` for others."""


@dataclass
class EvalResult:
    """A whole tournament: settings, per-agent results and head-to-head rates."""

    rules: dict
    num_players: int
    games: int
    seed: int
    agents: list[AgentResult]
    head_to_head: list[list[float | None]] = field(default_factory=list)
    """``head_to_head[i][j]``: share of games where agent i finished ahead of agent j
    (ties count half); ``None`` on the diagonal."""
    decisions: int = 0
    seconds: float = 0.0

    def to_json(self) -> dict:
        """A JSON-able dict with ``agents: [{name, games, wins, win_rate, ci95, ...}]``."""
        return asdict(self)

    def table(self):
        """A rich table of the per-agent results."""
        from rich.table import Table

        table = Table(
            title=f"{self.games} games, {self.num_players} players, seed {self.seed}",
            title_justify="left",
        )
        columns = ["agent", "games", "wins", "win rate", "95% CI", "mean place", "rating"]
        text = any(a.text_usage for a in self.agents)
        if text:  # text agents: fallbacks beside the win rates, and what they cost
            columns += ["fallbacks", "requests (cached)", "tokens in/out"]
        for column in columns:
            table.add_column(column, justify="left" if column == "agent" else "right", no_wrap=True)
        for a in self.agents:
            row = [
                a.name,
                str(a.games),
                str(a.wins),
                f"{a.win_rate:.3f}",
                f"[{a.ci95[0]:.3f}, {a.ci95[1]:.3f}]",
                f"{a.mean_place:.2f}",
                f"{a.rating:.1f} ± {a.rating_sigma:.1f}",
            ]
            if text:
                u = a.text_usage
                row += (
                    [
                        f"{u['fallbacks']}/{u['decisions']} ({100 * u['fallback_rate']:.1f}%)",
                        f"{u['requests']} ({u['cached']})",
                        f"{u['prompt_tokens']}/{u['completion_tokens']}",
                    ]
                    if u
                    else ["", "", ""]
                )
            table.add_row(*row)
        return table

    def head_to_head_table(self):
        """A rich table of the pairwise rates (row finished ahead of column)."""
        from rich.table import Table

        table = Table(title="head to head: row ahead of column", title_justify="left")
        table.add_column("")
        for a in self.agents:
            table.add_column(a.name, justify="right")
        for a, row in zip(self.agents, self.head_to_head, strict=True):
            table.add_row(a.name, *("-" if v is None else f"{v:.3f}" for v in row))
        return table

    def plot(self, path: str | Path) -> Path:
        """Writes a PNG bar chart of the win rates with their 95% intervals."""
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        names = [a.name for a in self.agents]
        rates = np.array([a.win_rate for a in self.agents])
        lo = np.clip(rates - np.array([a.ci95[0] for a in self.agents]), 0, None)
        hi = np.clip(np.array([a.ci95[1] for a in self.agents]) - rates, 0, None)
        fig, ax = plt.subplots(figsize=(1.6 + 1.3 * len(names), 3.6))
        ax.bar(names, rates, yerr=[lo, hi], capsize=6, color="#4c72b0")
        ax.axhline(1 / self.num_players, color="grey", linestyle="--", label="parity")
        ax.set_ylabel("win rate (95% Wilson CI)")
        ax.set_ylim(0, 1)
        ax.set_title(f"{self.games} games, {self.num_players} players")
        ax.legend()
        fig.tight_layout()
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        fig.savefig(path, dpi=110)
        plt.close(fig)
        return path


def display_names(specs: Sequence[str]) -> list[str]:
    """Unique names for the agents: repeated names get ``#2``, ``#3`` and so on.

    An ``llm:`` spec is named without its settings (``llm:MODEL``); the spec itself
    stays in the results' ``spec`` field.

    Example:
        >>> display_names(["probabilistic", "random", "random"])
        ['probabilistic', 'random', 'random#2']
        >>> display_names(["llm:qwen2.5:7b?base_url=http://127.0.0.1:8000/v1", "belief"])
        ['llm:qwen2.5:7b', 'belief']
    """
    seen: dict[str, int] = {}
    names = []
    for spec in specs:
        short = spec.rpartition("?")[0] if spec.startswith("llm:") and "?" in spec else spec
        seen[short] = seen.get(short, 0) + 1
        names.append(short if seen[short] == 1 else f"{short}#{seen[short]}")
    return names


def evaluate(
    rules: RuleSet | str,
    agents: Sequence[str],
    games: int,
    seed: int = 0,
    workers: int = 1,
    progress: bool = True,
    record: str | Path | None = None,
    record_probabilities: bool = True,
    **overrides,
) -> EvalResult:
    """Plays a tournament; see the module docstring.

    Args:
        rules: A preset name or a RuleSet.
        agents: One agent spec per seat (``len(agents)`` must equal ``num_players``).
        games: Games to play; rounded up to a multiple of the player count so that
            every agent plays every seat equally often.
        seed: Seeds every game and agent.
        workers: Processes to play in (1 = in this process).
        progress: Show a progress bar.
        record: A folder to write every game to as JSON lines (``game_000000.jsonl``
            …), with the agents' action probabilities where they expose them; open one
            with ``liars-replay``. Recording does not change the results.
        record_probabilities: With ``record``, also record each move's action
            probabilities (default). Computing them at every move makes recording
            about 2.4x slower with agents that expose them; ``False`` records the
            moves only, and the replay then shows no probabilities.
        **overrides: RuleSet fields, e.g. ``num_players=3``.

    Raises:
        ValueError: for bad rules, agent specs or counts, before any game is played.
    """
    import time

    rules = resolve_rules(rules, **overrides)
    agents = list(agents)
    n = rules.num_players
    if len(agents) != n:
        raise ValueError(f"need one agent spec per seat: {n} players, got {len(agents)} specs")
    if type(games) is not int or games < 1:
        raise ValueError(f"games must be a positive int, got {games!r}")
    if type(workers) is not int or workers < 1:
        raise ValueError(f"workers must be a positive int, got {workers!r}")
    for spec in dict.fromkeys(agents):  # fail fast on a bad spec, in this process
        make_agent(spec, rules)
    games = -(-games // n) * n
    if record is not None:
        Path(record).mkdir(parents=True, exist_ok=True)
        record = str(record)
    # text agents are slow: hand out one game at a time, for a progress bar that moves
    size = 1 if any(spec.startswith("llm:") for spec in agents) else CHUNK
    chunks = [list(range(i, min(i + size, games))) for i in range(0, games, size)]
    records: list[tuple] = []
    start = time.perf_counter()
    bar = _Progress(progress, games)
    with bar as (update):
        if workers == 1:
            for chunk in chunks:
                records += play_games(rules, agents, chunk, seed, record, record_probabilities)
                update(len(chunk), _spent(records))
        else:
            with ProcessPoolExecutor(max_workers=workers, initializer=_init_worker) as pool:
                futures = [
                    pool.submit(play_games, rules, agents, c, seed, record, record_probabilities)
                    for c in chunks
                ]
                for future, chunk in zip(futures, chunks, strict=True):
                    records += future.result()
                    update(len(chunk), _spent(records))
    records.sort()
    return summarize(rules, agents, records, seed, time.perf_counter() - start)


def _spent(records: Sequence[tuple]) -> str:
    """What the text agents spent so far (requests, cached replies, tokens), or ``""``."""
    rows = [u for r in records if len(r) > 3 for u in r[3] if u is not None]
    if not rows:
        return ""
    requests = sum(u["requests"] for u in rows)
    cached = sum(u["cached"] for u in rows)
    tokens = sum(u["prompt_tokens"] + u["completion_tokens"] for u in rows)
    fallbacks = sum(u["fallbacks"] for u in rows)
    return f"{requests} calls, {cached} cached, {tokens:,} tokens, {fallbacks} fallbacks"


class _Progress:
    """A rich progress bar (or nothing) usable as ``with _Progress(on, total) as update``.

    ``update(k, note)`` advances it by ``k`` games and shows ``note`` (the text agents'
    calls and tokens so far) beside it.
    """

    def __init__(self, enabled: bool, total: int) -> None:
        self.enabled, self.total = enabled, total

    def __enter__(self):
        if not self.enabled:
            return lambda k, note="": None
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TimeElapsedColumn,
            TimeRemainingColumn,
        )

        self.bar = Progress(
            "[progress.description]{task.description}",
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            TimeRemainingColumn(),
            transient=True,
        )
        self.bar.__enter__()
        task = self.bar.add_task("games", total=self.total)

        def update(k: int, note: str = "") -> None:
            description = f"games ({note})" if note else "games"
            self.bar.update(task, advance=k, description=description)

        return update

    def __exit__(self, *exc) -> None:
        if self.enabled:
            self.bar.__exit__(*exc)


def summarize(
    rules: RuleSet,
    specs: Sequence[str],
    records: Sequence[tuple],
    seed: int,
    seconds: float = 0.0,
) -> EvalResult:
    """Per-agent statistics, ratings and head-to-head rates from game records."""
    from openskill.models import PlackettLuce

    n = len(specs)
    names = display_names(specs)
    places = np.array([r[1] for r in records], dtype=float).reshape(len(records), n)
    model = PlackettLuce()
    ratings = [model.rating(name=name) for name in names]
    for row in places:
        rated = model.rate([[r] for r in ratings], ranks=row.tolist())
        ratings = [team[0] for team in rated]
    total = len(records)
    results = []
    for i, (name, spec) in enumerate(zip(names, specs, strict=True)):
        wins = int((places[:, i] == 1).sum())
        results.append(
            AgentResult(
                name=name,
                spec=spec,
                games=total,
                wins=wins,
                win_rate=wins / total if total else 0.0,
                ci95=wilson_interval(wins, total),
                mean_place=float(places[:, i].mean()) if total else 0.0,
                rating=float(ratings[i].mu),
                rating_sigma=float(ratings[i].sigma),
                text_usage=_total_usage(records, i),
            )
        )
    h2h: list[list[float | None]] = []
    for i in range(n):
        row: list[float | None] = []
        for j in range(n):
            if i == j:
                row.append(None)
                continue
            ahead = (places[:, i] < places[:, j]).sum() + 0.5 * (places[:, i] == places[:, j]).sum()
            row.append(float(ahead / total) if total else 0.0)
        h2h.append(row)
    return EvalResult(
        rules=rules.to_dict(),
        num_players=rules.num_players,
        games=total,
        seed=seed,
        agents=results,
        head_to_head=h2h,
        decisions=int(sum(r[2] for r in records)),
        seconds=seconds,
    )


def build_parser() -> argparse.ArgumentParser:
    """The ``liars-eval`` argument parser."""
    parser = argparse.ArgumentParser(
        prog="liars-eval",
        description="Play a tournament between agents and report win rates with 95% "
        "Wilson intervals, mean places, openskill ratings and head-to-head rates.",
    )
    parser.add_argument("--rules", default="perudo", help=f"preset: {', '.join(PRESETS)}")
    parser.add_argument(
        "--players", type=int, default=None, help="players (default: one per agent)"
    )
    parser.add_argument(
        "--agents",
        nargs="+",
        required=True,
        help="one spec per seat: random, probabilistic, cautious, bold, bayes, belief, "
        "NAME:key=value,..., checkpoint:PATH, MODULE:ATTR (your class or factory), or an "
        "installed 'liars_dice.agents' entry-point name",
    )
    parser.add_argument(
        "--games", type=int, default=2000, help="games (rounded up to a multiple of players)"
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--workers", type=int, default=min(4, os.cpu_count() or 1), help="processes"
    )
    parser.add_argument(
        "--rule", action="append", default=[], metavar="KEY=VALUE", help="rule override"
    )
    parser.add_argument("--out", help="write the results as JSON here")
    parser.add_argument("--plot", help="write a PNG of the win rates here (default: next to --out)")
    parser.add_argument("--no-progress", action="store_true", help="hide the progress bar")
    parser.add_argument(
        "--record",
        metavar="DIR",
        help="write every game to DIR as JSON lines (open one with liars-replay)",
    )
    parser.add_argument(
        "--record-probabilities",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="with --record, also record each move's action probabilities for agents "
        "that expose them (the default); --no-record-probabilities records only the "
        "moves, which is faster",
    )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``liars-eval``."""
    from rich.console import Console

    args = build_parser().parse_args(argv)
    console = Console() if sys.stdout.isatty() else Console(width=120)
    try:
        overrides = parse_rule_overrides(args.rule)
        overrides["num_players"] = args.players or len(args.agents)
        result = evaluate(
            args.rules,
            args.agents,
            args.games,
            seed=args.seed,
            workers=args.workers,
            progress=not args.no_progress,
            record=args.record,
            record_probabilities=args.record_probabilities,
            **overrides,
        )
    except ValueError as exc:
        console.print(f"[red]liars-eval: {exc}[/red]")
        return 2
    console.print(result.table())
    console.print(result.head_to_head_table())
    rate = result.decisions / result.seconds if result.seconds else 0.0
    console.print(f"{result.decisions} decisions in {result.seconds:.1f}s ({rate:,.0f}/s)")
    if args.out:
        out = Path(args.out)
        out.parent.mkdir(parents=True, exist_ok=True)
        tmp = out.with_suffix(out.suffix + ".tmp")
        tmp.write_text(json.dumps(result.to_json(), indent=2))
        os.replace(tmp, out)
        console.print(f"wrote {out}")
    if args.record:
        console.print(f"recorded {result.games} games in {args.record}")
    plot = args.plot or (str(Path(args.out).with_suffix(".png")) if args.out else None)
    if plot:
        console.print(f"wrote {result.plot(plot)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
