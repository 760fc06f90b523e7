"""A batched engine: thousands of games stepped at once with torch tensor operations.

Same rules, observation layout and action ids as the AEC env (every preset and option of
RULES.md except ``hand="individual"``), on the CPU or, unchanged, on a CUDA device. Each
step takes one action per game, for that game's acting player; finished games reset
themselves and say so in ``dones``.

Where a rule can be tabulated it is not restated here: the legal-raise tables come from
:class:`~liars_env.actions.ActionCodec` (built from :func:`liars_env.rules.is_legal_bid`).
What must be re-expressed in array form (counting, settling calls, openers, palifico) is
checked step by step against :class:`~liars_env.engine.LiarsDiceGame` in the tests.

Example:
    >>> import torch
    >>> env = BatchedEnv("perudo", num_envs=8, seed=0)
    >>> obs, mask = env.reset()
    >>> obs.shape, mask.shape
    (torch.Size([8, 376]), torch.Size([8, 91]))
    >>> actions = torch.multinomial(mask.float(), 1).squeeze(1)
    >>> obs, mask, rewards, dones, info = env.step(actions)
    >>> rewards.shape
    torch.Size([8, 3])
"""

from __future__ import annotations

from typing import Any

import torch

from liars_env.engine import get_codec
from liars_env.errors import IllegalActionError
from liars_env.observation import ObservationLayout
from liars_env.rules import RuleSet, loser_reward, resolve_rules
from liars_env.threads import DEFAULT_THREADS, check_threads, using_threads


def sample_legal(mask: torch.Tensor, generator: torch.Generator | None = None) -> torch.Tensor:
    """One uniformly random legal action per row of a ``(B, A)`` bool mask.

    Draws one uniform number per row and picks the legal action at that rank, which is
    much cheaper than ``torch.multinomial`` over the whole mask.

    Example:
        >>> mask = torch.tensor([[False, True, False], [True, True, True]])
        >>> sample_legal(mask, torch.Generator().manual_seed(0))[0].item()
        1
    """
    cumulative = mask.to(torch.int32).cumsum(1, dtype=torch.int32)
    counts = cumulative[:, -1]
    u = torch.rand(mask.shape[0], device=mask.device, generator=generator)
    rank = (u * counts).to(torch.int32).clamp_max(counts - 1)
    return (cumulative > rank[:, None]).to(torch.int8).argmax(1)


class BatchedEnv:
    """``num_envs`` independent games of one rule set.

    Args:
        rules: A preset name or a :class:`RuleSet` (not ``hand="individual"``).
        num_envs: Games in the batch.
        device: Torch device for every tensor.
        seed: Seeds the batch's torch generator (dice and first openers).
        check_actions: Raise :class:`IllegalActionError` if an action is not legal
            (one extra gather per step; turn off in trusted training loops).
        threads: Intra-op torch threads while it steps and resets (``None``: leave
            torch's setting). One by default, the only setting that stays fast when
            another process holds a core (see :mod:`liars_env.threads`).
        **overrides: RuleSet fields.

    Public state (read it, do not write it, except to stage scenarios in tests):
        ``dice (B, P, D)`` faces, 0 for a lost die; ``dice_left (B, P)``;
        ``current_player (B,)``; ``current_bid (B, 2)`` as (quantity, face), 0 when none;
        ``opener (B,)``; ``palifico (B,)``.
    """

    def __init__(
        self,
        rules: RuleSet | str = "perudo",
        num_envs: int = 4096,
        device: str | torch.device = "cpu",
        seed: int | None = 0,
        check_actions: bool = True,
        threads: int | None = DEFAULT_THREADS,
        **overrides: Any,
    ) -> None:
        self.threads = check_threads(threads)
        self.rules = resolve_rules(rules, **overrides)
        if self.rules.hand == "individual":
            raise ValueError("BatchedEnv supports every option but hand='individual'")
        if type(num_envs) is not int or num_envs < 1:
            raise ValueError(f"num_envs must be a positive int, got {num_envs!r}")
        self.num_envs = num_envs
        self.device = torch.device(device)
        self.check_actions = check_actions
        self.codec = get_codec(self.rules)
        self.layout = ObservationLayout(self.rules)
        self.num_players = self.rules.num_players
        self.num_actions = self.codec.num_actions
        self.observation_size = self.layout.size
        self.generator = torch.Generator(device=self.device)
        self.generator.manual_seed(0 if seed is None else seed)

        dev, r = self.device, self.rules
        self._raise_table = torch.tensor(self.codec.raise_table, device=dev)
        self._palifico_table = torch.tensor(self.codec.palifico_raise_table, device=dev)
        quantity = torch.tensor(self.codec.bid_quantity, device=dev)
        # _cap_table[c]: the bids whose quantity is at most c
        self._cap_table = quantity[None, :] <= torch.arange(r.max_quantity + 1, device=dev)[:, None]
        self._seats = torch.arange(self.num_players, device=dev)
        self._faces = torch.arange(1, r.faces + 1, device=dev)
        self._die_slots = torch.arange(r.dice_per_player, device=dev)
        self._rows = torch.arange(num_envs, device=dev)
        # _rotation[o, k] = (o + k) % P: the seat k places clockwise from observer o
        self._rotation = (self._seats[:, None] + self._seats[None, :]) % self.num_players
        self._off = {name: sl.start for name, sl in self.layout.slices.items()}
        self._scaled = self.layout.slices["dice_left"].stop  # own_dice and dice_left: ÷ D
        if self._off["current_bid"] != self.rules.faces + 2 * self.num_players + 1:
            raise RuntimeError("BatchedEnv expects the round fields first in the layout")
        self._penalty = loser_reward(self.num_players)
        self._allocate()

    # ------------------------------------------------------------------ state
    def _allocate(self) -> None:
        b, p, d, dev = self.num_envs, self.num_players, self.rules.dice_per_player, self.device
        self.dice = torch.zeros((b, p, d), dtype=torch.long, device=dev)
        self.dice_left = torch.zeros((b, p), dtype=torch.long, device=dev)
        self.current_player = torch.zeros(b, dtype=torch.long, device=dev)
        self.opener = torch.zeros(b, dtype=torch.long, device=dev)
        self.bid_id = torch.full((b,), -1, dtype=torch.long, device=dev)
        self.last_bidder = torch.zeros(b, dtype=torch.long, device=dev)
        self.bidder_of_bid = torch.full((b, self.codec.num_bids), -1, dtype=torch.int8, device=dev)
        self.palifico = torch.zeros(b, dtype=torch.bool, device=dev)
        self.had_palifico = torch.zeros((b, p), dtype=torch.bool, device=dev)
        # Every seat's observation, kept up to date incrementally: a step touches a few
        # entries per game, and observe() is one gather of the acting seats' rows.
        # Stored as uint8 (counts and 0/1 flags) to cut memory traffic; observe() scales
        # the count fields by 1/D when it converts to float32.
        self._obs = torch.zeros((b, p, self.observation_size), dtype=torch.uint8, device=dev)

    @property
    def current_bid(self) -> torch.Tensor:
        """``(B, 2)`` quantity and face of each game's latest bid, 0 when none."""
        has = self.bid_id >= 0
        faces = self.rules.faces
        quantity = torch.where(has, self.bid_id // faces + 1, 0)
        face = torch.where(has, self.bid_id % faces + 1, 0)
        return torch.stack([quantity, face], dim=1)

    def reset(self) -> tuple[torch.Tensor, torch.Tensor]:
        """Starts a new game in every slot; returns ``(obs, mask)`` of the players to act."""
        with using_threads(self.threads):
            self._new_games(self._rows)
            return self.observe(), self.legal_mask()

    def _new_games(self, rows: torch.Tensor) -> None:
        """Starts new games in the slots ``rows`` (a 1-D index tensor)."""
        if rows.numel() == 0:
            return
        self.dice_left[rows] = self.rules.dice_per_player
        self.had_palifico[rows] = False
        first = torch.randint(
            0, self.num_players, (len(rows),), device=self.device, generator=self.generator
        )
        self._new_rounds(rows, first)

    def _new_rounds(self, rows: torch.Tensor, opener: torch.Tensor) -> None:
        """Rerolls and clears the bids of the games ``rows``; ``opener`` (one each) opens."""
        if rows.numel() == 0:
            return
        r, p = self.rules, self.num_players
        dice_left = self.dice_left[rows]
        rolled = torch.randint(
            1,
            r.faces + 1,
            (len(rows), p, r.dice_per_player),
            device=self.device,
            generator=self.generator,
        )
        self.dice[rows] = torch.where(self._die_slots < dice_left[:, :, None], rolled, 0)
        self.opener[rows] = opener
        self.current_player[rows] = opener
        self._clear_round_bids(rows)
        self.bid_id[rows] = -1
        self.bidder_of_bid[rows] = -1
        if r.palifico:
            opener_dice = dice_left.gather(1, opener[:, None]).squeeze(1)
            opener_had = self.had_palifico[rows].gather(1, opener[:, None]).squeeze(1)
            pal = (opener_dice == 1) & ~opener_had
            self.palifico[rows] = pal
            self.had_palifico[rows] |= pal[:, None] & (self._seats == opener[:, None])
        self._write_round_start(rows)

    def _clear_round_bids(self, rows: torch.Tensor) -> None:
        """Zeroes the bid fields of every seat's observation of the games ``rows``.

        Only the cells that this round's bids set are touched: the history entries (one
        per bid and observer), the current bid and the current bidder.
        """
        p, off, size = self.num_players, self._off, self.observation_size
        flat = self._obs.view(-1)
        bidder_of_bid = self.bidder_of_bid[rows]  # (n, nb)
        hit_row, hit_bid = (bidder_of_bid >= 0).nonzero(as_tuple=True)
        if hit_row.numel() == 0:
            return
        bidder = bidder_of_bid[hit_row, hit_bid].long()
        base = (rows[hit_row, None] * p + self._seats) * size  # (hits, P)
        cells = [
            base + off["bid_history"] + hit_bid[:, None] * p + (bidder[:, None] - self._seats) % p
        ]
        base = (rows[:, None] * p + self._seats) * size  # (n, P)
        last = self.bid_id[rows].clamp_min(0)
        cells.append(base + off["current_bid"] + last[:, None])
        cells.append(
            (base[:, :, None] + off["current_bidder"] + self._seats).reshape(len(rows), -1)
        )
        flat.index_fill_(0, torch.cat([c.reshape(-1) for c in cells]), 0)

    def _write_round_start(self, rows: torch.Tensor) -> None:
        """Rewrites the per-round fields of every seat's observation of the games ``rows``.

        The bid fields must have been cleared (see :meth:`_clear_round_bids`).
        """
        p, off = self.num_players, self._off
        dice = self.dice[rows]  # (n, P, D)
        counts = (dice[:, :, :, None] == self._faces).sum(2)  # (n, P, F)
        dice_left = self.dice_left[rows][:, self._rotation]  # (n, P, P)
        rel_opener = (self.opener[rows][:, None] - self._seats) % p  # (n, P)
        opener = rel_opener[:, :, None] == self._seats
        palifico = self.palifico[rows][:, None, None].expand(-1, p, 1)
        head = torch.cat([counts, dice_left, opener, palifico], dim=2).to(torch.uint8)
        self._obs[rows, :, : off["current_bid"]] = head

    # ------------------------------------------------------------------ views
    def legal_mask(self) -> torch.Tensor:
        """``(B, num_actions)`` bool: the legal actions of each game's acting player."""
        row = self.bid_id + 1
        bids = self._raise_table.index_select(0, row)
        if self.rules.palifico:
            pal = self._palifico_table.index_select(0, row)
            bids = torch.where(self.palifico[:, None], pal, bids)
        if self.rules.bid_cap:
            bids &= self._cap_table.index_select(0, self.dice_left.sum(1))
        calls = (self.bid_id >= 0)[:, None].expand(-1, self.num_actions - self.codec.num_bids)
        return torch.cat([bids, calls], dim=1)

    def observe(self) -> torch.Tensor:
        """``(B, size)`` float32 observations of the acting players (layout v1)."""
        flat = self._obs.view(self.num_envs * self.num_players, self.observation_size)
        raw = flat.index_select(0, self._rows * self.num_players + self.current_player)
        obs = raw.float()
        obs[:, : self._scaled] *= 1.0 / self.rules.dice_per_player
        return obs

    # ------------------------------------------------------------------ step
    def _next_active(self, seat: torch.Tensor) -> torch.Tensor:
        """The next seat clockwise from ``seat`` (B,) that holds dice."""
        p = self.num_players
        candidates = (seat[:, None] + 1 + self._seats) % p
        active = self.dice_left.gather(1, candidates) > 0
        first = active.to(torch.int8).argmax(1)
        return candidates.gather(1, first[:, None]).squeeze(1)

    def _write_bids(self, rows: torch.Tensor, bids: torch.Tensor, bidders: torch.Tensor) -> None:
        """Records bids ``bids`` by seats ``bidders`` in games ``rows`` (state and obs)."""
        if rows.numel() == 0:
            return
        p, off, size = self.num_players, self._off, self.observation_size
        self.bidder_of_bid[rows, bids] = bidders.to(torch.int8)
        flat = self._obs.view(-1)
        n = len(rows)
        # base[i, o]: start of observer o's vector in game rows[i]
        base = (rows[:, None] * p + self._seats) * size
        prev = self.bid_id[rows].clamp_min(0)  # cell 0 of current_bid is harmless to clear
        cleared = torch.cat(
            [
                (base + off["current_bid"] + prev[:, None]).reshape(n, -1),
                (base[:, :, None] + off["current_bidder"] + self._seats).reshape(n, -1),
            ],
            dim=1,
        )
        flat.index_fill_(0, cleared.reshape(-1), 0)
        rel = (bidders[:, None] - self._seats) % p  # (n, P): bidder relative to observer
        set_cells = torch.cat(
            [
                base + off["current_bid"] + bids[:, None],
                base + off["current_bidder"] + rel,
                base + off["bid_history"] + bids[:, None] * p + rel,
            ],
            dim=1,
        )
        flat.index_fill_(0, set_cells.reshape(-1), 1)

    def reset_games(self, rows: torch.Tensor) -> None:
        """Abandons the games ``rows`` (a bool mask or index tensor) and starts new ones.

        For training loops that stop caring about a game early (say, once the learner is
        out); no rewards are given for the abandoned games.
        """
        if rows.dtype == torch.bool:
            rows = rows.nonzero().squeeze(1)
        with using_threads(self.threads):
            self._new_games(rows.to(self.device))

    def step(
        self, actions: torch.Tensor, active: torch.Tensor | None = None
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor, dict[str, torch.Tensor]]:
        """Applies one action per game for its acting player.

        Args:
            actions: ``(B,)`` integer action ids (ignored where ``active`` is false).
            active: Optional ``(B,)`` bool: step only these games; the others are left
                exactly as they are (their action may be anything).

        Returns:
            ``obs (B, size)``, ``mask (B, A)`` for the players to act next (of the new
            game where one ended), ``rewards (B, P)`` earned at this step, ``dones (B,)``
            (the game ended and was reset), and ``info`` with ``(B,)``/``(B, P)`` tensors:
            ``called`` (a challenge or exact call was resolved), ``count``,
            ``lost`` and ``gained`` (dice per seat), ``eliminated``, ``winner``
            (-1 while the game goes on).

        Raises:
            IllegalActionError: if ``check_actions`` and some action is not legal.
        """
        with using_threads(self.threads):
            return self._step(actions, active)

    def _step(
        self, actions: torch.Tensor, active: torch.Tensor | None
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor, dict[str, torch.Tensor]]:
        r, codec = self.rules, self.codec
        actions = torch.as_tensor(actions, device=self.device).long()
        if actions.shape != (self.num_envs,):
            raise ValueError(
                f"actions must have shape ({self.num_envs},), got {tuple(actions.shape)}"
            )
        if active is not None:
            active = torch.as_tensor(active, device=self.device, dtype=torch.bool)
            actions = torch.where(active, actions, 0)
        if self.check_actions:
            in_range = (actions >= 0) & (actions < self.num_actions)
            legal = self.legal_mask().gather(1, actions.clamp(0, self.num_actions - 1)[:, None])
            bad = ~(in_range & legal.squeeze(1))
            if active is not None:
                bad &= active
            if bool(bad.any()):
                i = int(bad.nonzero()[0, 0])
                raise IllegalActionError(
                    f"game {i}: action {int(actions[i])} is not legal for player "
                    f"{int(self.current_player[i])} (current bid {self.current_bid[i].tolist()})"
                )
        cur = self.current_player
        is_bid = actions < codec.num_bids
        is_call = ~is_bid
        if active is not None:
            is_bid &= active
            is_call &= active

        # --- bids: record and pass the turn
        bid_rows = is_bid.nonzero().squeeze(1)
        self._write_bids(bid_rows, actions[bid_rows], cur[bid_rows])
        bidder = self.last_bidder
        prev_bid = self.bid_id
        self.bid_id = torch.where(is_bid, actions, self.bid_id)
        self.last_bidder = torch.where(is_bid, cur, self.last_bidder)
        next_player = self._next_active(cur)

        # --- calls: count the dice of the called bid
        quantity = prev_bid // r.faces + 1
        face = prev_bid % r.faces + 1
        dice = self.dice
        matches = dice == face[:, None, None]
        if r.ones_wild:
            wild = (~self.palifico & (face != 1))[:, None, None]
            matches |= wild & (dice == 1)
        count = matches.sum((1, 2))
        seat_is = self._seats == cur[:, None]  # (B, P): the caller
        bidder_is = self._seats == bidder[:, None]
        holding = self.dice_left > 0  # seats in this round
        is_exact = torch.zeros_like(is_call) if codec.exact is None else actions == codec.exact
        is_challenge = is_call & ~is_exact
        challenge_true = count >= quantity
        lost = is_challenge[:, None] & torch.where(challenge_true[:, None], seat_is, bidder_is)
        gained = torch.zeros_like(lost)
        if codec.exact is not None:
            exact_right = count == quantity
            wrong = is_exact & ~exact_right
            lost |= wrong[:, None] & seat_is
            right = is_exact & exact_right
            if r.exact_call == "spot_on":
                lost |= right[:, None] & holding & ~seat_is
            else:
                gained = right[:, None] & seat_is & (self.dice_left < r.dice_per_player)
        self.dice_left = self.dice_left - lost.long() + gained.long()
        eliminated = lost & (self.dice_left == 0)
        alive = self.dice_left > 0
        over = is_call & (alive.sum(1) == 1)
        rewards = eliminated.float() * self._penalty
        rewards = rewards + (over[:, None] & alive).float()
        winner = torch.where(over, alive.to(torch.int8).argmax(1), -1)

        # --- next player or next round
        anchor = torch.where(is_challenge, torch.where(challenge_true, cur, bidder), cur)
        anchor_alive = alive.gather(1, anchor[:, None]).squeeze(1)
        opener = torch.where(anchor_alive, anchor, self._next_active(anchor))
        self.current_player = torch.where(is_bid, next_player, self.current_player)
        round_rows = (is_call & ~over).nonzero().squeeze(1)
        self._new_rounds(round_rows, opener[round_rows])
        self._new_games(over.nonzero().squeeze(1))
        info = {
            "called": is_call,
            "count": torch.where(is_call, count, 0),
            "lost": lost,
            "gained": gained,
            "eliminated": eliminated,
            "winner": winner,
        }
        return self.observe(), self.legal_mask(), rewards, over, info
