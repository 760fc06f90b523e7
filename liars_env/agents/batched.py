"""The probability bots in array form, for opponents and evaluation on a BatchedEnv.

Every bot here makes, for all selected games at once, the decision its scalar twin in
:mod:`liars_env.agents.probabilistic` makes for one game: the same probabilities, the
same thresholds and the same tie-breaking (checked action for action in the tests; bluffs
draw from the batch's own torch generator, so they are compared with bluffs off).

* :class:`BatchedProbabilisticBot` (``probabilistic``, ``cautious``, ``bold``): each bid's
  chance from the bot's own dice.
* :class:`BatchedBayesBot` (``bayes``): tilted-binomial beliefs about each opponent.
* :class:`BatchedBeliefBot` (``belief``): posteriors over each opponent's whole hand
  (:class:`liars_env.agents.belief.BeliefModel`).

:func:`make_batched_bot` builds any of them from a spec: a name, or a preset with some
settings changed (``bayes:bluff_rate=0.2``), as for the scalar bots.
"""

from __future__ import annotations

import torch

from liars_env.agents.belief import (
    BeliefModel,
    count_tails,
    parse_observation,
    tilted_match_distributions,
)
from liars_env.agents.probabilistic import BOT_PRESETS, TIE, ProbabilisticParams, bot_params
from liars_env.batched import BatchedEnv, sample_legal
from liars_env.batched.kernels import (
    face_counts,
    known_matches,
    own_bid_tails,
    round_wild,
    tail_table,
    tails_per_bid,
    wild_faces,
)
from liars_env.batched.threads import using_threads

BATCHED_BOT_NAMES = ("random", *BOT_PRESETS)
"""Bots that have a batched twin: ``random`` and every preset (each preset also with
settings changed, ``NAME:key=value,...``; see :func:`check_batched_bot_spec`)."""


def check_batched_bot_spec(spec: str) -> None:
    """Raises ``ValueError`` unless ``spec`` names a bot with a batched twin.

    A spec is ``random``, a preset (``belief``), or a preset with some settings of
    :class:`~liars_env.agents.probabilistic.ProbabilisticParams` changed
    (``belief:challenge_threshold=0.6,bluff_rate=0.1``).

    Example:
        >>> check_batched_bot_spec("bold:exact_threshold=0.3")
        >>> check_batched_bot_spec("bold:nerve=1")  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        ValueError: bad setting 'nerve=1' in bot spec 'bold:nerve=1'; expected key=value ...
    """
    if not isinstance(spec, str):
        raise ValueError(f"bot spec must be a string, got {spec!r}")
    if spec == "random":
        return
    if spec.partition(":")[0] not in BOT_PRESETS:
        raise ValueError(
            f"no batched bot {spec!r}; expected one of {', '.join(BATCHED_BOT_NAMES)} "
            "(a preset may change settings: NAME:key=value,...)"
        )
    bot_params(spec)


class BatchedRandomBot:
    """Uniform over the legal actions, like :class:`~liars_env.agents.RandomAgent`.

    Args:
        env: The batch it plays in.
        seed: Seeds its draws.
    """

    def __init__(self, env: BatchedEnv, seed: int = 0) -> None:
        self.env = env
        self.generator = torch.Generator(device=env.device)
        self.generator.manual_seed(seed)

    def act(
        self, mask: torch.Tensor, rows: torch.Tensor, obs: torch.Tensor | None = None
    ) -> torch.Tensor:
        """Uniformly random legal actions for the games ``rows``."""
        with using_threads(self.env.threads):  # threads=None: keep this setting
            return sample_legal(mask[rows], self.generator, threads=None)


class BatchedProbabilisticBot:
    """Vectorized probabilistic bot (``hand="common"`` only, like the batched engine).

    Args:
        env: The batch it plays in (its rules and device are used).
        params: Bot settings, or a preset name of
            :data:`~liars_env.agents.probabilistic.BOT_PRESETS`.
        seed: Seeds the bluffs.
    """

    preset = "probabilistic"
    """The preset used when ``params`` is not given."""

    def __init__(
        self, env: BatchedEnv, params: ProbabilisticParams | str | None = None, seed: int = 0
    ) -> None:
        if params is None:
            params = self.preset
        if isinstance(params, str):
            if params not in BOT_PRESETS:
                raise ValueError(
                    f"no batched bot {params!r}; expected one of {', '.join(BOT_PRESETS)}"
                )
            params = BOT_PRESETS[params]
        self.params = params
        self.env = env
        rules, dev = env.rules, env.device
        self.faces = rules.faces
        self._tails = tail_table(rules).to(dev)
        self._bid_face = torch.as_tensor(env.codec.bid_face.copy(), device=dev)
        self._bid_quantity = torch.as_tensor(env.codec.bid_quantity.copy(), device=dev)
        self.generator = torch.Generator(device=dev)
        self.generator.manual_seed(seed)

    # ---------------------------------------------------------------- beliefs
    def bid_tails(
        self, rows: torch.Tensor, obs: torch.Tensor | None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """``P(count >= q)`` and ``P(count >= q + 1)`` for every bid id ``(q, f)``.

        From the acting player's own dice alone: its matches plus Binomial(unseen, p).
        """
        env, rules = self.env, self.env.rules
        cur = env.current_player[rows]
        held = face_counts(env.dice[rows, cur], rules.faces)  # (n, F)
        unseen = env.dice_left[rows].sum(1) - env.dice_left[rows, cur]
        wild = wild_faces(
            round_wild(rules, env.palifico[rows]), rules.faces, wild_die=rules.wild_die
        )
        known = known_matches(held, wild, wild_die=rules.wild_die)
        return own_bid_tails(self._tails, known, wild, unseen, self._bid_face, self._bid_quantity)

    # ---------------------------------------------------------------- decisions
    def act(
        self, mask: torch.Tensor, rows: torch.Tensor, obs: torch.Tensor | None = None
    ) -> torch.Tensor:
        """Actions for the acting players of games ``rows`` (an index tensor).

        Args:
            mask: ``(B, A)`` legal mask of the whole batch (as the env returned it).
            rows: Games to decide for.
            obs: ``(B, size)`` observations of the whole batch, if at hand (the bots
                that read bids use them; computed from the env otherwise).
        """
        with using_threads(self.env.threads):
            return self._act(mask, rows, obs)

    def action_probability(
        self,
        mask: torch.Tensor,
        rows: torch.Tensor,
        actions: torch.Tensor,
        obs: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """The probability that :meth:`act` plays ``actions`` in games ``rows``, ``(n,)``.

        The batched form of the scalar bot's ``action_probabilities``: ``1 − r`` on its
        planned move, and with chance ``r`` (``bluff_rate``, where a bid is legal) a bluff
        drawn uniformly from the ``2·F`` lowest legal bids. Leaves the bluffs' generator
        untouched.

        Args:
            mask: ``(B, A)`` legal mask of the whole batch.
            rows: Games to ask about.
            actions: ``(n,)`` one action per game of ``rows``.
            obs: ``(B, size)`` observations of the whole batch, if at hand.
        """
        with using_threads(self.env.threads):
            planned, _ = self._planned(mask, rows, obs)
        legal_bids = mask[rows, : self.env.codec.num_bids]
        p = (planned == actions).double()
        r = self.params.bluff_rate
        if r > 0:
            span = legal_bids.sum(1).clamp_max(2 * self.faces)
            safe = actions.clamp_max(legal_bids.shape[1] - 1)[:, None]
            rank = legal_bids.long().cumsum(1).gather(1, safe).squeeze(1)
            bluff = (actions < legal_bids.shape[1]) & legal_bids.gather(1, safe).squeeze(1)
            bluff &= rank <= span
            mixed = (1 - r) * p + r * bluff.double() / span.clamp_min(1).double()
            p = torch.where(span > 0, mixed, p)  # no legal bid: no bluff
        return p

    def _act(
        self, mask: torch.Tensor, rows: torch.Tensor, obs: torch.Tensor | None
    ) -> torch.Tensor:
        env, params = self.env, self.params
        n = len(rows)
        if n == 0:
            return torch.zeros(0, dtype=torch.long, device=env.device)
        action, legal_bids = self._planned(mask, rows, obs)
        has_raise = legal_bids.any(1)
        if params.bluff_rate > 0:
            u = torch.rand((n, 2), device=env.device, generator=self.generator)
            bluff = has_raise & (u[:, 0] < params.bluff_rate)
            cumulative = legal_bids.to(torch.int32).cumsum(1)
            span = cumulative[:, -1].clamp_max(2 * self.faces)
            rank = (u[:, 1] * span).to(torch.int32).clamp_max(span - 1)
            pick = (cumulative > rank[:, None]).to(torch.int8).argmax(1)
            action = torch.where(bluff, pick, action)
        return action

    def _planned(
        self, mask: torch.Tensor, rows: torch.Tensor, obs: torch.Tensor | None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """The move the bot plans in games ``rows`` (before any bluff), and their legal bids."""
        env, params, rules = self.env, self.params, self.env.rules
        nb = env.codec.num_bids
        n = len(rows)
        p_bid, p_next = self.bid_tails(rows, obs)
        mask = mask[rows]
        legal_bids = mask[:, :nb]
        cur = env.current_player[rows]
        masked = torch.where(legal_bids, p_bid, -1.0)
        p_raise = masked.max(1).values
        best = legal_bids & (masked >= p_raise[:, None] - TIE)
        best_raise = nb - 1 - best.flip(1).to(torch.int8).argmax(1)
        has_raise = legal_bids.any(1)

        bid_id = env.bid_id[rows]
        has_bid = bid_id >= 0
        safe_bid = bid_id.clamp_min(0)[:, None]
        p_true = p_bid.gather(1, safe_bid).squeeze(1)
        p_exact = p_true - p_next.gather(1, safe_bid).squeeze(1)
        p_raise = torch.where(has_raise, p_raise, -1.0)

        action = best_raise.clone()
        challenge = (
            ~has_raise | (p_true < params.challenge_threshold - TIE) | (p_raise < 1 - p_true - TIE)
        )
        action = torch.where(has_bid & challenge, env.codec.challenge, action)
        if env.codec.exact is not None:
            worthwhile = torch.ones(n, dtype=torch.bool, device=env.device)
            if rules.exact_call == "calza":
                worthwhile = env.dice_left[rows, cur] < rules.dice_per_player
            exact = (
                has_bid
                & worthwhile
                & (p_exact >= params.exact_threshold - TIE)
                & (p_exact >= torch.maximum(1 - p_true, p_raise) - TIE)
            )
            action = torch.where(exact, env.codec.exact, action)
        return action, legal_bids

    def _observations(self, rows: torch.Tensor, obs: torch.Tensor | None) -> torch.Tensor:
        return (obs if obs is not None else self.env.observe())[rows]

    def _gather(self, tails: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Per-bid tails from ``(n, F, L + 1)`` per-face tails."""
        return tails_per_bid(tails, self._bid_face, self._bid_quantity)


class BatchedBayesBot(BatchedProbabilisticBot):
    """Vectorized :class:`~liars_env.agents.probabilistic.BayesianAgent` (``bayes``)."""

    preset = "bayes"

    def bid_tails(
        self, rows: torch.Tensor, obs: torch.Tensor | None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Tails of the count given the opponents' tilted posteriors."""
        rules, params = self.env.rules, self.params
        own, dice, wild, history = parse_observation(self._observations(rows, obs), rules)
        n, f = len(rows), rules.faces
        # bids per (opponent, face) this round
        per_face = history[:, :, 1:].view(n, -1, f, rules.num_players - 1).sum(1)
        same = per_face.transpose(1, 2)  # (n, S, F)
        other = same.sum(2, keepdim=True) - same
        dist = tilted_match_distributions(
            dice[:, 1:],
            same,
            other,
            wild,
            f,
            rules.dice_per_player,
            params.evidence,
            params.counter_evidence,
            wild_die=rules.wild_die,
        )
        w = rules.wild_die
        known = known_matches(own, wild_faces(wild, f, wild_die=w), wild_die=w)
        return self._gather(count_tails(known, dist, rules.max_quantity + 1))


class BatchedBeliefBot(BatchedProbabilisticBot):
    """Vectorized :class:`~liars_env.agents.probabilistic.BeliefAgent` (``belief``)."""

    preset = "belief"

    def __init__(
        self, env: BatchedEnv, params: ProbabilisticParams | str | None = None, seed: int = 0
    ) -> None:
        super().__init__(env, params, seed)
        self.model = BeliefModel(
            env.rules,
            self.params.bluff_floor,
            self.params.evidence,
            self.params.follow_evidence,
            dtype=torch.float64,
        ).to(env.device)

    def bid_tails(
        self, rows: torch.Tensor, obs: torch.Tensor | None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Tails of the count given the posteriors over the opponents' hands."""
        return self._gather(self.model(self._observations(rows, obs).double()).tails)


def make_batched_bot(
    env: BatchedEnv, name: str, seed: int = 0
) -> BatchedProbabilisticBot | BatchedRandomBot:
    """The batched twin of the bot ``name`` (a spec: see :func:`check_batched_bot_spec`).

    Example:
        >>> env = BatchedEnv("perudo", num_envs=4)
        >>> type(make_batched_bot(env, "belief")).__name__
        'BatchedBeliefBot'
        >>> make_batched_bot(env, "bayes:bluff_rate=0.2").params.bluff_rate
        0.2
    """
    check_batched_bot_spec(name)
    if name == "random":
        return BatchedRandomBot(env, seed)
    preset, params = bot_params(name)
    kinds = {"bayes": BatchedBayesBot, "belief": BatchedBeliefBot}
    return kinds.get(preset, BatchedProbabilisticBot)(env, params, seed)
