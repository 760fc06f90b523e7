"""Search at play time: ``search:SPEC``, any player made stronger by looking ahead.

At each decision the :class:`SearchAgent` does what the strongest programs for
imperfect-information games do at decision time (ReBeL, Student of Games, Pluribus's
depth-limited search), in the simplest form that fits Liar's Dice, where the only unknown
is the other players' dice:

1. **Belief.** It weighs every hand each opponent might hold by how likely that
   opponent's bids this round were with it, and samples ``samples`` deals of the hidden
   dice from those weights. The model of how players bid is the base agent itself
   (``belief=policy``: the base policy's own probability of each bid, asked at the
   position the bidder was in, holding the hand in question); or, the default for a
   checkpoint, the base *or* one of the bots (``belief=mixed``: each opponent's bids
   weigh who it is as well as its hand, and the playouts let the player drawn for it
   play its seat); or, where asking the base for every hand is too slow (the scalar
   bots), the belief model of :mod:`liars_env.agents.belief` (``belief=model``). Given
   the public bids the opponents' hands are independent (each bid depends only on its
   bidder's own hand and the public history), so each opponent's weights are computed
   on their own: exactly, by enumerating its hands (multisets of faces, 252 for 5 dice
   of 6 faces).
2. **Rollouts.** Its candidate moves are the base agent's ``candidates`` most likely bids
   plus every legal call. For every candidate and sampled deal (``rollouts`` times) it
   starts a game at the position on the batched engine
   (:meth:`liars_env.batched.BatchedEnv.set_positions`), plays the candidate, and lets the
   base agent (or the player drawn for a seat) play every seat: to the end of the round
   and up to the searcher's next decision (``depth=round``), where the base's value
   head scores the position (or, for a base without one, the dice it leaves: see
   :func:`dice_value`), or to the end of the game (``depth=game``). Leaving the game
   counts as a loss at once, winning it as a win.
3. **Choice.** With ``Q(a)`` the mean return of candidate ``a`` and ``π(a)`` the base
   agent's probability of it, the search plays

   ``π_search(a) ∝ (π(a) + 0.001)^α · exp(Q(a) / τ)``

   over the candidates (0 elsewhere), ``α = prior`` and ``τ = temperature``. With
   ``α = 1`` this is the policy that maximises ``E[Q] − τ · KL(π_search ‖ π)``, a
   regularised policy improvement; a smaller ``α`` and ``τ`` let the values overrule a
   confident base more easily. Unset, they follow the belief (:data:`CHOICE_RULES`):
   ``α = 0.5, τ = 0.02`` with ``mixed``, whose model of each opponent is checked
   against its bids, and the hedged ``α = 1, τ = 0.1`` with the fixed models, where a
   greedy choice loses to players who bid unlike the model (``docs/search.md`` has
   the figures).
   :meth:`SearchAgent.action_probabilities` returns this distribution, so
   :func:`liars_env.solver.exploit` measures the search exactly on small games;
   :meth:`SearchAgent.act` samples from it.

On a 2-player game small enough for the solver, ``method=resolve`` replaces the three steps
by a solve of the rest of the round at each decision (continual re-solving with CFR+,
:mod:`liars_env.solver.resolve`), the base valuing the rounds after it: an equilibrium
search, hard to exploit where the rollouts' one-step improvement against the base is not.

Settings, in the spec after a ``?`` as ``key=value`` items separated by commas (the
items of a bot spec, ``NAME:key=value,...``): ``search:checkpoint:checkpoints/perudo_3p``,
``search:belief?samples=128,temperature=0.05``. See :class:`SearchSettings` for each key
and its default. Every random draw of a search comes from generators seeded by
``seed`` and the position, so the distribution at a position is a function of the
position (and the same seed plays the same moves).
"""

from __future__ import annotations

import zlib
from collections import OrderedDict
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import torch

from liars_env.agents.base import PlayerView
from liars_env.agents.belief import BeliefModel
from liars_env.agents.probabilistic import BOT_PRESETS, bot_params
from liars_env.agents.search_bases import (
    _as_numpy,
    _Base,
    _BotBase,
    _is_batched_bot,
    _NetworkBase,
    _ScalarBase,
    dice_value,
)
from liars_env.agents.search_belief import SearchBelief
from liars_env.agents.search_playouts import SearchPlayouts
from liars_env.agents.search_settings import (
    BELIEFS,
    CHOICE_RULES,
    DEPTHS,
    METHODS,
    PRIOR_FLOOR,
    RESOLVE_VALUES,
    SearchSettings,
    parse_search_spec,
)
from liars_env.batched import BatchedEnv
from liars_env.engine import LiarsDiceGame
from liars_env.observation import ObservationLayout, view_of
from liars_env.probability import hand_table
from liars_env.rules import RuleSet
from liars_env.solver.exploitability import round_position
from liars_env.solver.graph import RoundState
from liars_env.solver.resolve import SubgameResolver

__all__ = [
    "BELIEFS",
    "DEPTHS",
    "METHODS",
    "RESOLVE_VALUES",
    "SearchAgent",
    "SearchResult",
    "SearchSettings",
    "dice_value",
    "parse_search_spec",
    "replace_settings",
]


# --------------------------------------------------------------------------- search
@dataclass
class SearchResult:
    """One decision's search, for inspection.

    Attributes:
        candidates: The candidate action ids.
        prior: The base agent's probability of each candidate.
        values: The mean return of each candidate.
        probabilities: The search's distribution over every action.
    """

    candidates: np.ndarray
    prior: np.ndarray
    values: np.ndarray
    probabilities: np.ndarray


class SearchAgent(SearchBelief, SearchPlayouts):
    """The base agent ``base`` with search at every decision (see the module docstring).

    Its belief models are :class:`~liars_env.agents.search_belief.SearchBelief`'s, its
    playouts :class:`~liars_env.agents.search_playouts.SearchPlayouts`'; this class holds
    the state they share, the agent interface, the candidates and the choice rule.

    Args:
        base: The base agent; it needs ``action_probabilities(view)``.
        rules: The game.
        settings: The search's settings.
        base_spec: The base's spec: a bot spec gets its batched twin for the rollouts,
            ``checkpoint:PATH`` its network; any other agent is asked game by game.
        seed: Seeds :meth:`act`'s draw from the search's distribution.
        name: Display name.

    Attributes:
        oracle: Test-only: a function from a view to every seat's true dice; when set,
            the search plays out the true deal instead of sampling deals (a searcher
            that sees the hidden dice, as an upper bound on what sampling can give).
    """

    ROW_LIMIT = 1 << 15
    """Most rollout games one batch holds (larger searches are split into chunks)."""

    def __init__(
        self,
        base: Any,
        rules: RuleSet,
        settings: SearchSettings | None = None,
        base_spec: str = "",
        seed: int | None = None,
        name: str = "search",
    ) -> None:
        if not callable(getattr(base, "action_probabilities", None)):
            raise ValueError(
                f"search needs a base agent with action_probabilities(view); "
                f"{base_spec or getattr(base, 'name', base)!r} has none"
            )
        if isinstance(base, SearchAgent):
            raise ValueError("search over a search agent is not supported")
        if rules.hand != "common":
            raise ValueError("search needs hand='common' (the batched engine's rules)")
        self.rules = rules
        self.settings = settings or SearchSettings()
        self.name = name
        self.base_agent = base
        self.base_spec = base_spec
        if base_spec.startswith("checkpoint:") and hasattr(base, "model"):
            self.base: _Base = _NetworkBase(base, rules)
        elif _is_batched_bot(base_spec):
            self.base = _BotBase(base, rules, base_spec)
        else:
            self.base = _ScalarBase(base, rules)
        belief = self.settings.belief
        if belief == "auto":
            belief = "mixed" if isinstance(self.base, _NetworkBase) else "model"
        self.belief = belief
        # the choice rule's (α, τ): the settings', or CHOICE_RULES' where they are unset
        prior, temperature = CHOICE_RULES["mixed" if belief == "mixed" else "other"]
        self.choice = (
            prior if self.settings.prior is None else self.settings.prior,
            temperature if self.settings.temperature is None else self.settings.temperature,
        )
        self.game = LiarsDiceGame(rules)
        self.layout = ObservationLayout(rules)
        self.codec = self.game.codec
        if belief in ("model", "robust"):
            params = BOT_PRESETS["belief"]
            if base_spec.partition(":")[0] == "belief":
                params = bot_params(base_spec)[1]
            self.model = BeliefModel(
                rules, params.bluff_floor, params.evidence, params.follow_evidence, torch.float64
            )
        tables = [hand_table(n, rules.faces) for n in range(1, rules.dice_per_player + 1)]
        self._hands = [(np.zeros((1, 0), np.int64), np.zeros(1))]
        self._hands += [(hands, log_prior) for hands, _, log_prior in tables]
        # (H, F) dice of each face in each hand (the table's column 0 is unused)
        self._counts = [np.zeros((1, rules.faces), np.int64)]
        self._counts += [counts[:, 1:].copy() for _, counts, _ in tables]
        self._own_values = torch.tensor(self.layout.own_dice_values, dtype=torch.float32)
        self._envs: OrderedDict[int, BatchedEnv] = OrderedDict()
        self._bots: dict[tuple[int, int], Any] = {}
        self._bot_seed = 0
        # the likelihoods of each bid seen (a function of the bid's position), and for
        # belief=mixed the batches that work out the bots' and the bots asked there
        self._likelihoods: OrderedDict[tuple, np.ndarray] = OrderedDict()
        self._envs_for_bids: dict[int, BatchedEnv] = {}
        self._likelihood_bots: dict[tuple[int, str], Any] = {}
        self.oracle = None
        self.rng = np.random.default_rng(seed)
        self.resolver = None
        if self.settings.method == "resolve":
            values: Any = self.settings.values
            if values == "critic":
                if not isinstance(self.base, _NetworkBase):
                    raise ValueError(
                        "search setting values=critic needs a checkpoint base (a value "
                        f"network), got {base_spec!r}"
                    )
                values = self._critic_value
            try:
                self.resolver = SubgameResolver(
                    base,
                    rules,
                    self.settings.iterations,
                    values=values,
                    depth=self.settings.resolve_depth,
                    leaf=self.settings.leaf,
                )
            except ValueError as exc:
                raise ValueError(
                    f"search setting method=resolve needs a 2-player game small enough for "
                    f"the solver: {exc}"
                ) from None

    def _critic_value(self, key: RoundState) -> float:
        """``values=critic``: the base's value network's estimate of round ``key``.

        The value head at the opener's first decision of the round, averaged over the
        opener's hands by their chance (the network's estimate of the opener's return).
        """
        tree = self.resolver.trees[key]
        views = [
            view_of(
                self.game,
                self.layout,
                round_position(tree, 0, 0, [], hand, key == self.resolver.start),
                0,
            )
            for hand in tree.hands[0]
        ]
        obs = torch.from_numpy(np.stack([v.observation for v in views]))
        mask = torch.from_numpy(np.stack([v.mask > 0 for v in views]))
        with torch.no_grad():
            values = self.base.values(obs, mask).numpy()
        return float(tree.probs[0] @ values)

    # ------------------------------------------------------------------ agent
    def reset(self, seed: int | None = None) -> None:
        """Reseeds :meth:`act`'s draws (the search's own draws depend on the position)."""
        if seed is not None:
            self.rng = np.random.default_rng(seed)

    def act(self, view: PlayerView) -> int:
        """Searches and samples a move from :meth:`action_probabilities`."""
        probs = self.action_probabilities(view)
        return int(self.rng.choice(len(probs), p=probs / probs.sum()))

    def action_probabilities(self, view: PlayerView) -> np.ndarray:
        """The search's distribution at ``view`` (a function of the view and ``seed``)."""
        return self.search([view])[0].probabilities

    def action_probabilities_batch(self, views: list[PlayerView]) -> np.ndarray:
        """:meth:`action_probabilities` of many views in one batched search, ``(len, A)``.

        The draws are seeded by ``seed`` and all the views together, so a view's row is
        a function of the batch it is asked in (exactly what
        :func:`liars_env.solver.exploit` needs: it asks every information state once and
        measures the table it was given); :meth:`action_probabilities` asks one view alone.
        """
        return np.stack([r.probabilities for r in self.search(views)])

    def act_batch(self, env: BatchedEnv, rows: torch.Tensor, generator: torch.Generator):
        """Moves for the acting players of ``env``'s games ``rows`` (one batched search)."""
        states = env.states(rows)
        results = self.search([view_of(self.game, self.layout, s) for s in states])
        probs = torch.from_numpy(np.stack([r.probabilities for r in results]))
        return torch.multinomial(probs, 1, generator=generator).squeeze(1).to(env.device)

    # ------------------------------------------------------------------ search
    def search(self, views: list[PlayerView]) -> list[SearchResult]:
        """Searches at every view (in batches of rollout games); see the module docstring."""
        if self.resolver is not None:
            return [self._resolved(view) for view in views]
        out: list[SearchResult] = []
        per_view = self._playouts_per_view()
        step = max(1, self.ROW_LIMIT // per_view)
        for start in range(0, len(views), step):
            out += self._search(views[start : start + step])
        return out

    def _resolved(self, view: PlayerView) -> SearchResult:
        """``method=resolve``: the re-solved strategy at ``view``.

        Every legal move is a candidate; the solve gives no per-move values (``nan``).
        """
        probs = self.resolver.action_probabilities(view)
        legal = np.flatnonzero(view.mask)
        prior = _as_numpy(self.base_agent.action_probabilities(view))[legal]
        return SearchResult(legal, prior, np.full(len(legal), np.nan), probs)

    def _width(self) -> int:
        """Candidates per decision: the bids searched and the calls."""
        return self.settings.candidates + (1 if self.codec.exact is None else 2)

    def _samples(self) -> int:
        """Deals per decision and model of bidding (from ``budget`` where it is set)."""
        s = self.settings
        if s.budget:
            return max(1, s.budget // (self._width() * s.rollouts * len(self._models())))
        return s.samples

    def _models(self) -> tuple[str, ...]:
        """The models of how opponents bid that deals are drawn from (two when robust)."""
        return ("policy", "model") if self.belief == "robust" else (self.belief,)

    def _playouts_per_view(self) -> int:
        return self._width() * self._samples() * len(self._models()) * self.settings.rollouts

    def _search(self, views: list[PlayerView]) -> list[SearchResult]:
        s, codec, rules = self.settings, self.codec, self.rules
        seed = _seed_of(s.seed, views)
        prior = self.base.probabilities(views)  # (V, A)
        calls = [a for a in (codec.challenge, codec.exact) if a is not None]
        width = self._width()
        cand = np.zeros((len(views), width), np.int64)
        valid = np.zeros((len(views), width), bool)
        for i, view in enumerate(views):
            legal = view.mask > 0
            bids = np.flatnonzero(legal[: codec.num_bids])
            order = bids[np.argsort(-prior[i, bids], kind="stable")][: s.candidates]
            moves = list(order) + [a for a in calls if legal[a]]
            cand[i, : len(moves)] = moves
            cand[i, len(moves) :] = moves[0]
            valid[i, : len(moves)] = True
        samples, reps = self._samples(), s.rollouts
        generator = torch.Generator().manual_seed(seed)
        models = self._models()  # deals from each, values: the worse of the models'
        drawn = [self._deals(views, samples, generator, m) for m in models]
        deals = np.concatenate([d for d, _ in drawn], 1)  # (V, samples, P, D)
        kinds = np.concatenate([k for _, k in drawn], 1)  # (V, samples, P): who plays a seat
        samples *= len(models)
        # rollout games: (view, candidate, deal, rollout), flat
        v_count = len(views)
        per_view = width * samples * reps
        total = v_count * per_view
        env = self._env(total)
        env.generator.manual_seed(seed + 1)
        self.base.reseed(seed + 2)
        gen = torch.Generator().manual_seed(seed + 3)
        # rollout game g: view g // per_view, candidate (g // (W·R)) % C, deal (g // R) % W
        g = np.arange(total)
        at_view = g // per_view
        at_cand = (g // (samples * reps)) % width
        at_deal = (g // reps) % samples
        longest = max(len(v.bids) for v in views)
        bid_rows = np.full((v_count, longest), -1, np.int64)
        had = np.zeros((v_count, rules.num_players), bool)
        for i, v in enumerate(views):
            for k, (_, quantity, face) in enumerate(v.bids):
                bid_rows[i, k] = codec.encode_bid(quantity, face)
            had[i, v.opener] = v.palifico  # the only palifico flag a view implies

        def per(values: list) -> np.ndarray:
            return np.asarray(values)[at_view]

        env.set_positions(
            torch.arange(total),
            dice=deals[at_view, at_deal],
            dice_left=per([v.dice_left for v in views]),
            opener=per([v.opener for v in views]),
            bids=bid_rows[at_view],
            palifico=per([v.palifico for v in views]),
            had_palifico=had[at_view],
        )
        me = torch.as_tensor(per([v.seat for v in views]))
        first = torch.as_tensor(cand[at_view, at_cand])
        self._reseed_types(seed + 4)
        players = torch.as_tensor(kinds[at_view, at_deal]) if self.belief == "mixed" else None
        values = self._play(env, me, first, gen, players)
        q = values.view(v_count, width, len(models), -1).mean(3).amin(2).numpy()
        results = []
        for i in range(v_count):
            moves, ok = cand[i][valid[i]], valid[i]
            pri = prior[i, moves]
            qi = q[i][ok]
            alpha, tau = self.choice
            logits = alpha * np.log(pri + PRIOR_FLOOR) + qi / tau
            weights = np.exp(logits - logits.max())
            probs = np.zeros(codec.num_actions)
            probs[moves] = weights / weights.sum()
            results.append(SearchResult(moves, pri, qi, probs))
        return results


def _seed_of(seed: int, views: list[PlayerView]) -> int:
    """A seed from ``seed`` and the positions (what each viewer knows)."""
    key = repr([(v.seat, v.dice, v.dice_left, v.bids, v.opener, v.palifico) for v in views])
    return int(np.random.SeedSequence([seed, zlib.crc32(key.encode())]).generate_state(1)[0])


def replace_settings(agent: SearchAgent, **changes: Any) -> SearchAgent:
    """A search over the same base agent (no reload) with some settings changed.

    Example:
        >>> from liars_env.agents import make_agent
        >>> agent = make_agent("search:probabilistic", RuleSet.preset("perudo"))
        >>> replace_settings(agent, samples=8).settings.samples
        8
    """
    return SearchAgent(
        agent.base_agent,
        agent.rules,
        replace(agent.settings, **changes),
        base_spec=agent.base_spec,
        name=agent.name,
    )
