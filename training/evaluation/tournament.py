"""Tournaments between any agents on any preset: :func:`evaluate`, behind ``liars-eval``.

``liars-eval --rules perudo --players 3 --agents probabilistic random random --games 2000
--seed 0 --out results.json`` plays the games with seats rotated (every agent plays
every seat equally often), in several processes if asked, and reports per agent: games,
wins, win rate with a 95% Wilson interval, mean finishing place and an openskill
(Plackett-Luce) rating from the finishing orders; plus pairwise head-to-head rates. It
prints a table, and writes JSON and a PNG plot when asked.

Results depend only on the rules, the agent specs, the number of games and the seed,
never on the number of worker processes.

The parts live in their own modules, and their public names are importable from here
as before: :mod:`~liars_train.evaluation.play` (playing the games, seats and seeds),
:mod:`~liars_train.evaluation.records` (recording them),
:mod:`~liars_train.evaluation.results` (the results model: rows, tables, plot,
statistics), :mod:`~liars_train.evaluation.progress` (the progress bar),
:mod:`~liars_train.evaluation.formats` (tables as text, Markdown or JSON) and
:mod:`~liars_train.evaluation.cli` (the ``liars-eval`` command).
"""

from __future__ import annotations

import multiprocessing
import time
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor, wait
from pathlib import Path

from liars_env.agents import make_agent
from liars_env.agents.text_agent import BudgetExhaustedError, RequestBudget
from liars_env.rules import RuleSet, resolve_rules
from liars_train.evaluation.cli import build_parser, main
from liars_train.evaluation.play import (
    CHUNK,
    init_worker,
    is_text_spec,
    play_games,
    seat_assignment,
    set_budget,
)
from liars_train.evaluation.progress import GamesProgress, spent
from liars_train.evaluation.results import (
    DEFAULT_FALLBACK_THRESHOLD,
    AgentResult,
    EvalResult,
    display_names,
    summarize,
)
from liars_train.stats import wilson_interval

__all__ = [
    "CHUNK",
    "DEFAULT_FALLBACK_THRESHOLD",
    "AgentResult",
    "EvalResult",
    "build_parser",
    "display_names",
    "evaluate",
    "main",
    "play_games",
    "seat_assignment",
    "summarize",
    "wilson_interval",
]


def evaluate(
    rules: RuleSet | str,
    agents: Sequence[str],
    games: int,
    seed: int = 0,
    workers: int = 1,
    progress: bool = True,
    record: str | Path | None = None,
    record_probabilities: bool = True,
    max_calls: int | None = None,
    fallback_threshold: float = DEFAULT_FALLBACK_THRESHOLD,
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
        progress: Show a progress bar (on standard error).
        record: A folder to write every game to as JSON lines (``game_000000.jsonl``
            …), with the agents' action probabilities where they expose them; open one
            with ``liars-replay``. Recording does not change the results.
        record_probabilities: With ``record``, also record each move's action
            probabilities (default). Computing them at every move makes recording
            about 2.4x slower with agents that expose them; ``False`` records the
            moves only, and the replay then shows no probabilities.
        max_calls: Most real requests the text agents may send in all (re-prompts and
            retries included; cached replies are free). When it runs out the run stops:
            the result holds the games finished before (``stopped`` says why; the game
            in play is dropped), and a rerun with the same ``cache`` resumes for free.
        fallback_threshold: A text agent that falls back on more than this share of
            its decisions is flagged
            (:attr:`~liars_train.evaluation.results.AgentResult.measures_fallback`).
        **overrides: RuleSet fields, e.g. ``num_players=3``.

    No preflight request is sent here: ``liars-eval`` sends one per ``llm:`` endpoint
    first (:func:`liars_env.agents.llm.preflight`); from Python, call it yourself.

    Raises:
        ValueError: for bad rules, agent specs or counts, before any game is played.
    """
    rules = resolve_rules(rules, **overrides)
    agents = list(agents)
    n = rules.num_players
    if len(agents) != n:
        raise ValueError(f"need one agent spec per seat: {n} players, got {len(agents)} specs")
    if type(games) is not int or games < 1:
        raise ValueError(f"games must be a positive int, got {games!r}")
    if type(workers) is not int or workers < 1:
        raise ValueError(f"workers must be a positive int, got {workers!r}")
    if max_calls is not None and (type(max_calls) is not int or max_calls < 0):
        raise ValueError(f"max_calls must be a non-negative int or None, got {max_calls!r}")
    if not 0.0 <= fallback_threshold <= 1.0:
        raise ValueError(f"fallback_threshold must lie in [0, 1], got {fallback_threshold!r}")
    for spec in dict.fromkeys(agents):  # fail fast on a bad spec, in this process
        make_agent(spec, rules)
    games = -(-games // n) * n
    if record is not None:
        Path(record).mkdir(parents=True, exist_ok=True)
        record = str(record)
    # text agents are slow: hand out one game at a time, for a progress bar that moves
    size = 1 if any(is_text_spec(spec) for spec in agents) else CHUNK
    chunks = [list(range(i, min(i + size, games))) for i in range(0, games, size)]
    records: list[tuple] = []
    stopped = None
    counter = multiprocessing.Value("q", 0) if max_calls is not None else None
    start = time.perf_counter()
    with GamesProgress(progress, games) as update:
        if workers == 1:
            set_budget(RequestBudget(max_calls, counter) if max_calls is not None else None)
            try:
                for chunk in chunks:
                    records += play_games(rules, agents, chunk, seed, record, record_probabilities)
                    update(len(chunk), spent(records))
            except BudgetExhaustedError as exc:
                records += exc.records
                stopped = str(exc)
            finally:
                set_budget(None)
        else:
            with ProcessPoolExecutor(
                max_workers=workers, initializer=init_worker, initargs=(max_calls, counter)
            ) as pool:
                futures = [
                    pool.submit(play_games, rules, agents, c, seed, record, record_probabilities)
                    for c in chunks
                ]
                for future, chunk in zip(futures, chunks, strict=True):
                    if future.cancelled():
                        continue
                    try:
                        records += future.result()
                    except BudgetExhaustedError as exc:
                        records += exc.records
                        stopped = stopped or str(exc)
                        for later in futures:
                            later.cancel()
                        continue
                    update(len(chunk), spent(records))
                wait([f for f in futures if not f.cancelled()])
    records.sort()
    result = summarize(
        rules, agents, records, seed, time.perf_counter() - start, fallback_threshold
    )
    result.stopped = stopped
    return result
