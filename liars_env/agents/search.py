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

import math
import zlib
from collections import OrderedDict
from dataclasses import dataclass, replace
from itertools import combinations_with_replacement
from typing import Any

import numpy as np
import torch

from liars_env.agents.base import PlayerView
from liars_env.agents.batched import make_batched_bot
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
from liars_env.batched.kernels import known_matches, round_wild, wild_faces
from liars_env.engine import GameState, LiarsDiceGame
from liars_env.observation import ObservationLayout, view_of
from liars_env.rules import RuleSet, loser_reward
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


class SearchAgent:
    """The base agent ``base`` with search at every decision (see the module docstring).

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

    LIKELIHOOD_CACHE = 4096
    """Bid positions whose likelihoods under the base and the bots the belief keeps
    (they recur at every later decision of the round)."""

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
        self._hands = [_hand_table(n, rules.faces) for n in range(1, rules.dice_per_player + 1)]
        self._hands.insert(0, (np.zeros((1, 0), np.int64), np.zeros(1)))
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
                    base, rules, self.settings.iterations, values=values
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

    def _env(self, size: int) -> BatchedEnv:
        env = self._envs.get(size)
        if env is None:
            env = BatchedEnv(self.rules, num_envs=size, seed=0, check_actions=False)
            self._envs[size] = env
            while len(self._envs) > 4:
                self._envs.popitem(last=False)
        self._envs.move_to_end(size)
        return env

    @torch.no_grad()
    def _play(
        self,
        env: BatchedEnv,
        me: torch.Tensor,
        first: torch.Tensor,
        gen: torch.Generator,
        players: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """Plays ``first`` then the base in every seat; the return of seat ``me`` per game.

        ``players`` ``(n, P)``, where given, names who plays each seat of each game: 0
        the base, ``k`` the ``k``-th bot of ``types``.
        """
        n = env.num_envs
        by_depth = self.settings.depth == "round"
        lose = loser_reward(self.rules.num_players)
        value = torch.zeros(n, dtype=torch.float64)
        live = torch.ones(n, dtype=torch.bool)
        round_over = torch.zeros(n, dtype=torch.bool)
        actions = first
        rows = torch.arange(n)
        for _ in range(100_000):
            obs, mask, rewards, dones, info = env.step(actions, live)
            mine = rewards.gather(1, me[:, None]).squeeze(1).double()
            out = live & ~dones & (env.dice_left.gather(1, me[:, None]).squeeze(1) == 0)
            value = torch.where(live & dones, mine, value)
            value = torch.where(out, torch.full_like(value, lose), value)
            live &= ~dones & ~out
            round_over |= info["called"] & live
            if by_depth:
                leaf = live & round_over & (env.current_player == me)
                if bool(leaf.any()):
                    at = leaf.nonzero().squeeze(1)
                    if self.base.has_value:
                        scores = self.base.values(obs[at], mask[at])
                    else:
                        scores = dice_value(env.dice_left[at], me[at]).double()
                    value[at] = scores
                    live &= ~leaf
            if not bool(live.any()):
                return value
            at = rows[live]
            actions = torch.zeros(n, dtype=torch.long)
            if players is None:
                actions[at] = self.base.rollout(env, obs, mask, at, gen).long()
                continue
            who = players[at, env.current_player[at]]
            for k in who.unique().tolist():
                part = at[who == k]
                if k == 0:
                    actions[part] = self.base.rollout(env, obs, mask, part, gen).long()
                else:
                    actions[part] = self._type_bot(env, k).act(mask, part, obs).long()
        raise RuntimeError("rollouts did not finish")  # pragma: no cover

    # ------------------------------------------------------------------ types
    def _types(self) -> list[str]:
        """The bots a ``mixed`` belief considers (player ``k`` is ``_types()[k − 1]``)."""
        return self.settings.types.split("+")

    def _type_bot(self, env: BatchedEnv, k: int) -> Any:
        """The batched bot playing type ``k`` in ``env``'s games (made once per env)."""
        key = (id(env), k)
        bot = self._bots.get(key)
        if bot is None or bot.env is not env:
            bot = self._bots[key] = make_batched_bot(env, self._types()[k - 1], self._bot_seed + k)
        return bot

    def _reseed_types(self, seed: int) -> None:
        self._bot_seed = seed
        for (_, k), bot in self._bots.items():
            bot.generator.manual_seed(seed + k)

    def _cached_likelihoods(self, views, jobs, kind: str, compute) -> list[np.ndarray]:
        """Per job, the sum over its bids of ``compute``'s per-bid log-likelihoods.

        A bid's log-likelihoods are a function of the position it was made in (and this
        search's base and settings), and every later decision of the round asks for
        them again: they are kept (the last :attr:`LIKELIHOOD_CACHE` positions), and
        ``compute(positions)`` is asked only for the positions not seen yet.
        """
        positions = self._bid_positions(views, jobs)
        cache = self._likelihoods
        keys = [
            (kind, tuple(st.dice_left), st.opener, tuple(st.bids), st.palifico, seat, bid)
            for st, seat, bid in positions
        ]
        todo = list({k: i for i, k in enumerate(keys) if k not in cache}.values())
        new = dict(
            zip(
                [keys[i] for i in todo],
                compute([positions[i] for i in todo]) if todo else [],
                strict=True,
            )
        )
        out, k = [], 0
        for _, _, made in jobs:
            parts = [keys[k + j] for j in range(len(made))]
            out.append(sum(new[key] if key in new else cache[key] for key in parts))
            k += len(made)
        cache.update(new)
        while len(cache) > self.LIKELIHOOD_CACHE:
            cache.popitem(last=False)
        return out

    def _bot_bid_likelihoods(self, positions) -> list[np.ndarray]:
        """``(K, H)`` log-probability of each position's bid, per bot and bidder's hand.

        Each bot of ``types`` is asked, on the batched engine, for the probability of the
        bid with every hand the bidder may hold
        (:meth:`~liars_env.agents.batched.BatchedProbabilisticBot.action_probability`:
        its planned move and its bluffs); ``floor`` mixes in a uniform choice, as for the
        base.
        """
        codec, rules, floor = self.codec, self.rules, self.settings.floor
        p, d = rules.num_players, rules.dice_per_player
        sizes = [len(self._hands[st.dice_left[seat]][0]) for st, seat, _ in positions]
        total = sum(sizes)
        size = max(256, 1 << (total - 1).bit_length())  # a few env sizes, reused
        env = self._envs_for_bids.get(size)
        if env is None:
            env = self._envs_for_bids[size] = BatchedEnv(
                rules, num_envs=size, seed=0, check_actions=False
            )
        longest = max(1, max(len(st.bids) for st, _, _ in positions))
        dice = np.zeros((total, p, d), np.int64)
        dice_left = np.zeros((total, p), np.int64)
        opener = np.zeros(total, np.int64)
        bids = np.full((total, longest), -1, np.int64)
        palifico = np.zeros(total, bool)
        bid = np.zeros(total, np.int64)
        start = 0
        for (st, seat, made), n in zip(positions, sizes, strict=True):
            rows = slice(start, start + n)
            for k, left in enumerate(st.dice_left):
                dice[rows, k, :left] = 1  # the others' dice: unseen by the bidder
            hands, _ = self._hands[st.dice_left[seat]]
            dice[rows, seat, : hands.shape[1]] = hands
            dice_left[rows] = st.dice_left
            opener[rows] = st.opener
            bids[rows, : len(st.bids)] = [codec.encode_bid(q, f) for _, q, f in st.bids]
            palifico[rows] = st.palifico
            bid[rows] = made
            start += n
        rows = torch.arange(total)
        env.set_positions(
            rows, dice=dice, dice_left=dice_left, opener=opener, bids=bids, palifico=palifico
        )
        obs, mask = env.observe(), env.legal_mask()
        bid = torch.from_numpy(bid)
        legal = mask[:total].sum(1).double()
        out = []
        for name in self._types():
            bot = self._likelihood_bots.get((size, name))
            if bot is None:
                bot = self._likelihood_bots[(size, name)] = make_batched_bot(env, name)
            p_bid = (1 - floor) * bot.action_probability(mask, rows, bid, obs) + floor / legal
            out.append(np.log(np.maximum(p_bid.numpy(), 1e-300)))
        tables = np.stack(out)  # (K, total)
        return np.split(tables, np.cumsum(sizes)[:-1], axis=1)

    # ------------------------------------------------------------------ belief
    def _deals(
        self, views: list[PlayerView], samples: int, gen: torch.Generator, belief: str
    ) -> tuple[np.ndarray, np.ndarray]:
        """Sampled deals and who plays each seat in them.

        Returns:
            ``(V, W, P, D)`` deals (the viewer's own dice and sampled hands) and
            ``(V, W, P)`` players (0: the base; ``k``: the ``k``-th bot of ``types``,
            drawn with the hand under a ``mixed`` belief, else 0).
        """
        rules = self.rules
        p, d = rules.num_players, rules.dice_per_player
        deals = np.zeros((len(views), samples, p, d), np.int64)
        kinds = np.zeros((len(views), samples, p), np.int64)
        if belief == "mixed":
            posteriors = self.typed_posteriors(views)
        else:
            posteriors = [
                {seat: (hands, probs[None]) for seat, (hands, probs) in posts.items()}
                for posts in self.hand_posteriors(views, belief)
            ]
        for i, view in enumerate(views):
            deals[i, :, view.seat, : len(view.dice)] = view.dice
            truth = self.oracle(view) if self.oracle is not None else None
            for seat, (hands, probs) in posteriors[i].items():
                pick = torch.multinomial(
                    torch.from_numpy(probs.reshape(-1)), samples, True, generator=gen
                ).numpy()
                kinds[i, :, seat] = pick // len(hands)
                if truth is not None:
                    deals[i, :, seat, : len(truth[seat])] = truth[seat]
                    continue
                deals[i, :, seat, : hands.shape[1]] = hands[pick % len(hands)]
        return deals, kinds

    def typed_posteriors(
        self, views: list[PlayerView]
    ) -> list[dict[int, tuple[np.ndarray, np.ndarray]]]:
        """Each opponent's joint weights over who it is and its hand (``belief=mixed``).

        Returns:
            For each view, ``{seat: (hands, probs)}``: ``hands (H, n)`` as in
            :meth:`hand_posteriors` and ``probs (1 + K, H)`` the posterior probability
            that the seat is the base (row 0) or the ``k``-th bot of ``types`` (row
            ``k``) and holds each hand: the prior (half on the base, the rest shared by
            the bots) times the multinomial prior times the probability of its bids
            this round under that player.
        """
        types = len(self._types())
        log_type = np.log(np.array([0.5] + [0.5 / types] * types))[:, None]
        out: list[dict[int, tuple[np.ndarray, np.ndarray]]] = []
        jobs = []
        for i, view in enumerate(views):
            out.append({})
            for seat, n in enumerate(view.dice_left):
                if seat == view.seat or n == 0:
                    continue
                hands, log_prior = self._hands[n]
                out[i][seat] = (hands, log_type + log_prior[None])
                made = [t for t, b in enumerate(view.bids) if b[0] == seat]
                if made:
                    jobs.append((i, seat, made))
        if jobs:
            base = self._policy_likelihoods(views, jobs)
            bots = self._cached_likelihoods(views, jobs, "types", self._bot_bid_likelihoods)
            for (i, seat, _), b, k in zip(jobs, base, bots, strict=True):
                hands, log_post = out[i][seat]
                out[i][seat] = (hands, log_post + np.concatenate([b[None], k]))
        for posts in out:
            for seat, (hands, log_post) in posts.items():
                w = np.exp(log_post - log_post.max())
                posts[seat] = (hands, w / w.sum())
        return out

    def hand_posteriors(
        self, views: list[PlayerView], belief: str | None = None
    ) -> list[dict[int, tuple[np.ndarray, np.ndarray]]]:
        """Each opponent's weights over its possible hands, per view.

        Args:
            views: The searching players' views.
            belief: The model of how opponents bid, ``policy`` or ``model`` (default:
                the search's own; ``robust`` uses ``model`` here).

        Returns:
            For each view, ``{seat: (hands, probs)}`` for every other seat holding dice:
            ``hands (H, n)`` its possible hands (sorted faces, one row per multiset) and
            ``probs (H,)`` their posterior probabilities: the multinomial prior times the
            modelled probability of each of its bids this round (see ``belief``).
        """
        if (belief or self.belief) == "mixed":
            return [
                {seat: (hands, probs.sum(0)) for seat, (hands, probs) in posts.items()}
                for posts in self.typed_posteriors(views)
            ]
        out: list[dict[int, tuple[np.ndarray, np.ndarray]]] = []
        jobs = []  # (view index, seat, bid positions)
        for i, view in enumerate(views):
            out.append({})
            for seat, n in enumerate(view.dice_left):
                if seat == view.seat or n == 0:
                    continue
                made = [t for t, b in enumerate(view.bids) if b[0] == seat]
                hands, log_prior = self._hands[n]
                out[i][seat] = (hands, log_prior)
                if made:
                    jobs.append((i, seat, made))
        if jobs:
            belief = belief or self.belief
            if belief == "policy":
                logs = self._policy_likelihoods(views, jobs)
            else:
                logs = self._model_likelihoods(views, jobs)
            for (i, seat, _), log_like in zip(jobs, logs, strict=True):
                hands, log_prior = out[i][seat]
                out[i][seat] = (hands, log_prior + log_like)
        for posts in out:
            for seat, (hands, log_post) in posts.items():
                w = np.exp(log_post - log_post.max())
                posts[seat] = (hands, w / w.sum())
        return out

    def _bid_positions(self, views, jobs) -> list[tuple[GameState, int, int]]:
        """``(state, bidder, bid id)`` of every bid of ``jobs``, in order.

        The state is the position the bid was made in, the bidder's dice left empty.
        """
        out = []
        for i, seat, made in jobs:
            view = views[i]
            for t in made:
                state = GameState(
                    dice=[[] for _ in view.dice_left],
                    dice_left=list(view.dice_left),
                    current_player=seat,
                    opener=view.opener,
                    bids=list(view.bids[:t]),
                    palifico=view.palifico,
                )
                out.append((state, seat, self.codec.encode_bid(*view.bids[t][1:])))
        return out

    def _policy_likelihoods(self, views, jobs) -> list[np.ndarray]:
        """Log-likelihood of each hand: the base's probability of each of its bids."""
        return self._cached_likelihoods(views, jobs, "policy", self._policy_bid_likelihoods)

    def _policy_bid_likelihoods(self, positions) -> list[np.ndarray]:
        """``(H,)`` log-probability of each position's bid under the base, per hand."""
        s, layout = self.settings, self.layout
        own = layout.slices["own_dice"]
        obs_parts, masks, actions, sizes = [], [], [], []
        for state, seat, bid in positions:
            hands, _ = self._hands[state.dice_left[seat]]
            counts = self._own_counts(hands)
            template = torch.from_numpy(layout.encode(state, seat))
            block = template.repeat(len(hands), 1)
            block[:, own] = self._own_values[counts]
            obs_parts.append(block)
            masks.append(torch.from_numpy(self.game.legal_mask(state) > 0).repeat(len(hands), 1))
            actions.append(torch.full((len(hands),), bid))
            sizes.append(len(hands))
        obs, mask, action = torch.cat(obs_parts), torch.cat(masks), torch.cat(actions)

        def scalar_views() -> list[PlayerView]:
            out = []
            for state, seat, _ in positions:
                for hand in self._hands[state.dice_left[seat]][0]:
                    held = GameState(
                        dice=[list(hand) if k == seat else [] for k in range(len(state.dice))],
                        dice_left=state.dice_left,
                        current_player=seat,
                        opener=state.opener,
                        bids=state.bids,
                        palifico=state.palifico,
                    )
                    out.append(view_of(self.game, self.layout, held, seat))
            return out

        log_p = self.base.bid_log_probabilities(obs, mask, action, scalar_views).double()
        if s.floor > 0:
            legal = mask.sum(1).double()
            log_p = torch.log((1 - s.floor) * log_p.exp() + s.floor / legal)
        return np.split(log_p.numpy(), np.cumsum(sizes)[:-1])

    def _model_likelihoods(self, views, jobs) -> list[np.ndarray]:
        """Log-likelihood of each hand under the belief model's bidding model."""
        f = self.rules.faces
        order = {i: k for k, i in enumerate(dict.fromkeys(j[0] for j in jobs))}
        obs = torch.from_numpy(np.stack([views[i].observation for i in order]))
        evidence = self.model.bid_evidence(obs.double())  # (B, N−1, F, D+1)
        wild = round_wild(self.rules, torch.tensor([views[i].palifico for i in order]))
        out = []
        for i, seat, _ in jobs:
            view = views[i]
            hands, _ = self._hands[view.dice_left[seat]]
            counts = torch.as_tensor(self._own_counts(hands))
            k = order[i]
            wilds = wild_faces(wild[k : k + 1].expand(len(hands)), f, wild_die=self.rules.wild_die)
            matches = known_matches(counts, wilds, wild_die=self.rules.wild_die)  # (H, F)
            rel = (seat - view.seat) % self.rules.num_players - 1
            ev = evidence[k, rel]  # (F, D+1)
            out.append(ev.gather(1, matches.T).sum(0).numpy())
        return out

    def _own_counts(self, hands: np.ndarray) -> np.ndarray:
        """``(H, F)`` dice of each face in each hand."""
        f = self.rules.faces
        counts = np.zeros((len(hands), f), np.int64)
        for face in range(1, f + 1):
            counts[:, face - 1] = (hands == face).sum(1)
        return counts


def _hand_table(n: int, faces: int) -> tuple[np.ndarray, np.ndarray]:
    """Every hand of ``n`` dice as sorted faces ``(H, n)`` and its log prior ``(H,)``."""
    hands = np.array(list(combinations_with_replacement(range(1, faces + 1), n)), np.int64)
    hands = hands.reshape(-1, n)
    log_prior = np.zeros(len(hands))
    for h, hand in enumerate(hands):
        _, counts = np.unique(hand, return_counts=True)
        log_prior[h] = (
            math.lgamma(n + 1) - sum(math.lgamma(c + 1) for c in counts) - n * math.log(faces)
        )
    return hands, log_prior


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
