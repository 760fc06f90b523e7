"""The search's belief: who each opponent may be and which hand it may hold, from its bids.

:class:`SearchBelief` holds :class:`~liars_env.agents.search.SearchAgent`'s belief models
(step 1 of its module docstring): the weights over each opponent's hands
(:meth:`~SearchBelief.hand_posteriors`, under ``belief=policy`` or ``belief=model``), the
joint weights over who it is and its hand (:meth:`~SearchBelief.typed_posteriors`,
``belief=mixed``), the likelihoods of its bids under the base, the bots and the belief
model (kept per bid position), and the deals sampled from them
(``_deals``). It is a mixin of ``SearchAgent`` and reads that
class's ``rules``, ``settings``, ``belief``, ``base``, ``game``, ``layout``, ``codec``,
``model``, ``oracle``, ``_hands``, ``_counts``, ``_own_values``, ``_likelihoods``,
``_envs_for_bids`` and ``_likelihood_bots``.
"""

from __future__ import annotations

import numpy as np
import torch

from liars_env.agents.base import PlayerView
from liars_env.agents.batched import make_batched_bot
from liars_env.batched import BatchedEnv
from liars_env.batched.kernels import known_matches, round_wild, wild_faces
from liars_env.engine import GameState
from liars_env.observation import view_of


class SearchBelief:
    """The belief models of :class:`~liars_env.agents.search.SearchAgent` (a mixin)."""

    LIKELIHOOD_CACHE = 4096
    """Bid positions whose likelihoods under the base and the bots the belief keeps
    (they recur at every later decision of the round)."""

    def _types(self) -> list[str]:
        """The bots a ``mixed`` belief considers (player ``k`` is ``_types()[k − 1]``)."""
        return self.settings.types.split("+")

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
            counts = self._counts[state.dice_left[seat]]
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
            counts = torch.as_tensor(self._counts[view.dice_left[seat]])
            k = order[i]
            wilds = wild_faces(wild[k : k + 1].expand(len(hands)), f, wild_die=self.rules.wild_die)
            matches = known_matches(counts, wilds, wild_die=self.rules.wild_die)  # (H, F)
            rel = (seat - view.seat) % self.rules.num_players - 1
            ev = evidence[k, rel]  # (F, D+1)
            out.append(ev.gather(1, matches.T).sum(0).numpy())
        return out
