"""Playing a tournament: seat rotation, seeds, worker processes, request budgets.

:func:`evaluate` plays a whole tournament, in this process or several, and summarizes
it (:func:`liars_train.evaluation.results.summarize`). :func:`play_games` plays a list
of game indices with every seat's agent built from its spec (once per process), and
returns per game the finishing places, the decisions and what each text agent spent.
Results depend only on the rules, the specs, the game index and the seed, never on
which process played the game.
"""

from __future__ import annotations

import multiprocessing
import os
import time
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor, wait
from pathlib import Path

import numpy as np

from liars_env.agents import make_agent, view_of
from liars_env.agents.text_agent import BudgetExhaustedError, RequestBudget
from liars_env.engine import LiarsDiceGame
from liars_env.observation import ObservationLayout
from liars_env.rules import RuleSet, resolve_rules
from liars_train.evaluation.progress import GamesProgress, spent
from liars_train.evaluation.results import DEFAULT_FALLBACK_THRESHOLD, EvalResult, summarize

CHUNK = 25
"""Games per work unit handed to a worker process."""

TEXT_PREFIXES = ("llm:", "textarena:")
"""Spec prefixes of text agents (slow, counted, handed out one game at a time)."""

_WORKER_CACHE: dict = {}
_BUDGET: list[RequestBudget | None] = [None]


def is_text_spec(spec: str) -> bool:
    """Whether ``spec`` is a text agent's (``llm:`` or ``textarena:``)."""
    return spec.startswith(TEXT_PREFIXES)


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


def agent_seed(seed: int, game_index: int, agent_index: int) -> int:
    """The seed agent ``agent_index`` is reset with in game ``game_index``."""
    return int(np.random.SeedSequence([seed, game_index, agent_index]).generate_state(1)[0])


def set_budget(budget: RequestBudget | None) -> None:
    """Makes ``budget`` the request budget of the text agents this process plays with."""
    _BUDGET[0] = budget


def init_worker(limit: int | None = None, counter=None) -> None:
    """Sets up a worker process: one intra-op thread, and the run's shared request budget.

    The workers already fill the cores; torch's default of a thread per core in every
    worker oversubscribes them badly (measured: over 10x slower with two workers).
    """
    os.environ["OMP_NUM_THREADS"] = "1"
    try:
        import torch

        torch.set_num_threads(1)
    except ImportError:  # torch is only needed for checkpoint agents
        pass
    set_budget(RequestBudget(limit, counter) if limit is not None else None)


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
    ``usage`` counts (:class:`~liars_env.agents.text_agent.TextAgent`): requests, cached
    replies, re-prompts, fallbacks, tokens), ``None`` for other agents.

    With ``record`` (a folder), each game is also written there as
    ``game_{index:06d}.jsonl`` (see :mod:`liars_env.play.recording`), by the process that
    played it; with ``record_probabilities`` (the default) each move also carries the
    acting agent's action probabilities where it exposes them, and a text agent's requests
    (prompt, reply, move read, tokens, latency).

    Raises:
        liars_env.agents.text_agent.BudgetExhaustedError: when the run's request budget
            runs out in a game; that game is dropped (its cached replies stay, so a rerun
            resumes it for free) and the exception's ``records`` hold the games finished
            before it.
    """
    from liars_env.play.recording import agent_calls
    from liars_train.evaluation.records import game_recorder, move_probabilities

    key = (rules, tuple(specs))
    if key not in _WORKER_CACHE:  # build agents once per process
        _WORKER_CACHE.clear()
        agents = [make_agent(spec, rules) for spec in specs]
        _WORKER_CACHE[key] = (LiarsDiceGame(rules), ObservationLayout(rules), agents)
    game, layout, agents = _WORKER_CACHE[key]
    for agent in agents:
        if hasattr(agent, "budget"):
            agent.budget = _BUDGET[0]
    n = rules.num_players
    records = []
    for g in game_indices:
        seats = seat_assignment(g, n, seed)
        for i, agent in enumerate(agents):
            agent.reset(agent_seed(seed, g, i))
        rng = np.random.default_rng([seed, g])
        state = game.new_game(rng)
        recorder = None
        if record:
            seeds = [agent_seed(seed, g, a) for a in seats]
            recorder = game_recorder(game, specs, seats, seed, g, seeds, record_probabilities)
        with_probs = recorder is not None and record_probabilities
        decisions = 0
        before = [dict(getattr(agent, "usage", None) or {}) for agent in agents]
        try:
            while not state.is_over:
                agent = agents[seats[state.current_player]]
                view = view_of(game, layout, state)
                probs = move_probabilities(agent, view) if with_probs else None
                action = agent.act(view)
                calls = agent_calls(agent)
                if recorder:
                    recorder.apply(state, action, rng, probs=probs, calls=calls)
                else:
                    game.apply(state, action, rng)
                decisions += 1
        except BudgetExhaustedError as exc:
            for agent in agents:  # the unfinished game's transcripts go with it
                if callable(getattr(agent, "take_transcript", None)):
                    agent.take_transcript()
            raise BudgetExhaustedError(str(exc), records) from None
        if recorder:
            recorder.finish(state)
            recorder.write(Path(record) / f"game_{g:06d}.jsonl")
        seat_places = state.places()
        places = [0] * n
        for seat, agent_index in enumerate(seats):
            places[agent_index] = seat_places[seat]
        usage = [usage_delta(a, b) for a, b in zip(agents, before, strict=True)]
        records.append((g, places, decisions, usage))
    return records


def usage_delta(agent, before: dict) -> dict | None:
    """What a text agent's usage counts grew by since ``before``; ``None`` for others."""
    usage = getattr(agent, "usage", None)
    if not isinstance(usage, dict):
        return None
    return {key: value - before.get(key, 0) for key, value in usage.items()}


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
    """Plays a tournament; see :mod:`liars_train.evaluation.tournament`.

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
