"""Heuristic bots that reason with exact bid probabilities.

:class:`ProbabilisticAgent` knows only its own dice: the unseen dice are independent
and each matches with probability 1/F (2/F for a face with wild ones in force). It
challenges a bid that is unlikely enough, otherwise makes the legal raise it believes
most (conversions to and from ones included), sometimes bluffs, and makes the exact call
when that is its best bet.

:class:`BayesianAgent` also reads the opponents' bids as evidence about their dice: an
opponent who bid a face this round is taken to hold more of it (an exponential tilt of
the binomial prior, per bid), and one who bid other faces slightly fewer.

Under ``ones="jokers"`` a bid on ones is read as the rules count it, ones alone: the
probabilistic bots give an unseen one 1/F (and 2/F to a jokered face); ``bayes`` tilts the
count of ones up and, as for any other face, every other face's count slightly down,
though ones count there too; ``belief`` weighs the opponent's hands by their ones, so the
counts of every other face rise with them (docs/training.md, "Bids on ones under jokers").
"""

from __future__ import annotations

import copy
import functools
from dataclasses import dataclass, fields, replace

import numpy as np

from liars_env.agents.base import PlayerView
from liars_env.probability import (
    binomial_pmf,
    binomial_tail,
    count_pmf,
    hand_table,
    match_probability,
)
from liars_env.rules import RuleSet, count_matches, counts_as_match

TIE = 1e-9
"""Probabilities closer than this count as equal in every comparison the bots make, so
that twins computing the same number in different orders decide alike."""


@dataclass(frozen=True)
class ProbabilisticParams:
    """Settings of the probabilistic bots."""

    challenge_threshold: float = 0.5
    """Challenge when the current bid holds with less than this probability."""
    bluff_rate: float = 0.0
    """Chance of a bluff: a random legal raise the bot does not believe most."""
    exact_threshold: float = 0.3
    """Make the exact call when it is right with at least this probability (and is the
    best bet of all the options)."""
    evidence: float = 0.0
    """Bayesian weight of an opponent's bid on a face (log-odds per matching die; for
    ``bayes`` per face, for ``belief`` over the whole hand)."""
    counter_evidence: float = 0.0
    """Bayesian weight against a face for each of the opponent's bids on other faces."""
    follow_evidence: float = 0.0
    """``belief`` bot: ``evidence`` for a bid that keeps the face of the bid it raised
    (the bidder may only be following)."""
    bluff_floor: float = 1.0
    """``belief`` bot: weight the bidding model leaves for a bid its bidder did not
    believe (see :mod:`liars_env.agents.belief`); 1 means bids say nothing about hands."""

    def __post_init__(self) -> None:
        for f in fields(self):
            value = getattr(self, f.name)
            if not isinstance(value, (int, float)) or isinstance(value, bool):
                raise ValueError(f"{f.name} must be a number, got {value!r}")
        for name in ("challenge_threshold", "bluff_rate", "exact_threshold"):
            if not 0.0 <= getattr(self, name) <= 1.0:
                raise ValueError(f"{name} must lie in [0, 1], got {getattr(self, name)!r}")
        if not 0.0 < self.bluff_floor <= 1.0:
            raise ValueError(f"bluff_floor must lie in (0, 1], got {self.bluff_floor!r}")


BOT_PRESETS: dict[str, ProbabilisticParams] = {
    "probabilistic": ProbabilisticParams(challenge_threshold=0.5, bluff_rate=0.05),
    "cautious": ProbabilisticParams(challenge_threshold=0.6, bluff_rate=0.0, exact_threshold=0.4),
    "bold": ProbabilisticParams(challenge_threshold=0.35, bluff_rate=0.2, exact_threshold=0.25),
    "bayes": ProbabilisticParams(
        challenge_threshold=0.5, bluff_rate=0.05, evidence=1.0, counter_evidence=0.15
    ),
    "belief": ProbabilisticParams(
        challenge_threshold=0.5,
        bluff_rate=0.0,
        evidence=0.5,
        follow_evidence=0.0,
        bluff_floor=0.25,
    ),
}
"""Named bots: ``probabilistic`` (the default), ``cautious``, ``bold``, the Bayesian
``bayes``, and ``belief``, the strongest, which weighs every possible hand of each
opponent by how likely that opponent's bids were with it."""


def bot_params(spec: str) -> tuple[str, ProbabilisticParams]:
    """The preset a bot spec names and its settings.

    A spec is a preset name (``bold``) or a preset with some settings changed
    (``NAME:key=value,...``); the scalar bots (:func:`liars_env.agents.make_agent`) and
    their batched twins (:func:`liars_env.agents.batched.make_batched_bot`) read it alike.

    Example:
        >>> bot_params("bold")[1].bluff_rate
        0.2
        >>> name, params = bot_params("belief:challenge_threshold=0.6,bluff_rate=0.1")
        >>> name, params.challenge_threshold, params.bluff_rate, params.evidence
        ('belief', 0.6, 0.1, 0.5)

    Raises:
        ValueError: for a name that is not a preset, a setting that is not a field of
            :class:`ProbabilisticParams`, or a value that is not a number or out of range.
    """
    name, _, arg = spec.partition(":")
    if name not in BOT_PRESETS:
        raise ValueError(f"no bot {name!r}; expected one of {', '.join(BOT_PRESETS)}")
    params = BOT_PRESETS[name]
    if not arg:  # "bold" or "bold:": the preset as it is
        return name, params
    known = {f.name for f in fields(ProbabilisticParams)}
    settings = {}
    for item in arg.split(","):
        key, eq, value = item.partition("=")
        key = key.strip()
        if not eq or key not in known:
            raise ValueError(
                f"bad setting {item!r} in bot spec {spec!r}; expected key=value with key "
                f"one of {', '.join(sorted(known))}"
            )
        try:
            settings[key] = float(value)
        except ValueError:
            raise ValueError(
                f"setting {key} in bot spec {spec!r} must be a number, got {value!r}"
            ) from None
    try:
        return name, replace(params, **settings)
    except ValueError as exc:
        raise ValueError(f"bot spec {spec!r}: {exc}") from None


def bluff_bids(bid_ids: np.ndarray, faces: int) -> np.ndarray:
    """The bids a bluff is drawn from (uniformly): the ``2·F`` lowest legal bids."""
    return bid_ids[: 2 * faces]


@functools.lru_cache(maxsize=4096)
def _tails(rules: RuleSet, hands: tuple, unseen: int, palifico: bool) -> np.ndarray:
    """:meth:`ProbabilisticAgent.tail_table` of the hands counted and ``unseen`` dice."""
    width = rules.max_quantity + 2
    table = np.zeros((rules.faces + 1, width))
    q = np.arange(width)
    for face in range(1, rules.faces + 1):
        known = count_matches(rules, hands, face, palifico=palifico)
        btail = binomial_tail(unseen, match_probability(rules, face, palifico=palifico))
        table[face] = btail[np.clip(q - known, 0, unseen + 1)]
    table.setflags(write=False)
    return table


class ProbabilisticAgent:
    """A bot that acts on the exact probability of bids from its own dice.

    Args:
        params: Its settings (default: the ``probabilistic`` preset).
        seed: Seeds the bluffs.
        name: Display name.
    """

    def __init__(
        self,
        params: ProbabilisticParams | None = None,
        seed: int | None = None,
        name: str = "probabilistic",
    ) -> None:
        self.params = params or BOT_PRESETS["probabilistic"]
        self.name = name
        self.rng = np.random.default_rng(seed)

    def reset(self, seed: int | None = None) -> None:
        """Reseeds the bluffs."""
        if seed is not None:
            self.rng = np.random.default_rng(seed)

    # ---------------------------------------------------------------- beliefs
    def counted_seats(self, view: PlayerView, bidder: int) -> list[int]:
        """Seats whose dice a bid by ``bidder`` is about."""
        if view.rules.hand == "individual":
            return [bidder]
        return [s for s, n in enumerate(view.dice_left) if n > 0]

    def count_distribution(self, view: PlayerView, face: int, bidder: int) -> np.ndarray:
        """``P(count == c)`` at a reveal of a bid on ``face`` by ``bidder``."""
        counted = self.counted_seats(view, bidder)
        return count_pmf(
            view.rules,
            face,
            own_dice=view.dice,
            own_counted=view.seat in counted,
            unseen_dice=sum(view.dice_left[s] for s in counted if s != view.seat),
            palifico=view.palifico,
        )

    def tail_table(self, view: PlayerView, bidder: int) -> np.ndarray:
        """``T[f, q] = P(count >= q)`` for a bid on face ``f`` by ``bidder``.

        Shape ``(F + 1, Q + 2)``; row 0 is unused. Equal to the tails of
        :meth:`count_distribution`, computed without building every pmf. Read-only:
        the same table serves every view with the same hand, unseen dice and rules.
        """
        counted = self.counted_seats(view, bidder)
        own = view.seat in counted
        unseen = sum(view.dice_left[s] for s in counted if s != view.seat)
        hands = (tuple(sorted(int(d) for d in view.dice)),) if own else ()
        return _tails(view.rules, hands, unseen, bool(view.palifico))

    # ---------------------------------------------------------------- decisions
    def act(self, view: PlayerView) -> int:
        """Challenges, calls exact or raises (see the module docstring)."""
        codec, params = view.codec, self.params
        bid_ids = np.flatnonzero(view.mask[: codec.num_bids])
        mine = self.tail_table(view, view.seat)
        best_raise, p_raise = None, -1.0
        if len(bid_ids):
            raise_p = mine[codec.bid_face[bid_ids], codec.bid_quantity[bid_ids]]
            p_raise = float(raise_p.max())
            best_raise = int(bid_ids[np.flatnonzero(raise_p >= p_raise - TIE)[-1]])
            if self.rng.random() < params.bluff_rate:
                bluffs = bluff_bids(bid_ids, codec.faces)
                return int(bluffs[self.rng.integers(len(bluffs))])
        if view.current_bid is None:
            return best_raise
        bidder, quantity, face = view.bids[-1]
        current = mine if view.rules.hand == "common" else self.tail_table(view, bidder)
        p_true = float(current[face, quantity])
        if codec.exact is not None and self._exact_worthwhile(view):
            p_exact = p_true - float(current[face, quantity + 1])
            if (
                p_exact >= params.exact_threshold - TIE
                and p_exact >= max(1 - p_true, p_raise) - TIE
            ):
                return codec.exact
        if (
            best_raise is None
            or p_true < params.challenge_threshold - TIE
            or p_raise < 1 - p_true - TIE
        ):
            return codec.challenge
        return best_raise

    def action_probabilities(self, view: PlayerView) -> np.ndarray:
        """The exact distribution of :meth:`act` at ``view`` (length ``num_actions``).

        With chance ``bluff_rate`` (when a bid is legal) :meth:`act` bluffs, uniformly among
        the first ``2·F`` legal bids; otherwise it plays its planned action, which depends
        on the view alone. Leaves the bot's random state untouched.
        """
        codec = view.codec
        planner = self._planner()
        probs = np.zeros(codec.num_actions)
        probs[planner.act(view)] = 1.0
        bid_ids = np.flatnonzero(view.mask[: codec.num_bids])
        if len(bid_ids) and self.params.bluff_rate > 0:
            bluffs = bluff_bids(bid_ids, codec.faces)
            probs *= 1.0 - self.params.bluff_rate
            probs[bluffs] += self.params.bluff_rate / len(bluffs)
        return probs

    def _planner(self) -> ProbabilisticAgent:
        """A copy that never bluffs (its planned actions), kept while ``params`` is."""
        kept = self.__dict__.get("_plan")
        if kept is None or kept[0] is not self.params:
            planner = copy.copy(self)
            planner.__dict__.pop("_plan", None)
            planner.params = replace(self.params, bluff_rate=0.0)
            planner.rng = np.random.default_rng(0)
            self._plan = kept = (self.params, planner)
        return kept[1]

    def _exact_worthwhile(self, view: PlayerView) -> bool:
        # calza at full dice cannot gain anything and risks a die
        return not (
            view.rules.exact_call == "calza"
            and view.dice_left[view.seat] >= view.rules.dice_per_player
        )


class BayesianAgent(ProbabilisticAgent):
    """A probabilistic bot that updates its beliefs on the opponents' bids this round.

    For a face ``f`` and an opponent with ``n`` dice, the prior on its matching dice
    ``k`` is Binomial(``n``, p); each of its bids on ``f`` multiplies the weight of ``k``
    by ``exp(evidence·k)``, each of its bids on another face by
    ``exp(−counter_evidence·k)``. The count distribution is the viewer's own matches
    plus the convolution of the opponents' posteriors.
    """

    def __init__(
        self,
        params: ProbabilisticParams | None = None,
        seed: int | None = None,
        name: str = "bayes",
    ) -> None:
        super().__init__(params or BOT_PRESETS["bayes"], seed=seed, name=name)

    def count_distribution(self, view: PlayerView, face: int, bidder: int) -> np.ndarray:
        """Posterior ``P(count == c)`` given the opponents' bids this round."""
        rules, params = view.rules, self.params
        counted = self.counted_seats(view, bidder)
        p = match_probability(rules, face, palifico=view.palifico)
        known = 0
        if view.seat in counted:
            known = sum(counts_as_match(rules, d, face, palifico=view.palifico) for d in view.dice)
        total = np.zeros(known + 1)
        total[known] = 1.0
        for seat in counted:
            if seat == view.seat:
                continue
            n = view.dice_left[seat]
            same = sum(1 for s, _, f in view.bids if s == seat and f == face)
            other = sum(1 for s, _, f in view.bids if s == seat and f != face)
            weight = params.evidence * same - params.counter_evidence * other
            posterior = binomial_pmf(n, p)
            if weight:
                posterior = posterior * np.exp(weight * np.arange(n + 1))
                posterior /= posterior.sum()
            total = np.convolve(total, posterior)
        return total

    def tail_table(self, view: PlayerView, bidder: int) -> np.ndarray:
        """Tails of the posterior :meth:`count_distribution` for every face."""
        rules = view.rules
        table = np.zeros((rules.faces + 1, rules.max_quantity + 2))
        for face in range(1, rules.faces + 1):
            pmf = self.count_distribution(view, face, bidder)
            at_least = np.cumsum(pmf[::-1])[::-1]
            table[face, : len(at_least)] = np.minimum(at_least, 1.0)
        return table


class BeliefAgent(ProbabilisticAgent):
    """A probabilistic bot that weighs each opponent's possible hands by its bids.

    The plain-numpy reference of :class:`liars_env.agents.belief.BeliefModel` (same bidding
    model, same numbers): for every opponent, every multiset of its dice gets its
    multinomial prior times ``(ε + (1 − ε)·P(bid holds | that hand))·exp(λ·m)`` for each
    of its bids this round (``ε`` = ``params.bluff_floor``, ``λ`` = ``params.evidence``,
    ``m`` the hand's dice counting as the bid's face); the count at a reveal is the
    viewer's own matches plus the opponents' posterior matches. With individual hands a
    bid is about its bidder's dice alone: its count is the bidder's posterior matches
    (or the viewer's own, for its own bid).
    """

    def __init__(
        self,
        params: ProbabilisticParams | None = None,
        seed: int | None = None,
        name: str = "belief",
    ) -> None:
        super().__init__(params or BOT_PRESETS["belief"], seed=seed, name=name)

    def opponent_matches(self, view: PlayerView, seat: int) -> np.ndarray:
        """``M[f, k]``: posterior chance that ``seat`` holds ``k`` dice counting as ``f``."""
        rules, eps = view.rules, self.params.bluff_floor
        n, faces = view.dice_left[seat], rules.faces
        wild, wild_die = rules.ones_wild and not view.palifico, rules.wild_die
        _, hands, log_w = hand_table(n, faces)
        matches = hands.copy()
        if wild:  # the wild face counts for every other face (column 0 is unused)
            others = [f for f in range(1, faces + 1) if f != wild_die]
            matches[:, others] += hands[:, wild_die : wild_die + 1]
        # what the bidder could not see when it bid: nothing, with individual hands
        unseen = sum(view.dice_left) - n if rules.hand == "common" else 0
        for i, (bidder, quantity, face) in enumerate(view.bids):
            if bidder != seat:
                continue
            tail = binomial_tail(unseen, match_probability(rules, face, palifico=view.palifico))
            holds = tail[np.clip(quantity - matches[:, face], 0, unseen + 1)]
            follows = i > 0 and view.bids[i - 1][2] == face
            lam = self.params.follow_evidence if follows else self.params.evidence
            log_w = log_w + np.log(eps + (1 - eps) * holds) + lam * matches[:, face]
        post = np.exp(log_w - log_w.max())
        post /= post.sum()
        out = np.zeros((faces + 1, n + 1))
        for face in range(1, faces + 1):
            out[face] = np.bincount(matches[:, face], weights=post, minlength=n + 1)
        return out

    def count_distribution(self, view: PlayerView, face: int, bidder: int) -> np.ndarray:
        """Posterior ``P(count == c)`` at a reveal of a bid on ``face``."""
        table = self.tail_table(view, bidder)[face]
        return table[:-1] - table[1:]

    def tail_table(self, view: PlayerView, bidder: int) -> np.ndarray:
        """Tails of :meth:`count_distribution` for every face (one posterior per seat)."""
        rules = view.rules
        counted = self.counted_seats(view, bidder)
        hands = (tuple(int(d) for d in view.dice),) if view.seat in counted else ()
        per_seat = [
            self.opponent_matches(view, seat)
            for seat in counted
            if seat != view.seat and view.dice_left[seat]
        ]
        table = np.zeros((rules.faces + 1, rules.max_quantity + 2))
        for face in range(1, rules.faces + 1):
            known = count_matches(rules, hands, face, palifico=view.palifico)
            total = np.zeros(known + 1)
            total[known] = 1.0
            for matches in per_seat:
                total = np.convolve(total, matches[face])
            at_least = np.minimum(np.cumsum(total[::-1])[::-1], 1.0)
            table[face, : len(at_least)] = at_least
        return table
