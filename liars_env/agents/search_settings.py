"""The settings of ``search:SPEC`` (:class:`SearchSettings`) and the spec's parser.

What each setting does is in :mod:`liars_env.agents.search` and ``docs/search.md``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields
from typing import Any

from liars_env.agents.probabilistic import BOT_PRESETS

PRIOR_FLOOR = 1e-3
"""Added to the base's probability of every candidate in the choice rule, so that the
values can still pick a move the base all but rules out (a call it never makes)."""

DEPTHS = ("round", "game")
"""Named values of the ``depth`` setting (``method=resolve`` also takes a number)."""

LEAVES = ("call", "exact")
"""Values of the ``leaf`` setting (``method=resolve`` with a numeric ``depth``)."""

METHODS = ("rollout", "resolve")
"""Values of the ``method`` setting."""

RESOLVE_VALUES = ("solver", "base", "critic")
"""Values of the ``values`` setting (``method=resolve``)."""

BELIEFS = ("auto", "policy", "model", "robust", "mixed")
"""Values of the ``belief`` setting."""

CHOICE_RULES = {"mixed": (0.5, 0.02), "other": (1.0, 0.1)}
"""The choice rule's ``(prior, temperature)`` where the settings leave them unset: greedy
with the ``mixed`` belief, whose model of each opponent is checked against its bids (a
move's values can be trusted over the base's probabilities); the KL-regularised rule
at ``τ = 0.1`` with the others, whose model of the opponents is fixed (measured:
``docs/search.md``)."""


@dataclass(frozen=True)
class SearchSettings:
    """The settings of a search (``search:SPEC?key=value,...``)."""

    samples: int = 64
    """Deals of the hidden dice sampled from the belief per decision."""
    rollouts: int = 1
    """Playouts per candidate and deal."""
    candidates: int = 4
    """The base agent's most likely bids searched (every legal call is searched too)."""
    depth: str = "round"
    """``round``: play to the searcher's first decision after the round and score it
    (value head, or the dice left); ``game``: play to the end of the game. With
    ``method=resolve``: ``round`` (the default) solves to the round's end, a number
    ``N >= 2`` solves ``N`` bids ahead and values the leaves by ``leaf``
    (depth-limited re-solving)."""
    leaf: str = "call"
    """With ``method=resolve`` and a numeric ``depth``, the leaf value function:
    ``call`` (the standing bid called at once) or ``exact`` (the rest of the round
    solved from the leaf's ranges; small games only)."""
    temperature: float | None = None
    """``τ`` of the choice rule (see the module docstring); smaller is greedier.
    ``None``: by the belief (:data:`CHOICE_RULES`)."""
    prior: float | None = None
    """``α``, the weight of the base's probabilities in the choice rule (1: the
    KL-regularised rule; 0: a softmax of the values alone over the candidates).
    ``None``: by the belief (:data:`CHOICE_RULES`)."""
    belief: str = "auto"
    """How opponents are modelled: ``policy`` (the base agent's own probabilities),
    ``model`` (the belief model), ``auto`` (``mixed`` for a checkpoint, ``model``
    otherwise: asking a scalar bot for every hand is slow), ``robust``: ``samples``
    deals from each of the two, each move valued at the worse of its two mean returns
    (for opponents that may bid unlike the base; twice the playouts at the same
    ``samples``, while ``budget`` counts both), or ``mixed``: each opponent is either
    the base or one of the bots of ``types`` (half the prior on the base, the rest
    shared), its bids this round weigh those players as well as its hands (Bayesian
    model averaging), and in the playouts each opponent is played by the player drawn
    for it with its hand."""
    types: str = "probabilistic+cautious+bold+bayes+belief"
    """The bots a ``mixed`` belief considers besides the base, ``+``-separated presets
    (:data:`~liars_env.agents.probabilistic.BOT_PRESETS`)."""
    floor: float = 0.01
    """Share of a uniform choice mixed into the modelled bids (a real opponent is not
    the base agent: no hand is ruled out by one bid)."""
    seed: int = 0
    """Seeds every draw (with the position)."""
    budget: int = 0
    """Playouts per decision (``0``: not set). When set, ``samples`` is derived from it:
    the budget split over the candidates and rollouts (at least one deal)."""
    method: str = "rollout"
    """``rollout``: belief, playouts and choice as above. ``resolve``: solve the rest of
    the round at each decision (CFR+ on its public tree from the ranges the bids imply,
    continual re-solving; :mod:`liars_env.solver.resolve`), the later rounds valued as
    ``values`` says; only for 2-player games small enough for the solver, where it plays
    an equilibrium of each round and is hard to exploit (``docs/search.md``)."""
    iterations: int = 100
    """CFR+ iterations per decision with ``method=resolve``."""
    values: str = "solver"
    """With ``method=resolve``, what a later round is worth to its opener: ``solver``
    (its own solve from its first bid, the last rounds first), ``base`` (the base
    playing itself there) or ``critic`` (a checkpoint base's value network at the round's
    first decision, averaged over the opener's hands: a learned estimate)."""

    @property
    def resolve_depth(self) -> int | None:
        """The ``depth`` of ``method=resolve`` in bids, or ``None`` (to the round's end)."""
        if self.method != "resolve" or self.depth in DEPTHS:
            return None
        return int(self.depth)

    def __post_init__(self) -> None:
        for name in ("samples", "rollouts", "candidates", "iterations"):
            value = getattr(self, name)
            if type(value) is not int or value < 1:
                raise ValueError(f"search setting {name} must be a positive int, got {value!r}")
        for name in ("seed", "budget"):
            value = getattr(self, name)
            if type(value) is not int or value < 0:
                raise ValueError(f"search setting {name} must be an int >= 0, got {value!r}")
        if self.values not in RESOLVE_VALUES:
            raise ValueError(
                f"search setting values must be one of {RESOLVE_VALUES}, got {self.values!r}"
            )
        if self.method not in METHODS:
            raise ValueError(f"search setting method must be one of {METHODS}, got {self.method!r}")
        if self.depth not in DEPTHS:
            try:
                number = int(self.depth)
            except ValueError:
                number = 0
            if number < 2 or str(number) != self.depth.strip():
                raise ValueError(
                    f"search setting depth must be one of {DEPTHS} or, with method=resolve, "
                    f"a whole number of bids >= 2, got {self.depth!r}"
                )
            if self.method != "resolve":
                raise ValueError(
                    f"search setting depth={self.depth} (a number of bids) needs "
                    f"method=resolve; method={self.method} takes one of {DEPTHS}"
                )
        if self.leaf not in LEAVES:
            raise ValueError(f"search setting leaf must be one of {LEAVES}, got {self.leaf!r}")
        if self.leaf != "call" and self.resolve_depth is None:
            raise ValueError(
                f"search setting leaf={self.leaf} needs method=resolve with a numeric depth"
            )
        if self.belief not in BELIEFS:
            raise ValueError(f"search setting belief must be one of {BELIEFS}, got {self.belief!r}")
        for name in self.types.split("+"):
            if name not in BOT_PRESETS:
                raise ValueError(
                    f"search setting types must be presets joined by '+' (of "
                    f"{', '.join(BOT_PRESETS)}), got {self.types!r}"
                )
        if self.temperature is not None and not (
            isinstance(self.temperature, float) and 0 < self.temperature < math.inf
        ):
            raise ValueError(
                f"search setting temperature must be a positive number, got {self.temperature!r}"
            )
        if self.prior is not None and not (
            isinstance(self.prior, float) and 0.0 <= self.prior < math.inf
        ):
            raise ValueError(f"search setting prior must be a number >= 0, got {self.prior!r}")
        if not (isinstance(self.floor, float) and 0.0 <= self.floor < 1.0):
            raise ValueError(f"search setting floor must lie in [0, 1), got {self.floor!r}")


def parse_search_spec(spec: str) -> tuple[str, SearchSettings]:
    """The base spec and the settings of a ``search:`` spec.

    Example:
        >>> base, settings = parse_search_spec("search:belief?samples=32,temperature=0.2")
        >>> base, settings.samples, settings.temperature, settings.candidates
        ('belief', 32, 0.2, 4)
        >>> parse_search_spec("search:belief?sample=32")  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        ValueError: search spec 'search:belief?sample=32': unknown setting 'sample'; ...

    Raises:
        ValueError: for a spec that is not ``search:BASE[?key=value,...]``, an unknown
            key, a value of the wrong type or out of range, or both ``samples`` and
            ``budget`` set.
    """
    name, colon, rest = spec.partition(":")
    if name != "search" or not colon:
        raise ValueError(f"a search spec is 'search:BASE[?key=value,...]', got {spec!r}")
    base, question, items = rest.rpartition("?") if "?" in rest else (rest, "", "")
    if not base:
        raise ValueError(
            f"search spec {spec!r} names no base agent; expected e.g. "
            "'search:checkpoint:checkpoints/perudo_3p' or 'search:belief?samples=128'"
        )
    known = {f.name: f for f in fields(SearchSettings)}
    settings: dict[str, Any] = {}
    for item in items.split(",") if items else []:
        key, eq, value = (part.strip() for part in item.partition("="))
        if key not in known:
            raise ValueError(
                f"search spec {spec!r}: unknown setting {key!r}; expected key=value with "
                f"key one of {', '.join(known)}"
            )
        if not eq:
            raise ValueError(f"search spec {spec!r}: setting {key!r} needs a value (key=value)")
        kind = float if key in ("temperature", "prior") else type(getattr(SearchSettings, key))
        try:
            settings[key] = kind(value) if kind is not int else _int(value)
        except ValueError:
            raise ValueError(
                f"search spec {spec!r}: setting {key} must be {kind.__name__}, got {value!r}"
            ) from None
    if "samples" in settings and settings.get("budget"):
        raise ValueError(f"search spec {spec!r}: set samples or budget, not both")
    try:
        return base, SearchSettings(**settings)
    except ValueError as exc:
        raise ValueError(f"search spec {spec!r}: {exc}") from None


def _int(text: str) -> int:
    value = float(text)
    if value != int(value):
        raise ValueError(text)
    return int(value)
