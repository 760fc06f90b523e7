"""The exact exploitability of an agent that can only be sampled (a language model, say).

:func:`~liars_env.solver.exploitability.exploit` needs the agent's action distribution
at every information set. An agent that only answers (a text agent, or any agent with
``act`` alone) is asked ``samples`` times at each information set instead, and the
empirical distribution of its answers is its policy there:

* at temperature 0 one answer per information set is the agent's (deterministic)
  policy, and the exploitability is exact;
* with ``k`` samples the result is the exact exploitability of the empirical policy, and
  its error bar comes from a parametric bootstrap: every information set's ``k``
  answers are redrawn from their empirical distribution, ``bootstrap`` times, and the
  exploitability recomputed (no new calls). With ``k = 1`` the bootstrap has nothing to
  vary, so the error bar is 0: right at temperature 0, and an understatement above it.

Agents with ``sample_moves(views, k)`` (the ``llm:`` agent: it sends the requests
concurrently and caches them) are asked through it; others through ``act``, ``k``
times per view. Budget first: :func:`information_sets` is the number of views the
computation asks about, so ``information_sets × samples`` calls in all.

Example:
    >>> from liars_env.agents import make_agent
    >>> rules = RuleSet.preset("perudo", num_players=2, dice_per_player=1, faces=3)
    >>> result = exploit_sampled(make_agent("cautious", rules), rules, samples=1)
    >>> result.calls == information_sets(rules), round(result.std_error, 9)
    (True, 0.0)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from liars_env.observation import PlayerView
from liars_env.rules import RuleSet
from liars_env.solver.exploitability import Exploitation, exploit
from liars_env.solver.graph import RoundState, RoundTree, round_states


def information_sets(
    rules: RuleSet,
    trees: dict[RoundState, RoundTree] | None = None,
    seats: tuple[int, ...] = (0, 1),
) -> int:
    """How many views :func:`exploit` asks an agent about (its information sets, per seat).

    Raises:
        ValueError: for rules the solver cannot build.
    """
    if trees is None:
        _, trees = round_states(rules)
    per_seat = sum(
        depth.num_nodes * len(tree.hands[depth.actor])
        for tree in trees.values()
        for depth in tree.depths
    )
    return per_seat * len(seats)


def view_key(view: PlayerView) -> tuple:
    """What identifies an information set: the seat's view, without its arrays."""
    return (view.seat, view.dice, view.dice_left, view.bids, view.opener, view.palifico)


class _Sampler:
    """Asks an agent ``samples`` times per view; keeps the answers; gives the frequencies."""

    def __init__(self, agent: Any, samples: int, total: int = 0, progress: Any = None) -> None:
        self.agent = agent
        self.samples = samples
        self.total, self.progress = total, progress
        self.name = str(getattr(agent, "name", type(agent).__name__))
        self.answers: dict[tuple, list[int]] = {}

    def action_probabilities_batch(self, views: list[PlayerView]) -> np.ndarray:
        sample = getattr(self.agent, "sample_moves", None)
        if callable(sample):
            moves = sample(views, self.samples)
        else:
            moves = [[int(self.agent.act(v)) for _ in range(self.samples)] for v in views]
        out = np.zeros((len(views), views[0].codec.num_actions if views else 0))
        for row, (view, picks) in enumerate(zip(views, moves, strict=True)):
            self.answers[view_key(view)] = list(picks)
            np.add.at(out[row], np.asarray(picks, dtype=np.int64), 1.0 / len(picks))
        if self.progress is not None:
            usage = getattr(self.agent, "usage", None) or {}
            spent = ""
            if usage:
                tokens = usage.get("prompt_tokens", 0) + usage.get("completion_tokens", 0)
                spent = (
                    f"; {usage.get('requests', 0)} requests, {usage.get('cached', 0)} cached, "
                    f"{tokens:,} tokens, {usage.get('fallbacks', 0)} fallbacks"
                )
            self.progress(
                f"{self.name}: {len(self.answers)}/{self.total} information sets asked{spent}"
            )
        return out


class _Redrawn:
    """The sampler's answers, each information set's redrawn from its own frequencies."""

    def __init__(self, answers: dict[tuple, list[int]], rng: np.random.Generator, name: str):
        self.answers, self.rng, self.name = answers, rng, name

    def action_probabilities_batch(self, views: list[PlayerView]) -> np.ndarray:
        out = np.zeros((len(views), views[0].codec.num_actions if views else 0))
        for row, view in enumerate(views):
            picks = np.asarray(self.answers[view_key(view)], dtype=np.int64)
            redrawn = picks[self.rng.integers(len(picks), size=len(picks))]
            np.add.at(out[row], redrawn, 1.0 / len(picks))
        return out


@dataclass
class SampledExploitation:
    """The exploitability of a sampled agent's empirical policy, with its error bar.

    Attributes:
        exploitation: The exact result for the empirical policy.
        samples: Answers per information set.
        calls: Views asked times samples (answers asked for; cached ones cost nothing).
        information_sets: Views asked.
        bootstrap: Bootstrap redraws behind the error bar (0: none).
        std_error: The bootstrap's standard deviation of the exploitability.
        interval: Its 2.5 % and 97.5 % quantiles (the point value twice without redraws).
    """

    exploitation: Exploitation
    samples: int
    calls: int
    information_sets: int
    bootstrap: int
    std_error: float
    interval: tuple[float, float]

    @property
    def exploitability(self) -> float:
        """The empirical policy's exploitability."""
        return self.exploitation.exploitability

    def to_dict(self) -> dict[str, Any]:
        """A JSON-able dict: :meth:`Exploitation.to_dict` plus a ``sampled`` entry."""
        return {
            **self.exploitation.to_dict(),
            "sampled": {
                "samples": self.samples,
                "calls": self.calls,
                "information_sets": self.information_sets,
                "bootstrap": self.bootstrap,
                "std_error": self.std_error,
                "interval95": list(self.interval),
            },
        }


def exploit_sampled(
    agent: Any,
    rules: RuleSet,
    *,
    samples: int = 1,
    trees: dict[RoundState, RoundTree] | None = None,
    seats: tuple[int, ...] = (0, 1),
    bootstrap: int = 100,
    seed: int = 0,
    progress: Any = None,
) -> SampledExploitation:
    """The exact exploitability of ``agent``'s empirical policy from ``samples`` answers.

    Args:
        agent: Any agent (asked through ``sample_moves`` or ``act``).
        rules: A 2-player rule set small enough to solve.
        samples: Answers per information set.
        trees: The round states (default: built from ``rules``).
        seats: The agent's seats to evaluate (see :func:`exploit`).
        bootstrap: Redraws for the error bar (0: none; nothing to redraw with 1 sample).
        seed: Seeds the redraws.
        progress: Called with a line after each batch of views (a tree depth): how
            many information sets were asked, and what a text agent spent so far.

    Raises:
        ValueError: for unsupported rules, or ``samples``/``bootstrap`` out of range.
    """
    if type(samples) is not int or samples < 1:
        raise ValueError(f"samples must be a positive int, got {samples!r}")
    if type(bootstrap) is not int or bootstrap < 0:
        raise ValueError(f"bootstrap must be a non-negative int, got {bootstrap!r}")
    if trees is None:
        _, trees = round_states(rules)
    sampler = _Sampler(agent, samples, information_sets(rules, trees, seats), progress)
    result = exploit(sampler, rules, trees=trees, seats=seats)
    sets = len(sampler.answers)
    values = []
    if samples > 1:
        rng = np.random.default_rng(seed)
        for _ in range(bootstrap):
            redrawn = _Redrawn(sampler.answers, rng, sampler.name)
            values.append(exploit(redrawn, rules, trees=trees, seats=seats).exploitability)
    if values:
        std = float(np.std(values, ddof=1)) if len(values) > 1 else 0.0
        interval = (float(np.quantile(values, 0.025)), float(np.quantile(values, 0.975)))
    else:
        std, interval = 0.0, (result.exploitability, result.exploitability)
    return SampledExploitation(
        exploitation=result,
        samples=samples,
        calls=sets * samples,
        information_sets=sets,
        bootstrap=len(values),
        std_error=std,
        interval=interval,
    )
