"""Tournaments between any agents on any preset (``liars-eval``): the public names, in one place.

``liars-eval --rules perudo --players 3 --agents probabilistic random random --games 2000
--seed 0 --out results.json`` plays the games with seats rotated (every agent plays
every seat equally often), in several processes if asked, and reports per agent: games,
wins, win rate with a 95% Wilson interval, mean finishing place and an openskill
(Plackett-Luce) rating from the finishing orders; plus pairwise head-to-head rates. It
prints a table, and writes JSON and a PNG plot when asked.

Results depend only on the rules, the agent specs, the number of games and the seed,
never on the number of worker processes.

The parts live in their own modules, and their public names are importable from here
as before: :mod:`~liars_train.evaluation.play`
(:func:`~liars_train.evaluation.play.evaluate`: playing the games, seats and seeds,
worker processes, budgets),
:mod:`~liars_train.evaluation.records` (recording them),
:mod:`~liars_train.evaluation.results` (the results model: rows, tables, plot,
statistics), :mod:`~liars_train.evaluation.progress` (the progress bar),
:mod:`~liars_train.evaluation.formats` (tables as text, Markdown or JSON) and
:mod:`~liars_train.evaluation.cli` (the ``liars-eval`` command).
"""

from __future__ import annotations

from liars_train.evaluation.cli import build_parser, main
from liars_train.evaluation.play import (
    CHUNK,
    evaluate,
    play_games,
    seat_assignment,
)
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
