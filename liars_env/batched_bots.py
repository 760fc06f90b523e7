"""The probabilistic bot in array form, for opponents and evaluation on a BatchedEnv.

:class:`BatchedProbabilisticBot` makes, for every selected game at once, the decision
that :class:`~liars_env.agents.ProbabilisticAgent` makes for one game: the same
probabilities (the binomial tails come from the same function), the same thresholds and
the same tie-breaking. Without bluffs the two choose identical actions (checked in the
tests); bluffs draw from the batch's own torch generator.
"""

from __future__ import annotations

import torch

from liars_env.agents.probabilistic import BOT_PRESETS, ProbabilisticParams
from liars_env.agents.probability import binomial_tail
from liars_env.batched import BatchedEnv


class BatchedProbabilisticBot:
    """Vectorized probabilistic bot (``hand="common"`` only, like the batched engine).

    Args:
        env: The batch it plays in (its rules and device are used).
        params: Bot settings, or a preset name of
            :data:`~liars_env.agents.probabilistic.BOT_PRESETS` other than ``bayes``.
        seed: Seeds the bluffs.
    """

    def __init__(
        self, env: BatchedEnv, params: ProbabilisticParams | str = "probabilistic", seed: int = 0
    ) -> None:
        if isinstance(params, str):
            if params not in BOT_PRESETS or params == "bayes":
                names = ", ".join(n for n in BOT_PRESETS if n != "bayes")
                raise ValueError(f"no batched bot {params!r}; expected one of {names}")
            params = BOT_PRESETS[params]
        if params.evidence or params.counter_evidence:
            raise ValueError("the batched bot has no Bayesian evidence settings")
        self.params = params
        self.env = env
        rules, dev = env.rules, env.device
        q = rules.max_quantity
        self.faces = rules.faces
        # tails[c, u, m] = P(Binomial(u, p_c) >= m), p_0 = 1/F, p_1 = 2/F, m clipped to Q+1
        tails = torch.zeros((2, q + 1, q + 2), dtype=torch.float64)
        for c, p in enumerate((1 / rules.faces, 2 / rules.faces)):
            for u in range(q + 1):
                tail = torch.tensor(binomial_tail(u, p), dtype=torch.float64)
                tails[c, u, : len(tail)] = tail
        self._tails = tails.to(dev)
        self._bid_face = torch.as_tensor(env.codec.bid_face.copy(), device=dev)
        self._bid_quantity = torch.as_tensor(env.codec.bid_quantity.copy(), device=dev)
        self._face_ids = torch.arange(1, rules.faces + 1, device=dev)
        self.generator = torch.Generator(device=dev)
        self.generator.manual_seed(seed)

    def act(self, mask: torch.Tensor, rows: torch.Tensor) -> torch.Tensor:
        """Actions for the acting players of games ``rows`` (an index tensor).

        Args:
            mask: ``(B, A)`` legal mask of the whole batch (as the env returned it).
            rows: Games to decide for.
        """
        env, params, rules = self.env, self.params, self.env.rules
        nb = env.codec.num_bids
        n = len(rows)
        if n == 0:
            return torch.zeros(0, dtype=torch.long, device=env.device)
        mask = mask[rows]
        legal_bids = mask[:, :nb]
        cur = env.current_player[rows]
        own = env.dice[rows, cur]  # (n, D)
        held = (own[:, :, None] == self._face_ids).sum(1)  # (n, F): faces 1..F
        unseen = env.dice_left[rows].sum(1) - env.dice_left[rows, cur]
        wild = torch.zeros(n, dtype=torch.bool, device=env.device)
        if rules.ones_wild:
            wild = ~env.palifico[rows]
        wild_face = wild[:, None] & (self._face_ids != 1)  # (n, F)
        known = held + wild_face * held[:, :1]
        # probability that each bid id holds, from this player's point of view
        face_idx = self._bid_face - 1
        known_b = known[:, face_idx]  # (n, nb)
        choice_b = wild_face[:, face_idx].long()
        unseen_b = unseen[:, None].expand(-1, nb)
        top = self._tails.shape[2] - 1

        def holds(quantity: torch.Tensor) -> torch.Tensor:
            m = (quantity - known_b).clamp(0, top)
            return self._tails[choice_b, unseen_b, m]

        p_bid = holds(self._bid_quantity[None, :].expand(n, -1))
        masked = torch.where(legal_bids, p_bid, -1.0)
        p_raise = masked.max(1).values
        best = legal_bids & (masked >= p_raise[:, None] - 1e-9)
        best_raise = nb - 1 - best.flip(1).to(torch.int8).argmax(1)
        has_raise = legal_bids.any(1)

        bid_id = env.bid_id[rows]
        has_bid = bid_id >= 0
        safe_bid = bid_id.clamp_min(0)
        p_true = p_bid.gather(1, safe_bid[:, None]).squeeze(1)
        p_next = holds((self._bid_quantity + 1)[None, :].expand(n, -1))
        p_exact = p_true - p_next.gather(1, safe_bid[:, None]).squeeze(1)
        p_raise = torch.where(has_raise, p_raise, -1.0)

        action = best_raise.clone()
        challenge = ~has_raise | (p_true < params.challenge_threshold) | (p_raise < 1 - p_true)
        action = torch.where(has_bid & challenge, env.codec.challenge, action)
        if env.codec.exact is not None:
            worthwhile = torch.ones(n, dtype=torch.bool, device=env.device)
            if rules.exact_call == "calza":
                worthwhile = env.dice_left[rows, cur] < rules.dice_per_player
            exact = (
                has_bid
                & worthwhile
                & (p_exact >= params.exact_threshold)
                & (p_exact >= torch.maximum(1 - p_true, p_raise))
            )
            action = torch.where(exact, env.codec.exact, action)
        if params.bluff_rate > 0:
            u = torch.rand((n, 2), device=env.device, generator=self.generator)
            bluff = has_raise & (u[:, 0] < params.bluff_rate)
            cumulative = legal_bids.to(torch.int32).cumsum(1)
            span = cumulative[:, -1].clamp_max(2 * self.faces)
            rank = (u[:, 1] * span).to(torch.int32).clamp_max(span - 1)
            pick = (cumulative > rank[:, None]).to(torch.int8).argmax(1)
            action = torch.where(bluff, pick, action)
        return action
