"""What the round's bids say about the hidden dice, for whole batches (torch).

Everyone's dice are rolled independently, so before any bid an opponent with ``n`` dice
holds any hand (multiset of faces) with its multinomial probability. Each bid that
opponent makes this round is evidence: under the bidding model used here a player bids
``(q, f)`` with a chance that grows with how likely the bid is *from its own point of
view*::

    P(bid (q, f) | hand h)  ∝  (ε + (1 − ε) · P(count ≥ q | h)) · exp(λ · m)

where ``m`` is the number of the hand's dice that count as ``f`` (wild ones included;
under ``ones="jokers"`` a bid on ones has ``m`` = the hand's ones, and the hands it
favours hold jokers for every other face too),
``P(count ≥ q | h)`` is the binomial tail the bidder sees (its ``m`` matches plus
Binomial(unseen, p) with ``p`` = 1/F, or 2/F for a wild-counted face), ``ε`` (the
*bluff floor*) is the weight left for bids the bidder did not believe, and ``λ`` the
pull towards bidding the faces one holds most of (players bid their strong faces). The posterior
over each opponent's hand is its prior times the likelihoods of all its bids this round
(bids never repeat in a round, so order does not matter); the distribution of the count
at a reveal is the viewer's own matches plus the sum of the opponents' posterior
matches, which are independent given the public bids.

:class:`BeliefModel` computes, from observation vectors (layout v1) alone, for every bid
id the probability that it holds at a reveal. It serves both the ``belief`` bot (in
:mod:`liars_env.agents.batched`) and the policy network's belief features
(:class:`liars_env.agents.policy.PolicyNet`). Its plain-numpy twin, used as the readable
reference and in the differential tests, is :class:`~liars_env.agents.probabilistic.BeliefAgent`.

The tilted-binomial posteriors of the ``bayes`` bot (:func:`tilted_match_distributions`)
share the last step (:func:`count_tails`).

Hands are enumerated as multisets of ``D`` symbols over ``{0, 1..F}``, where ``0`` is a
lost die, so one table serves every dice count: ``C(D + F, F)`` hands (462 for 5 dice
and 6 faces). :data:`MAX_HANDS` bounds it.
"""

from __future__ import annotations

from itertools import combinations_with_replacement
from math import lgamma, log

import torch
from torch import nn

from liars_env.batched.kernels import (
    compiled_kernels,
    known_matches,
    round_wild,
    tail_table,
    tails_per_bid,
    wild_faces,
)
from liars_env.observation import ObservationLayout
from liars_env.probability import binomial_pmf
from liars_env.rules import RuleSet

MAX_HANDS = 20_000
"""Largest hand table :class:`BeliefModel` builds (``C(D + F, F)``)."""

DEFAULT_BLUFF_FLOOR = 0.25
"""Default ``ε`` of the bidding model (see the module docstring)."""

DEFAULT_EVIDENCE = 0.5
"""Default ``λ`` of the bidding model (see the module docstring)."""

DEFAULT_FOLLOW_EVIDENCE = 0.0
"""Default ``λ`` for a bid that keeps the face of the bid it raised."""


def count_tails(known: torch.Tensor, matches: torch.Tensor, length: int) -> torch.Tensor:
    """``P(count >= c)`` at a reveal, per face, from independent parts.

    Args:
        known: ``(B, F)`` long: the viewer's own matches of each face.
        matches: ``(B, S, F, K)``: for each of ``S`` opponents, the distribution of its
            matches of each face (``K - 1`` at most).
        length: ``L``, one more than the largest possible count.

    Returns:
        ``(B, F, L + 1)`` tails; index ``L`` is 0.
    """
    b, s, f, k = matches.shape
    kernels = compiled_kernels(matches)
    if kernels is not None:
        tails = torch.empty((b, f, length + 1), dtype=matches.dtype)
        kernels.count_tails(
            known.long().contiguous().numpy(),
            matches.detach().contiguous().numpy(),
            length,
            tails.numpy(),
        )
        return tails
    total = torch.zeros((b, f, length), dtype=matches.dtype, device=matches.device)
    total.scatter_(2, known.clamp_max(length - 1)[:, :, None], 1.0)
    for seat in range(s):
        dist = matches[:, seat]
        new = total * dist[:, :, :1]
        for j in range(1, k):
            new[:, :, j:] += total[:, :, : length - j] * dist[:, :, j : j + 1]
        total = new
    tails = torch.zeros((b, f, length + 1), dtype=matches.dtype, device=matches.device)
    tails[:, :, :length] = total.flip(2).cumsum(2).flip(2).clamp_max(1.0)
    return tails


def parse_observation(
    obs: torch.Tensor, rules: RuleSet, slices: dict[str, slice] | None = None
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """The fields of layout-v1 observations that beliefs are built from.

    Returns:
        ``own (B, F)`` long: the observer's dice per face; ``dice (B, N)`` long: dice
        per relative seat; ``wild (B,)`` bool: the wild face counts for the others this
        round;
        ``history (B, num_bids, N)`` bool: who (relative seat) bid each bid id.

    Example:
        >>> rules = RuleSet.preset("perudo", num_players=2, dice_per_player=1)
        >>> obs = torch.zeros(1, ObservationLayout(rules).size)
        >>> obs[0, 2] = obs[0, 6] = obs[0, 7] = 1.0  # a 3; one die each
        >>> own, dice, wild, history = parse_observation(obs, rules)
        >>> own.tolist(), dice.tolist(), wild.tolist(), history.shape
        ([[0, 0, 1, 0, 0, 0]], [[1, 1]], [True], torch.Size([1, 12, 2]))
    """
    sl = slices or ObservationLayout(rules).slices
    d = rules.dice_per_player
    own = (obs[:, sl["own_dice"]] * d).round().long()
    dice = (obs[:, sl["dice_left"]] * d).round().long()
    wild = round_wild(rules, obs[:, sl["palifico"]].squeeze(1) >= 0.5)
    history = obs[:, sl["bid_history"]].view(obs.shape[0], -1, rules.num_players) > 0.5
    return own, dice, wild, history


def tilted_match_distributions(
    dice: torch.Tensor,
    same: torch.Tensor,
    other: torch.Tensor,
    wild: torch.Tensor,
    faces: int,
    dice_per_player: int,
    evidence: float,
    counter_evidence: float,
    *,
    wild_die: int,
) -> torch.Tensor:
    """Per opponent and face, the ``bayes`` bot's posterior over its matches.

    The prior on ``k`` matches among ``n`` dice is Binomial(``n``, p); each bid on the
    face multiplies the weight of ``k`` by ``exp(evidence·k)``, each bid on another face
    by ``exp(−counter_evidence·k)``.

    Args:
        dice: ``(B, S)`` long: each opponent's dice.
        same: ``(B, S, F)``: its bids on each face this round.
        other: ``(B, S, F)``: its bids on the other faces.
        wild: ``(B,)`` bool: the wild face counts for every other face.
        faces: ``F``.
        dice_per_player: ``D``.
        evidence: See above.
        counter_evidence: See above.
        wild_die: The wild face (``RuleSet.wild_die``).

    Returns:
        ``(B, S, F, D + 1)`` distributions.
    """
    d, dev = dice_per_player, dice.device
    pmf = torch.zeros((2, d + 1, d + 1), dtype=torch.float64)
    for c, p in enumerate((1 / faces, 2 / faces)):
        for n in range(d + 1):
            pmf[c, n, : n + 1] = torch.from_numpy(binomial_pmf(n, p).copy())
    pmf = pmf.to(dev)
    wild_bid = wild_faces(wild, faces, wild_die=wild_die).long()
    prior = pmf[wild_bid[:, None, :], dice[:, :, None]]  # (B, S, F, D + 1)
    weight = evidence * same.double() - counter_evidence * other.double()
    k = torch.arange(d + 1, device=dev, dtype=torch.float64)
    logw = weight[..., None] * k
    logw = logw - logw.max(-1, keepdim=True).values
    post = prior * logw.exp()
    return post / post.sum(-1, keepdim=True)


class BeliefModel(nn.Module):
    """Posterior bid probabilities from observations (see the module docstring).

    Args:
        rules: The variant (``hand="common"``: a bid is about every die in play).
        bluff_floor: ``ε`` of the bidding model, in ``(0, 1]``.
        evidence: ``λ`` of the bidding model (log-odds per matching die).
        follow_evidence: ``λ`` for a bid on the face of the bid it raised.
        dtype: Floating type of the computation.

    Example:
        >>> import numpy as np
        >>> from liars_env import LiarsDiceGame, ObservationLayout
        >>> rules = RuleSet.preset("perudo", num_players=2, dice_per_player=2)
        >>> game, layout = LiarsDiceGame(rules), ObservationLayout(rules)
        >>> state = game.new_game(np.random.default_rng(0))
        >>> out = BeliefModel(rules)(torch.tensor(layout.encode(state, 0))[None])
        >>> out.holds.shape, out.exact.shape, out.mean_matches.shape
        (torch.Size([1, 24]), torch.Size([1, 24]), torch.Size([1, 1, 6]))
    """

    def __init__(
        self,
        rules: RuleSet,
        bluff_floor: float = DEFAULT_BLUFF_FLOOR,
        evidence: float = DEFAULT_EVIDENCE,
        follow_evidence: float = DEFAULT_FOLLOW_EVIDENCE,
        dtype: torch.dtype = torch.float32,
    ) -> None:
        super().__init__()
        if rules.hand != "common":
            raise ValueError("BeliefModel needs hand='common' (a bid about every die)")
        if not 0.0 < bluff_floor <= 1.0:
            raise ValueError(f"bluff_floor must lie in (0, 1], got {bluff_floor!r}")
        from liars_env.actions import ActionCodec

        n, d, f = rules.num_players, rules.dice_per_player, rules.faces
        # sorted so that the hands of n dice (D − n zeros) are one contiguous block
        hands = sorted(combinations_with_replacement(range(f + 1), d), key=lambda h: -h.count(0))
        if len(hands) > MAX_HANDS:
            raise ValueError(
                f"{d} dice of {f} faces make {len(hands)} hands, more than the "
                f"{MAX_HANDS} BeliefModel enumerates"
            )
        self.rules, self.bluff_floor, self.dtype = rules, bluff_floor, dtype
        self.num_players, self.dice_per_player, self.faces = n, d, f
        self.length = rules.max_quantity + 1
        layout, codec = ObservationLayout(rules), ActionCodec(rules)
        self.slices = layout.slices
        self.num_bids = codec.num_bids
        counts = torch.zeros((len(hands), f + 1), dtype=torch.long)
        for h, hand in enumerate(hands):
            for symbol in hand:
                counts[h, symbol] += 1
        # log prior of each hand for a player with n dice (−inf unless it has D − n zeros)
        log_prior = torch.full((d + 1, len(hands)), float("-inf"), dtype=torch.float64)
        for h in range(len(hands)):
            held = d - int(counts[h, 0])
            log_prior[held, h] = (
                lgamma(held + 1) - sum(lgamma(int(c) + 1) for c in counts[h, 1:]) - held * log(f)
            )
        # matches[w, i, h]: dice of hand h counting toward face i+1 (w: the wild face is)
        wild_die = rules.wild_die
        matches = torch.stack(
            [
                known_matches(
                    counts[:, 1:],
                    wild_faces(torch.full((len(hands),), w), f, wild_die=wild_die),
                    wild_die=wild_die,
                ).T
                for w in (False, rules.ones_wild)
            ]
        )
        # one_hot[w]: (H, F·(D+1)), 1 where hand h has k matches of face i
        one_hot = torch.zeros((2, len(hands), f * (d + 1)), dtype=torch.float64)
        for w in range(2):
            cols = torch.arange(f) * (d + 1) + matches[w].T  # (H, F)
            one_hot[w].scatter_(1, cols, 1.0)
        self.register_buffer("log_prior", log_prior.to(dtype), persistent=False)
        # block[n]:block[n + 1] are the hands of exactly n dice
        zeros = counts[:, 0]
        self.block = [int((zeros > d - n).sum()) for n in range(d + 2)]
        self.register_buffer("one_hot", one_hot.to(dtype), persistent=False)
        # prior_matches[w, n]: matches per face of n dice before any bid, (F·(D+1))
        prior_matches = log_prior.exp() @ one_hot  # (2, D + 1, F·(D+1)) by broadcasting
        self.register_buffer("prior_matches", prior_matches.to(dtype), persistent=False)
        # where the wild state never changes within these rules, one table serves
        self.wild_always = None if rules.ones_wild and rules.palifico else rules.ones_wild
        tails = tail_table(rules)
        # log_likelihood[(w·L + u)·num_bids + bid, m]: log P(bid | the bidder, who cannot
        # see u dice, holds m matches of the bid's face), w: the wild face is this round
        need = (torch.as_tensor(codec.bid_quantity.copy())[:, None] - torch.arange(d + 1)).clamp(
            0, self.length
        )  # (num_bids, D + 1)
        bid_face = torch.as_tensor(codec.bid_face.copy())
        log_likelihood = torch.zeros(
            (2, 2, self.length, codec.num_bids, d + 1), dtype=torch.float64
        )
        for w in range(2):
            wild = torch.tensor([bool(w and rules.ones_wild)])
            wild_bid = wild_faces(wild, f, wild_die=wild_die)[0, bid_face - 1].long()[:, None]
            for follow, lam in enumerate((evidence, follow_evidence)):
                for u in range(self.length):
                    holds = tails[wild_bid, u, need]
                    log_likelihood[w, follow, u] = torch.log(
                        bluff_floor + (1 - bluff_floor) * holds
                    ) + lam * torch.arange(d + 1)
        self.register_buffer(
            "log_likelihood", log_likelihood.view(-1, d + 1).to(dtype), persistent=False
        )
        # chronology: along any round, each bid has strictly fewer legal raises than the
        # one it raised (the raise relation is nested), so sorting a round's bids by that
        # count, most first, puts them in the order they were made
        followers = torch.as_tensor(codec.raise_table[1:, : codec.num_bids].sum(1))
        self.register_buffer(
            "chronological",
            torch.argsort(followers, descending=True, stable=True),
            persistent=False,
        )
        self.register_buffer("tails", tails.to(dtype), persistent=False)
        self.register_buffer(
            "bid_face", torch.as_tensor(codec.bid_face.copy()) - 1, persistent=False
        )
        self.register_buffer(
            "bid_quantity", torch.as_tensor(codec.bid_quantity.copy()), persistent=False
        )

    def _posterior_matches(
        self, n: int, evidence: torch.Tensor, wild: torch.Tensor
    ) -> torch.Tensor:
        """Posterior matches per face of opponents with ``n`` dice, ``(G, F·(D+1))``.

        Args:
            n: Their dice.
            evidence: ``(G, F·(D+1))`` summed log-likelihoods per (face, matches).
            wild: ``(G,)`` whether the wild face is wild in each one's round.
        """
        hands = slice(int(self.block[n]), int(self.block[n + 1]))
        prior = self.log_prior[n, hands]
        if self.wild_always is not None:
            table = self.one_hot[int(self.wild_always), hands]
            return torch.softmax(prior + evidence @ table.T, dim=-1) @ table
        tame, wild_table = self.one_hot[0, hands], self.one_hot[1, hands]
        pw = wild.bool()[:, None]
        posterior = torch.softmax(
            prior + torch.where(pw, evidence @ wild_table.T, evidence @ tame.T), dim=-1
        )
        return torch.where(pw, posterior @ wild_table, posterior @ tame)

    def follows(self, present: torch.Tensor) -> torch.Tensor:
        """``(B, num_bids)``: which bids of the round kept the face of the bid they raised.

        Args:
            present: ``(B, num_bids)`` bool: the round's bids.
        """
        order = self.chronological
        kernels = compiled_kernels(present)
        if kernels is not None:
            out = torch.empty_like(present)
            kernels.follows(
                present.contiguous().numpy(), order.numpy(), self.bid_face.numpy(), out.numpy()
            )
            return out
        made = present[:, order]
        position = torch.arange(len(order), device=present.device)
        last = torch.where(made, position, -1).cummax(1).values
        previous = torch.cat([torch.full_like(last[:, :1], -1), last[:, :-1]], dim=1)
        face = self.bid_face[order]
        same = made & (previous >= 0) & (face[previous.clamp_min(0)] == face)
        out = torch.zeros_like(present)
        out[:, order] = same
        return out

    def _bid_evidence(
        self, history: torch.Tensor, w: torch.Tensor, unseen_by: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """The summed log-likelihoods of each opponent's bids this round.

        Returns:
            ``pairs (G,)``: ``row · (N − 1) + opponent − 1`` of each (observer, opponent)
            with bids, and ``evidence (G, F·(D+1))``: the log-likelihood of its bids when
            it holds ``m`` matches of face ``f`` at ``f · (D + 1) + m``.
        """
        d, f, s = self.dice_per_player, self.faces, self.num_players - 1
        row, bid, seat = history[:, :, 1:].nonzero(as_tuple=True)
        pair = row * s + seat
        pairs, slot = torch.unique(pair, return_inverse=True)
        evidence = torch.zeros((len(pairs) * f, d + 1), dtype=self.dtype, device=history.device)
        if row.numel():
            follows = self.follows(history.any(2))[row, bid].long()
            entry = (
                (w[row] * 2 + follows) * self.length + unseen_by[row, seat + 1]
            ) * self.num_bids + bid
            evidence.index_add_(
                0, slot * f + self.bid_face[bid], self.log_likelihood.index_select(0, entry)
            )
        return pairs, evidence.view(len(pairs), f * (d + 1))

    def bid_evidence(self, obs: torch.Tensor) -> torch.Tensor:
        """What each opponent's bids this round say about its hand, per face and matches.

        Under the bidding model of the module docstring, the log-likelihood of an
        opponent's bids this round given its hand depends on the hand only through its
        matches of each bid face; the log posterior of a hand is its log prior plus
        ``sum over faces f of evidence[f, matches of f in the hand]``.

        Args:
            obs: ``(B, size)`` observations (layout v1) of the viewers.

        Returns:
            ``(B, N − 1, F, D + 1)`` log-likelihoods, by opponent (relative seat − 1),
            face (index ``face − 1``) and matches; 0 for an opponent without bids.
        """
        d, p, f = self.dice_per_player, self.num_players, self.faces
        _, dice, wild, history = parse_observation(obs, self.rules, self.slices)
        unseen_by = dice.sum(1, keepdim=True) - dice
        pairs, evidence = self._bid_evidence(history, wild.long(), unseen_by)
        out = torch.zeros((obs.shape[0] * (p - 1), f * (d + 1)), dtype=self.dtype)
        out = out.to(obs.device).index_copy(0, pairs, evidence)
        return out.view(obs.shape[0], p - 1, f, d + 1)

    def forward(self, obs: torch.Tensor) -> BeliefOutput:
        """Beliefs of the observers of ``obs`` (``(B, size)`` layout-v1 vectors)."""
        d, p, f = self.dice_per_player, self.num_players, self.faces
        b = obs.shape[0]
        own, dice, wild, history = parse_observation(obs, self.rules, self.slices)
        w = wild.long()
        unseen_by = dice.sum(1, keepdim=True) - dice  # (B, P): what each seat cannot see

        # Each opponent's matches of each face, (B·S, F·(D+1)): the prior's where it has
        # not bid this round; else from the posterior over its hands, i.e. the prior plus
        # the log-likelihood of its bids. A bid on face f weighs a hand only through its
        # matches m of f, so the bids are summed per (opponent, face, m) first, then
        # spread over the hands by one matmul.
        s = p - 1
        pair_dice = dice[:, 1:].reshape(-1)
        pair_wild = w.repeat_interleave(s)
        dist = self.prior_matches[pair_wild, pair_dice]
        pairs, evidence = self._bid_evidence(history, w, unseen_by)
        if pairs.numel():
            held = pair_dice[pairs]
            post_dist = torch.empty_like(evidence)
            for n in range(1, d + 1):  # each dice count has its own block of hands
                group = (held == n).nonzero().squeeze(1)
                if group.numel():
                    post_dist[group] = self._posterior_matches(
                        n, evidence[group], pair_wild[pairs][group]
                    )
            dist = dist.index_copy(0, pairs, post_dist)
        dist = dist.view(b, s, f, d + 1)
        wild_die = self.rules.wild_die
        known = known_matches(own, wild_faces(wild, f, wild_die=wild_die), wild_die=wild_die)
        tails = count_tails(known, dist, self.length)
        k = torch.arange(d + 1, device=obs.device, dtype=dist.dtype)
        holds, after = tails_per_bid(tails, self.bid_face + 1, self.bid_quantity)
        return BeliefOutput(
            tails=tails,
            holds=holds,
            exact=holds - after,
            mean_matches=(dist * k).sum(-1) / d,
        )


class BeliefOutput(dict):
    """What :class:`BeliefModel` returns (a dict with attribute access).

    Attributes:
        tails: ``(B, F, L + 1)``: ``P(count >= c)`` per face (index ``face − 1``).
        holds: ``(B, num_bids)``: chance each bid id holds at a reveal.
        exact: ``(B, num_bids)``: chance the count is exactly each bid's quantity.
        mean_matches: ``(B, N − 1, F)``: each opponent's expected matches ÷ D.
    """

    __getattr__ = dict.__getitem__
