"""A batched engine: thousands of games stepped at once.

Same rules, observation layout and action ids as the AEC env (every preset and option of
``docs/rules.md`` except ``hand="individual"``), on the CPU or, unchanged, on a CUDA device. Each
step takes one action per game, for that game's acting player; finished games reset
themselves and say so in ``dones``.

Two backends compute a step. ``torch`` (any device) restates no rule: the legal-raise
tables and the bid id arithmetic come from :class:`~liars_env.actions.ActionCodec` (built
from :func:`liars_env.rules.is_legal_bid`), and counting, settling calls, openers,
palifico rounds and the bid cap from the array kernels of :mod:`liars_env.batched.kernels`.
``numba`` (the CPU's default) runs the same step as a few compiled loops
(:mod:`liars_env.batched.fused`): the same tables, and compiled twins of those kernels. Both are
checked step by step against :class:`~liars_env.engine.LiarsDiceGame` and against each
other in the tests; for a seed they play the same games.

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

from collections.abc import Sequence
from functools import cached_property
from typing import Any

import numpy as np
import torch

from liars_env.batched.kernels import (
    bid_caps,
    count_matches,
    face_counts,
    first_holding,
    first_openers,
    palifico_starts,
    round_wild,
    settle_call,
)
from liars_env.batched.memory import retain_freed_memory
from liars_env.batched.threads import DEFAULT_THREADS, check_threads, using_threads
from liars_env.engine import GameState, get_codec
from liars_env.errors import IllegalActionError
from liars_env.observation import ObservationLayout
from liars_env.rules import RuleSet, loser_reward, resolve_rules


def sample_legal(
    mask: torch.Tensor,
    generator: torch.Generator | None = None,
    threads: int | None = DEFAULT_THREADS,
) -> torch.Tensor:
    """One uniformly random legal action per row of a ``(B, A)`` bool mask.

    Draws one uniform number per row and picks the legal action at that rank, which is
    much cheaper than ``torch.multinomial`` over the whole mask. Runs on ``threads``
    intra-op threads like the engine (``None``: torch's setting; see
    :mod:`liars_env.batched.threads`). A row with no legal action gets action 0.

    Example:
        >>> mask = torch.tensor([[False, True, False], [True, True, True]])
        >>> sample_legal(mask, torch.Generator().manual_seed(0))[0].item()
        1
    """
    with using_threads(threads):
        # int16 running counts are ~30% cheaper than int32 and exact below 32768 actions
        dtype = torch.int16 if mask.shape[1] < 2**15 else torch.int32
        cumulative = mask.to(dtype).cumsum(1, dtype=dtype)
        counts = cumulative[:, -1:]
        u = torch.rand(mask.shape[0], 1, device=mask.device, generator=generator)
        rank = (u * counts).to(dtype).clamp_max(counts - 1)
        # the first action whose running count of legal actions exceeds the rank
        return torch.searchsorted(cumulative, rank, right=True).squeeze(1)


class BatchedEnv:
    """``num_envs`` independent games of one rule set.

    Args:
        rules: A preset name or a :class:`RuleSet` (not ``hand="individual"``).
        num_envs: Games in the batch.
        device: Torch device for every tensor.
        seed: Seeds the batch's torch generator (dice and first openers).
        check_actions: Raise :class:`IllegalActionError` if an action is not legal
            (:meth:`is_legal`: a few look-ups per step; turn off in trusted training
            loops).
        threads: Intra-op torch threads while it steps and resets (``None``: leave
            torch's setting). One by default, the only setting that stays fast when
            another process holds a core (see :mod:`liars_env.batched.threads`).
        backend: How a step is computed: ``"torch"`` (tensor ops, any device),
            ``"numba"`` (the compiled loops of :mod:`liars_env.batched.fused`, CPU only, several
            times faster), or ``"auto"`` (numba on the CPU where it is installed, else
            torch). Both give the same games, observations and masks for a seed.
        **overrides: RuleSet fields.

    Public state (read it, do not write it, except to stage scenarios in tests):
        ``dice (B, P, D)`` faces, 0 for a lost die; ``dice_left (B, P)``;
        ``current_player (B,)``; ``current_bid (B, 2)`` as (quantity, face), 0 when none;
        ``opener (B,)``; ``palifico (B,)``.

    On the CPU, a step hands out fresh tensors of up to tens of MB; creating the env makes
    glibc keep freed blocks for reuse, so that they do not come back as page faults
    (:func:`liars_env.batched.memory.retain_freed_memory`; ``LIARS_ENV_TUNE_MALLOC=0`` opts out).
    """

    def __init__(
        self,
        rules: RuleSet | str = "perudo",
        num_envs: int = 4096,
        device: str | torch.device = "cpu",
        seed: int | None = 0,
        check_actions: bool = True,
        threads: int | None = DEFAULT_THREADS,
        backend: str = "auto",
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
        self.backend = resolve_backend(backend, self.device)
        if self.device.type == "cpu":
            retain_freed_memory()  # a step's fresh tensors without page faults
        self.check_actions = check_actions
        self.codec = get_codec(self.rules)
        self.layout = ObservationLayout(self.rules)
        self.num_players = self.rules.num_players
        self.num_actions = self.codec.num_actions
        self.observation_size = self.layout.size
        self.generator = torch.Generator(device=self.device)
        self.generator.manual_seed(0 if seed is None else seed)

        dev, r = self.device, self.rules
        # legality over the whole action space (see ActionCodec.legal_after, cap_table)
        self._raise_table = torch.tensor(self.codec.legal_after, device=dev)
        self._palifico_table = torch.tensor(self.codec.palifico_legal_after, device=dev)
        self._cap_table = torch.tensor(self.codec.cap_table, device=dev)
        self._seats = torch.arange(self.num_players, device=dev)
        self._die_slots = torch.arange(r.dice_per_player, device=dev)
        self._rows = torch.arange(num_envs, device=dev)
        p = self.num_players
        # _rotation[o, k] = (o + k) % P: the seat k places clockwise from observer o
        self._rotation = (self._seats[:, None] + self._seats[None, :]) % p
        # _relative[s, o] = (s − o) % P: seat s relative to observer o
        self._relative = (self._seats[:, None] - self._seats[None, :]) % p
        # _move_cell[move · P + o]: where a move (bid id × P + bidder) goes in observer
        # o's bid history, bid id × P + the bidder relative to o
        move = torch.arange(self.codec.num_bids * p, device=dev)
        self._move_cell = ((move // p * p)[:, None] + self._relative[move % p]).view(-1)
        self._off = {name: sl.start for name, sl in self.layout.slices.items()}
        if self._off["current_bid"] != self.rules.faces + 2 * self.num_players + 1:
            raise RuntimeError("BatchedEnv expects the round fields first in the layout")
        # the observation's values of each count (the layout's own tables, so that the
        # float32 values are the scalar encoder's to the bit)
        self._own_dice_value = torch.tensor(
            self.layout.own_dice_values, dtype=torch.float32, device=dev
        )
        self._dice_left_value = torch.tensor(
            self.layout.dice_left_values, dtype=torch.float32, device=dev
        )
        self._penalty = loser_reward(self.num_players)
        self._allocate()
        self._fused = _FusedBackend(self) if self.backend == "numba" else None

    # ------------------------------------------------------------------ state
    def _allocate(self) -> None:
        b, p, d, dev = self.num_envs, self.num_players, self.rules.dice_per_player, self.device
        self.dice = torch.zeros((b, p, d), dtype=torch.long, device=dev)
        self.dice_left = torch.zeros((b, p), dtype=torch.long, device=dev)
        self.current_player = torch.zeros(b, dtype=torch.long, device=dev)
        self.opener = torch.zeros(b, dtype=torch.long, device=dev)
        self.bid_id = torch.full((b,), -1, dtype=torch.long, device=dev)
        self.last_bidder = torch.zeros(b, dtype=torch.long, device=dev)
        # The round's moves in order (a round never repeats a bid, so at most num_bids):
        # round_moves[g, :round_len[g]], each bid id × P + its bidder (small ints: the
        # rows are written and read at random, so the fewer bytes the better)
        self.round_len = torch.zeros(b, dtype=torch.long, device=dev)
        moves = self.codec.num_bids * p
        dtype = torch.int16 if moves < 2**15 else torch.int32
        self.round_moves = torch.zeros((b, self.codec.num_bids), dtype=dtype, device=dev)
        self.palifico = torch.zeros(b, dtype=torch.bool, device=dev)
        self.had_palifico = torch.zeros((b, p), dtype=torch.bool, device=dev)

    @property
    def current_bid(self) -> torch.Tensor:
        """``(B, 2)`` quantity and face of each game's latest bid, 0 when none."""
        has = self.bid_id >= 0
        quantity, face = self.codec.decode_bids(self.bid_id)
        return torch.stack([torch.where(has, quantity, 0), torch.where(has, face, 0)], dim=1)

    def reset(self) -> tuple[torch.Tensor, torch.Tensor]:
        """Starts a new game in every slot; returns ``(obs, mask)`` of the players to act."""
        with using_threads(self.threads):
            self._advance(game_rows=self._rows)
            return self.observe(), self.legal_mask()

    def _advance(
        self,
        bid_rows: torch.Tensor | None = None,
        bids: torch.Tensor | None = None,
        round_rows: torch.Tensor | None = None,
        round_opener: torch.Tensor | None = None,
        game_rows: torch.Tensor | None = None,
    ) -> None:
        """Writes one step's bids, new rounds and new games to the state.

        The groups of games are disjoint; each may be ``None`` (or empty).

        Args:
            bid_rows: Games where the acting player bid ``bids`` (one each); ``bid_id``
                and ``last_bidder`` already hold the new bid and its bidder.
            bids: The bid ids.
            round_rows: Games whose round ended without ending the game: they reroll,
                and ``round_opener`` (one each) opens the next round.
            round_opener: The next round's openers.
            game_rows: Games that start anew (a random first opener).

        The rolls are drawn in a fixed order (the rounds' dice, the new games' openers,
        their dice), so that a seed always plays the same games.
        """
        r, p = self.rules, self.num_players
        if bid_rows is not None and bid_rows.numel():
            slot = self.round_len.index_select(0, bid_rows)
            at = bid_rows * self.codec.num_bids + slot  # flat (row, slot)
            move = bids * p + self.last_bidder.index_select(0, bid_rows)
            self.round_moves.view(-1).index_copy_(0, at, move.to(self.round_moves.dtype))
            self.round_len.index_copy_(0, bid_rows, slot + 1)
        drawn = self._draw_rounds(round_rows, round_opener, game_rows)
        if drawn is None:
            return
        rows, opener, rolled, first_new_game = drawn
        if self._fused is not None:
            self._fused.start_rounds(self, rows, opener, rolled, first_new_game)
            return
        game_rows = rows[first_new_game:]
        if game_rows.numel():
            self.dice_left[game_rows] = r.dice_per_player
            if r.palifico:
                self.had_palifico[game_rows] = False
        dice_left = self.dice_left.index_select(0, rows)
        self.dice.index_copy_(
            0, rows, torch.where(self._die_slots < dice_left[:, :, None], rolled, 0)
        )
        self.opener.index_copy_(0, rows, opener)
        self.current_player.index_copy_(0, rows, opener)
        self.bid_id.index_fill_(0, rows, -1)
        self.round_len.index_fill_(0, rows, 0)
        if r.palifico:
            had = self.had_palifico.index_select(0, rows)
            palifico = palifico_starts(r, dice_left, had, opener)
            self.palifico.index_copy_(0, rows, palifico)
            had |= palifico[:, None] & (self._seats == opener[:, None])
            self.had_palifico.index_copy_(0, rows, had)

    def _draw_rounds(
        self,
        round_rows: torch.Tensor | None,
        round_opener: torch.Tensor | None,
        game_rows: torch.Tensor | None,
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, int] | None:
        """The dice and openers of new rounds, then new games, drawn in a fixed order.

        Returns ``(rows, openers, rolled (n, P, D), first_new_game)`` with the round rows
        first, or ``None`` if there are none.
        """
        r, p, dev, gen = self.rules, self.num_players, self.device, self.generator
        roll = (1, r.faces + 1)
        starts, openers, rolled = [], [], []
        if round_rows is not None and round_rows.numel():
            starts.append(round_rows)
            openers.append(round_opener)
            rolled.append(
                torch.randint(
                    *roll, (len(round_rows), p, r.dice_per_player), device=dev, generator=gen
                )
            )
        first_new_game = len(round_rows) if starts else 0
        if game_rows is not None and game_rows.numel():
            n = len(game_rows)
            openers.append(first_openers(r, n, gen, dev))
            rolled.append(
                torch.randint(*roll, (n, p, r.dice_per_player), device=dev, generator=gen)
            )
            starts.append(game_rows)
        if not starts:
            return None
        return _cat(starts), _cat(openers), _cat(rolled), first_new_game

    # ------------------------------------------------------------------ views
    def legal_mask(self) -> torch.Tensor:
        """``(B, num_actions)`` bool: the legal actions of each game's acting player."""
        if self._fused is not None:
            return self._fused.legal_mask(self)
        return self._legal(None)

    def is_legal(self, actions: torch.Tensor) -> torch.Tensor:
        """``(B,)`` bool: whether each game's action is legal for its acting player.

        :meth:`legal_mask` at ``actions`` (``(B,)`` integer ids), without building the
        whole mask; ids outside the action space are illegal.

        Example:
            >>> env = BatchedEnv("perudo", num_envs=2, seed=0)
            >>> _ = env.reset()
            >>> one_two, ones = env.codec.encode_bid(1, 2), env.codec.encode_bid(1, 1)
            >>> env.is_legal(torch.tensor([one_two, env.codec.challenge])).tolist()
            [True, False]
            >>> env.is_legal(torch.tensor([ones, -1])).tolist()  # perudo opens on no ones
            [False, False]
        """
        actions = self._action_ids(actions)
        in_range = (actions >= 0) & (actions < self.num_actions)
        return in_range & self._legal(actions.clamp(0, self.num_actions - 1))

    def _action_ids(self, actions: Any) -> torch.Tensor:
        """``actions`` as an int64 tensor on the env's device; ``TypeError`` if not ints.

        Floats are refused rather than truncated (7.9 is not the bid with id 7).
        """
        actions = torch.as_tensor(actions, device=self.device)
        if (
            actions.dtype.is_floating_point
            or actions.dtype.is_complex
            or (actions.dtype == torch.bool)
        ):
            raise TypeError(f"actions must be integer action ids, got dtype {actions.dtype}")
        return actions.long()

    def sample_actions(
        self, generator: torch.Generator | None = None, rows: torch.Tensor | None = None
    ) -> torch.Tensor:
        """One uniformly random legal action per game, for its acting player.

        The same actions as ``sample_legal(env.legal_mask(), generator)`` for the same
        generator state (one uniform number per game picks the legal action at that
        rank), read from tables of each position's legal actions instead of a cumulative
        sum over the whole mask: a few look-ups per game. Variants whose table would be
        large (over :attr:`SAMPLER_TABLE_LIMIT` entries) fall back to the mask.

        Args:
            generator: Draws the uniform numbers (``None``: torch's global generator).
            rows: Optional ``(n,)`` game indices: sample for these games only.

        Returns:
            ``(B,)`` (or ``(n,)``) long action ids.

        Example:
            >>> env = BatchedEnv("perudo", num_envs=3, seed=0)
            >>> _ = env.reset()
            >>> actions = env.sample_actions(torch.Generator().manual_seed(1))
            >>> bool(env.is_legal(actions).all())
            True
        """
        with using_threads(self.threads):
            if self._fused is not None and rows is None and self._sampler is not None:
                return self._fused.sample_actions(self, generator)
            if self._sampler is None:
                mask = self.legal_mask()
                return sample_legal(mask if rows is None else mask[rows], generator, threads=None)
            counts, kth = self._sampler
            # each game's position: (palifico round, previous bid row, bid cap), flat
            caps = counts.shape[-1]
            index = self.bid_id + 1
            if self.rules.palifico:
                index = index + self.palifico.long() * (self.codec.num_bids + 1)
            index = index * caps
            if caps > 1:
                index += bid_caps(self.rules, self.dice_left, self.current_player)
            if rows is not None:
                index = index[torch.as_tensor(rows, device=self.device).long()]
            count = counts.view(-1).index_select(0, index)
            u = torch.rand(len(index), 1, device=self.device, generator=generator).squeeze(1)
            # the rank's arithmetic is sample_legal's (float32 u × count), so equal draws
            rank = (u * count).to(count.dtype).clamp_max(count - 1).clamp_min(0)
            return kth.view(-1).index_select(0, index * self.num_actions + rank).long()

    SAMPLER_TABLE_LIMIT = 1 << 22
    """Largest table (positions × actions) :meth:`sample_actions` builds."""

    @cached_property
    def _sampler(self) -> tuple[torch.Tensor, torch.Tensor] | None:
        """``(counts, kth)``: legal actions per position, in ascending id order.

        A position is (palifico round, previous bid row, bid cap); ``counts[v, r, c]``
        legal actions, ``kth[v, r, c, k]`` the ``k``-th of them. ``None`` if too large.
        """
        legal = [self._raise_table]
        if self.rules.palifico:
            legal.append(self._palifico_table)
        caps = self._cap_table if self.rules.bid_cap else self._cap_table[-1:]
        size = len(legal) * legal[0].shape[0] * caps.shape[0] * self.num_actions
        if size > self.SAMPLER_TABLE_LIMIT:
            return None
        both = torch.stack(legal)[:, :, None, :] & caps[None, None, :, :]  # (V, R, C, A)
        a = self.num_actions
        dtype = torch.int16 if a < 2**15 else torch.int32
        ids = torch.arange(a, device=self.device, dtype=torch.int32)
        kth = torch.where(both, ids, a).sort(-1).values  # the illegal ones last …
        kth = torch.where(kth == a, 0, kth).to(dtype)  # … as action 0, like sample_legal
        return both.sum(-1, dtype=torch.int32), kth

    def _legal(self, actions: torch.Tensor | None) -> torch.Tensor:
        """The legality tables at each game's row: every action (``None``), or one each."""

        def take(table: torch.Tensor, row: torch.Tensor) -> torch.Tensor:
            return table.index_select(0, row) if actions is None else table[row, actions]

        row = self.bid_id + 1
        legal = take(self._raise_table, row)
        if self.rules.palifico:
            palifico = self.palifico if actions is not None else self.palifico[:, None]
            legal = torch.where(palifico, take(self._palifico_table, row), legal)
        if self.rules.bid_cap:
            legal &= take(
                self._cap_table, bid_caps(self.rules, self.dice_left, self.current_player)
            )
        return legal

    def observe(self) -> torch.Tensor:
        """``(B, size)`` float32 observations of the acting players (layout v1).

        With the torch backend, built from the state in a few passes: the round fields as
        one block, then every one-hot cell of the bids (the round's history, the current
        bid and its bidder) set to one by a single ``index_fill_``; with numba, one pass
        over the games (:func:`liars_env.batched.fused.write_observations`).
        """
        if self._fused is not None:
            return self._fused.observe(self)
        b, size, off, p = self.num_envs, self.observation_size, self._off, self.num_players
        cur = self.current_player
        own = self.dice.gather(1, cur[:, None, None].expand(-1, 1, self.rules.dice_per_player))
        rotated = self.dice_left.gather(1, self._rotation.index_select(0, cur))
        opener = _lookup(self._relative.view(-1), self.opener * p + cur)  # relative to cur
        head = torch.cat(
            [
                _lookup(self._own_dice_value, face_counts(own.squeeze(1), self.rules.faces)),
                _lookup(self._dice_left_value, rotated),
                (self._seats == opener[:, None]).float(),
                self.palifico[:, None].float(),
            ],
            dim=1,
        )
        obs = torch.zeros((b, size), dtype=torch.float32, device=self.device)
        obs[:, : off["current_bid"]] = head
        # The round's moves, flattened: game hit_row[i] made its k-th move (k = i −
        # first[hit_row[i]]), which goes to history cell hit_cell[i] (bid id × P + the
        # bidder relative to the actor)
        lens = self.round_len
        ends = lens.cumsum(0)
        hit_row = torch.repeat_interleave(self._rows, lens)
        first = (ends - lens).index_select(0, hit_row)
        slot = (
            hit_row * self.codec.num_bids + torch.arange(len(hit_row), device=self.device) - first
        )
        move = self.round_moves.view(-1).index_select(0, slot).long()
        hit_cell = self._move_cell.index_select(0, move * p + cur.index_select(0, hit_row))
        # the current bid and its bidder are the round's last move, where one stands
        standing = (lens > 0).nonzero().squeeze(1)
        last = hit_cell.index_select(0, ends.index_select(0, standing) - 1)
        cells = torch.cat(
            [
                hit_row * size + off["bid_history"] + hit_cell,
                standing * size + off["current_bid"] + last // p,
                standing * size + off["current_bidder"] + last % p,
            ]
        )
        obs.view(-1).index_fill_(0, cells, 1.0)
        return obs

    # ------------------------------------------------------------------ positions
    def set_positions(
        self,
        rows: Any,
        *,
        dice: Any,
        dice_left: Any,
        opener: Any,
        bids: Any = None,
        palifico: Any = None,
        had_palifico: Any = None,
    ) -> None:
        """Puts the games ``rows`` at given positions: rounds in progress, from any seat's turn.

        For search and scenario tests: the batch plays on from these positions with
        :meth:`step` as from any other. Every value is checked against the rules first
        (nothing changes on an error): the same legality tables, bid caps, seat order and
        palifico rule as :meth:`step`, so a position the scalar engine could not reach
        in a round (an illegal raise, a bid out of turn) is refused.

        Args:
            rows: ``(n,)`` distinct game indices (or a ``(num_envs,)`` bool mask).
            dice: ``(n, P, D)`` faces ``1..F`` per seat, ``0`` in the slots past the
                seat's dice (its first ``dice_left`` slots hold its dice).
            dice_left: ``(n, P)`` dice per seat, ``0..D``; at least two seats hold dice.
            opener: ``(n,)`` the seat that opened the round (it holds dice).
            bids: ``(n, L)`` the round's bid ids in order, ``-1`` after the last (``None``
                or ``L = 0``: no bid yet). The opener made the first, each next seat
                clockwise that holds dice the next; the seat after the last bidder acts.
            palifico: ``(n,)`` bool, the round is palifico (default: no); only with the
                ``palifico`` rule and an opener holding one die.
            had_palifico: ``(n, P)`` bool, seats that have opened a palifico round
                (default: none; the opener of a palifico round is marked either way).

        Raises:
            ValueError: naming the first game and value that break a rule or a shape.

        Example:
            >>> env = BatchedEnv("perudo", num_players=2, dice_per_player=2, num_envs=1)
            >>> env.set_positions(
            ...     [0], dice=[[[3, 3], [1, 5]]], dice_left=[[2, 2]], opener=[1],
            ...     bids=[[env.codec.encode_bid(2, 3)]])
            >>> env.current_player.tolist(), env.current_bid.tolist()
            ([0], [[2, 3]])
        """
        r, codec = self.rules, self.codec
        p, d, f = self.num_players, r.dice_per_player, r.faces
        rows = self._position_rows(rows)
        n = len(rows)
        dice = _int_array(dice, "dice", (n, p, d))
        dice_left = _int_array(dice_left, "dice_left", (n, p))
        opener = _int_array(opener, "opener", (n,))
        bids = np.zeros((n, 0), np.int64) if bids is None else _int_array(bids, "bids", None)
        if bids.ndim != 2 or bids.shape[0] != n:
            raise ValueError(f"bids must have shape ({n}, L), got {bids.shape}")
        palifico = (
            np.zeros(n, bool) if palifico is None else _bool_array(palifico, "palifico", (n,))
        )
        had = (
            np.zeros((n, p), bool)
            if had_palifico is None
            else _bool_array(had_palifico, "had_palifico", (n, p))
        )

        def fail(game: int, what: str) -> None:
            raise ValueError(f"position {game} (row {int(rows[game])}): {what}")

        for g in np.flatnonzero((dice_left < 0).any(1) | (dice_left > d).any(1))[:1]:
            fail(g, f"dice_left must hold ints from 0 to {d}, got {dice_left[g].tolist()}")
        for g in np.flatnonzero((dice_left > 0).sum(1) < 2)[:1]:
            fail(g, f"dice_left must give at least two seats dice, got {dice_left[g].tolist()}")
        held = np.arange(d) < dice_left[:, :, None]
        bad = np.where(held, (dice < 1) | (dice > f), dice != 0).any((1, 2))
        for g in np.flatnonzero(bad)[:1]:
            fail(
                g,
                f"dice must hold faces 1–{f} in each seat's first dice_left slots and 0 "
                f"after them, got {dice[g].tolist()} with dice_left {dice_left[g].tolist()}",
            )
        bad = (opener < 0) | (opener >= p)
        bad |= dice_left[np.arange(n), opener.clip(0, p - 1)] == 0
        for g in np.flatnonzero(bad)[:1]:
            fail(g, f"opener must be a seat holding dice, got {opener[g]} ({dice_left[g]})")
        if not r.palifico and palifico.any():
            fail(int(np.flatnonzero(palifico)[0]), "palifico round without the palifico rule")
        bad = palifico & (dice_left[np.arange(n), opener] != 1)
        for g in np.flatnonzero(bad)[:1]:
            fail(g, "a palifico round's opener holds exactly one die")
        had |= palifico[:, None] & (np.arange(p) == opener[:, None])

        # the bids: made in turn from the opener, each legal after the one before
        placed = bids >= 0
        length = placed.sum(1)
        for g in np.flatnonzero((placed != (np.arange(bids.shape[1]) < length[:, None])).any(1))[
            :1
        ]:
            fail(g, f"bids must be bid ids followed only by -1 padding, got {bids[g].tolist()}")
        for g in np.flatnonzero((bids >= codec.num_bids).any(1))[:1]:
            fail(g, f"bids must be bid ids 0–{codec.num_bids - 1}, got {bids[g].tolist()}")
        dl = torch.as_tensor(dice_left)
        bidder = torch.as_tensor(opener)
        bidders = np.zeros_like(bids)
        row = np.zeros(n, np.int64)  # legality-table row of the bid standing (0: none)
        raise_table = codec.legal_after
        palifico_table = codec.palifico_legal_after
        for k in range(bids.shape[1]):
            now = placed[:, k]
            bid = bids[:, k].clip(0)
            legal = np.where(palifico, palifico_table[row, bid], raise_table[row, bid])
            cap = bid_caps(r, dl, bidder).numpy()
            legal &= codec.cap_table[cap, bid]
            for g in np.flatnonzero(now & ~legal)[:1]:
                fail(
                    g,
                    f"bid {k} ({codec.describe(int(bid[g]))}, id {int(bid[g])}) is not legal "
                    f"there for seat {int(bidder[g])} (bids {bids[g, :k].tolist()})",
                )
            bidders[:, k] = bidder.numpy()
            row = np.where(now, bid + 1, row)
            bidder = torch.where(torch.as_tensor(now), first_holding(dl, bidder + 1), bidder)

        # write the state (same fields as a new round, then the bids)
        dev = self.device
        idx = torch.as_tensor(rows, device=dev)
        pad = np.full((n, 1), -1, np.int64)  # so that a position without bids reads -1
        at = (np.arange(n), (length - 1) % (bids.shape[1] + 1))
        last = np.concatenate([bids, pad], 1)[at]
        last_bidder = np.where(length > 0, np.concatenate([bidders, pad + 1], 1)[at], 0)
        self.dice[idx] = torch.as_tensor(dice, device=dev)
        self.dice_left[idx] = torch.as_tensor(dice_left, device=dev)
        self.opener[idx] = torch.as_tensor(opener, device=dev)
        self.current_player[idx] = bidder.to(dev)
        self.bid_id[idx] = torch.as_tensor(last, device=dev)
        self.last_bidder[idx] = torch.as_tensor(last_bidder, device=dev)
        self.round_len[idx] = torch.as_tensor(length, device=dev)
        moves = np.zeros((n, codec.num_bids), np.int64)
        moves[:, : bids.shape[1]] = np.where(placed, bids * p + bidders, 0)
        self.round_moves[idx] = torch.as_tensor(moves, device=dev).to(self.round_moves.dtype)
        self.palifico[idx] = torch.as_tensor(palifico, device=dev)
        self.had_palifico[idx] = torch.as_tensor(had, device=dev)

    def load_states(self, rows: Any, states: Sequence[GameState]) -> None:
        """Puts the games ``rows`` at the positions of scalar engine states.

        :meth:`set_positions` from :class:`~liars_env.engine.GameState` objects (games
        still going on); the inverse of :meth:`states`. A state's bids must have been
        made in turn (as :class:`~liars_env.engine.LiarsDiceGame` makes them).

        Raises:
            ValueError: for a finished game, bids out of turn, or anything
                :meth:`set_positions` refuses.
        """
        rows = self._position_rows(rows)
        if len(states) != len(rows):
            raise ValueError(f"need one state per row: {len(rows)} rows, {len(states)} states")
        p, d = self.num_players, self.rules.dice_per_player
        n = len(states)
        dice = np.zeros((n, p, d), np.int64)
        bids = np.full((n, max([len(s.bids) for s in states], default=0)), -1, np.int64)
        for g, state in enumerate(states):
            if state.winner is not None:
                raise ValueError(f"state {g}: the game is over")
            if len(state.dice) != p or len(state.dice_left) != p:
                raise ValueError(f"state {g}: expected {p} seats, got {len(state.dice_left)}")
            for seat, hand in enumerate(state.dice):
                if len(hand) > d:
                    raise ValueError(f"state {g}: seat {seat} holds {len(hand)} dice")
                dice[g, seat, : len(hand)] = hand
            seat = state.opener
            for k, (bidder, quantity, face) in enumerate(state.bids):
                if bidder != seat:
                    raise ValueError(
                        f"state {g}: bid {k} was made by seat {bidder}, out of turn "
                        f"(seat {seat} bids next)"
                    )
                bids[g, k] = self.codec.encode_bid(quantity, face)
                seat = int(first_holding(torch.tensor([state.dice_left]), torch.tensor([seat + 1])))
            if state.current_player != seat:
                raise ValueError(
                    f"state {g}: current_player {state.current_player} is not the seat to "
                    f"act after the round's bids ({seat})"
                )
        had = [list(s.had_palifico) or [False] * p for s in states]
        self.set_positions(
            rows,
            dice=dice,
            dice_left=[list(s.dice_left) for s in states],
            opener=[s.opener for s in states],
            bids=bids,
            palifico=[bool(s.palifico) for s in states],
            had_palifico=had,
        )

    def states(self, rows: Any = None) -> list[GameState]:
        """The games ``rows`` (default: all) as scalar engine states, in the round now played.

        Holds what :meth:`load_states` reads back: dice, dice left, seat to act, opener,
        the round's bids, palifico flags. The game's past (``round``, ``out_order``,
        ``actions``) is not kept by the batch and is left empty.
        """
        rows = (
            np.arange(self.num_envs)
            if rows is None
            else torch.as_tensor(self._position_rows(rows)).numpy()
        )
        idx = torch.as_tensor(rows, device=self.device)
        dice = self.dice[idx].cpu().numpy()
        dice_left = self.dice_left[idx].cpu().numpy()
        current = self.current_player[idx].cpu().numpy()
        opener = self.opener[idx].cpu().numpy()
        length = self.round_len[idx].cpu().numpy()
        moves = self.round_moves[idx].long().cpu().numpy()
        palifico = self.palifico[idx].cpu().numpy()
        had = self.had_palifico[idx].cpu().numpy()
        p, faces = self.num_players, self.rules.faces
        out = []
        for g in range(len(rows)):
            bids = []
            for move in moves[g, : length[g]].tolist():
                bid, bidder = divmod(move, p)
                bids.append((bidder, bid // faces + 1, bid % faces + 1))
            out.append(
                GameState(
                    dice=[dice[g, s, : dice_left[g, s]].tolist() for s in range(p)],
                    dice_left=dice_left[g].tolist(),
                    current_player=int(current[g]),
                    opener=int(opener[g]),
                    bids=bids,
                    palifico=bool(palifico[g]),
                    had_palifico=had[g].tolist(),
                )
            )
        return out

    def _position_rows(self, rows: Any) -> np.ndarray:
        """``rows`` as distinct game indices (numpy int64); ``ValueError`` otherwise."""
        rows = torch.as_tensor(rows).cpu()
        if rows.dtype == torch.bool:
            if rows.shape != (self.num_envs,):
                raise ValueError(f"a bool rows mask must have shape ({self.num_envs},)")
            rows = rows.nonzero().squeeze(1)
        if rows.dim() != 1 or rows.is_floating_point() or rows.is_complex():
            raise ValueError(f"rows must be a 1-D integer tensor, got {tuple(rows.shape)}")
        rows = rows.long().numpy()
        if len(rows) and (rows.min() < 0 or rows.max() >= self.num_envs):
            raise ValueError(f"rows must lie in [0, {self.num_envs}), got {rows.tolist()}")
        if len(np.unique(rows)) != len(rows):
            raise ValueError("rows must be distinct games")
        return rows

    # ------------------------------------------------------------------ step
    def reset_games(self, rows: torch.Tensor) -> None:
        """Abandons the games ``rows`` (a bool mask or index tensor) and starts new ones.

        For training loops that stop caring about a game early (say, once the learner is
        out); no rewards are given for the abandoned games.

        Raises:
            ValueError: for a bool mask not shaped ``(num_envs,)``, or indices that are
                not a 1-D integer tensor of games ``0 … num_envs − 1`` (nothing changes).
        """
        rows = torch.as_tensor(rows, device=self.device)
        if rows.dtype == torch.bool:
            if rows.shape != (self.num_envs,):
                raise ValueError(
                    f"a bool rows mask must have shape ({self.num_envs},), got {tuple(rows.shape)}"
                )
            rows = rows.nonzero().squeeze(1)
        elif rows.dim() != 1 or rows.is_floating_point() or rows.is_complex():
            raise ValueError(
                f"rows must be a 1-D integer or bool tensor, got {tuple(rows.shape)} {rows.dtype}"
            )
        rows = rows.long()
        if rows.numel() and not bool(((rows >= 0) & (rows < self.num_envs)).all()):
            raise ValueError(f"rows must lie in [0, {self.num_envs}), got {rows.tolist()}")
        with using_threads(self.threads):
            self._advance(game_rows=rows)

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
            IllegalActionError: if ``check_actions`` and some action is not legal
                (nothing changes). With ``check_actions=False`` an illegal action's outcome
                is undefined and may differ between the backends.
            ValueError: for ``actions`` or ``active`` not shaped ``(num_envs,)``.
            TypeError: for ``actions`` that are not integers (floats are not truncated).
        """
        with using_threads(self.threads):
            return self._step(actions, active)

    def _step(
        self, actions: torch.Tensor, active: torch.Tensor | None
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor, dict[str, torch.Tensor]]:
        r, codec = self.rules, self.codec
        actions = self._action_ids(actions)
        if actions.shape != (self.num_envs,):
            raise ValueError(
                f"actions must have shape ({self.num_envs},), got {tuple(actions.shape)}"
            )
        if active is not None:
            active = torch.as_tensor(active, device=self.device, dtype=torch.bool)
            if active.shape != (self.num_envs,):
                raise ValueError(
                    f"active must have shape ({self.num_envs},), got {tuple(active.shape)}"
                )
        if self._fused is not None:  # its loops skip the inactive games' actions
            return self._fused.step(self, actions, active)
        if active is not None:
            actions = torch.where(active, actions, 0)
        if self.check_actions:
            bad = ~self.is_legal(actions)
            if active is not None:
                bad &= active
            if bool(bad.any()):
                self._raise_illegal(int(bad.nonzero()[0, 0]), actions)
        cur = self.current_player
        is_bid = actions < codec.num_bids
        is_call = ~is_bid
        if active is not None:
            is_bid &= active
            is_call &= active

        # --- bids: the turn passes on (written to the observations by _advance)
        bidder = self.last_bidder
        prev_bid = self.bid_id
        self.bid_id = torch.where(is_bid, actions, self.bid_id)
        self.last_bidder = torch.where(is_bid, cur, self.last_bidder)

        # --- calls: count the dice of the called bid (in the games that call), settle it
        quantity, face = codec.decode_bids(prev_bid)
        count = torch.zeros_like(actions)
        call_rows = is_call.nonzero().squeeze(1)
        if call_rows.numel():
            wild = round_wild(r, self.palifico[call_rows]) if r.ones_wild else None
            count.index_copy_(
                0,
                call_rows,
                count_matches(self.dice[call_rows], face[call_rows], wild, wild_die=r.wild_die),
            )
        if codec.exact is None:
            is_challenge, is_exact = is_call, None
        else:
            is_exact = is_call & (actions == codec.exact)
            is_challenge = is_call & ~is_exact
        settled = settle_call(
            r,
            count,
            quantity,
            caller=cur,
            bidder=bidder,
            dice_left=self.dice_left,
            challenge=is_challenge,
            exact=is_exact,
        )
        lost, gained = settled.lost, settled.gained
        self.dice_left = settled.dice_left
        eliminated = lost & (self.dice_left == 0)
        alive = self.dice_left > 0
        over = is_call & (alive.sum(1) == 1)
        winners = over[:, None] & alive
        rewards = torch.where(eliminated, self._penalty, winners.to(torch.float32))
        winner = torch.where(over, winners.to(torch.int8).argmax(1), -1)

        # --- the next bidder (games that bid) and the next round's opener (games that
        # called and go on), from the dice left after the call (a bid changes no dice)
        next_player = first_holding(self.dice_left, cur + 1)
        self.current_player = torch.where(is_bid, next_player, self.current_player)
        round_rows = (is_call & ~over).nonzero().squeeze(1)
        bid_rows = is_bid.nonzero().squeeze(1)
        self._advance(
            bid_rows=bid_rows,
            bids=actions.index_select(0, bid_rows),
            round_rows=round_rows,
            round_opener=first_holding(
                self.dice_left.index_select(0, round_rows),
                settled.anchor.index_select(0, round_rows),
            ),
            game_rows=over.nonzero().squeeze(1),
        )
        info = _step_info(is_call, count, lost, gained, eliminated, winner)
        return self.observe(), self.legal_mask(), rewards, over, info

    def _raise_illegal(self, game: int, actions: torch.Tensor) -> None:
        raise IllegalActionError(
            f"game {game}: action {int(actions[game])} is not legal for player "
            f"{int(self.current_player[game])} (current bid {self.current_bid[game].tolist()})"
        )


BACKENDS = ("auto", "torch", "numba")
"""The values of ``BatchedEnv(backend=...)``."""


def resolve_backend(backend: str, device: torch.device) -> str:
    """The backend a :class:`BatchedEnv` on ``device`` runs: ``"torch"`` or ``"numba"``.

    Raises:
        ValueError: for an unknown backend, or ``"numba"`` on a device other than the CPU.
        ImportError: for ``"numba"`` where numba cannot be imported.

    Example:
        >>> resolve_backend("torch", torch.device("cpu"))
        'torch'
    """
    if backend not in BACKENDS:
        raise ValueError(
            f"backend must be one of {', '.join(map(repr, BACKENDS))}, got {backend!r}"
        )
    if backend == "torch":
        return backend
    if device.type != "cpu":
        if backend == "numba":
            raise ValueError(f"backend='numba' runs on the CPU only, got device {device}")
        return "torch"
    try:
        import liars_env.batched.fused  # noqa: F401
    except ImportError as exc:
        if backend == "numba":
            raise ImportError(f"backend='numba' needs numba (pip install numba): {exc}") from exc
        return "torch"
    return "numba"


class _FusedBackend:
    """:class:`BatchedEnv`'s steps, observations and masks through :mod:`liars_env.batched.fused`.

    Holds the numpy forms of the env's tables; reads and writes the env's state tensors
    through numpy views (the CPU shares their memory), taken afresh at every call since
    a step replaces some of them.
    """

    def __init__(self, env: BatchedEnv) -> None:
        from liars_env.batched import fused

        self.kernels = fused
        r, codec = env.rules, env.codec
        # the legality tables (raise, palifico raise, cap) as bytes: the mask kernel's
        # bitwise and of bytes vectorizes, of bools it does not
        self.tables = tuple(
            table.view(np.uint8)
            for table in (codec.legal_after, codec.palifico_legal_after, codec.cap_table)
        )
        self.own_dice_value = env._own_dice_value.numpy()
        self.dice_left_value = env._dice_left_value.numpy()
        self.move_cell = env._move_cell.numpy()
        names = ("own_dice", "dice_left", "opener", "palifico", "current_bid")
        self.offsets = np.array(
            [env._off[name] for name in (*names, "current_bidder", "bid_history")],
            dtype=np.int64,
        )
        self.exact_id = -1 if codec.exact is None else codec.exact
        modes = {"none": fused.NO_EXACT, "spot_on": fused.SPOT_ON, "calza": fused.CALZA}
        self.exact_mode = modes[r.exact_call]
        self.legality = (r.palifico, r.bid_cap, r.max_quantity)
        self.all_active = np.ones(env.num_envs, dtype=bool)

    def observe(self, env: BatchedEnv) -> torch.Tensor:
        """A fresh ``(B, size)`` float32 tensor of the acting players' observations."""
        obs = torch.empty((env.num_envs, env.observation_size), dtype=torch.float32)
        self.kernels.write_observations(
            obs.numpy(), env.dice.numpy(), env.dice_left.numpy(), env.current_player.numpy(),
            env.opener.numpy(), env.palifico.numpy(), env.round_len.numpy(),
            env.round_moves.numpy(), self.own_dice_value, self.dice_left_value, self.offsets,
            self.move_cell,
        )  # fmt: skip
        return obs

    def legal_mask(self, env: BatchedEnv) -> torch.Tensor:
        """A fresh ``(B, num_actions)`` bool tensor of the acting players' legal actions."""
        mask = torch.empty((env.num_envs, env.num_actions), dtype=torch.bool)
        self.kernels.write_masks(
            mask.numpy().view(np.uint8), env.bid_id.numpy(), env.palifico.numpy(),
            env.dice_left.numpy(), *self.tables, *self.legality,
        )  # fmt: skip
        return mask

    def sample_actions(self, env: BatchedEnv, generator: torch.Generator | None) -> torch.Tensor:
        """:meth:`BatchedEnv.sample_actions` for every game (the tables must exist)."""
        counts, kth = env._sampler
        # the torch path's draw (one uniform number per game), so the same actions
        uniform = torch.rand(env.num_envs, 1, generator=generator).squeeze(1)
        out = torch.empty(env.num_envs, dtype=torch.long)
        self.kernels.sample_from_tables(
            out.numpy(), uniform.numpy(), env.bid_id.numpy(), env.palifico.numpy(),
            env.dice_left.numpy(), counts.numpy(), kth.numpy(), env.rules.palifico,
            env.rules.bid_cap,
        )  # fmt: skip
        return out

    def start_rounds(
        self,
        env: BatchedEnv,
        rows: torch.Tensor,
        opener: torch.Tensor,
        rolled: torch.Tensor,
        first_new_game: int,
    ) -> None:
        """Writes the new rounds drawn by :meth:`BatchedEnv._draw_rounds` to the state."""
        self.kernels.start_rounds(
            rows.numpy(), opener.numpy(), rolled.numpy(), first_new_game, env.dice.numpy(),
            env.dice_left.numpy(), env.opener.numpy(), env.current_player.numpy(),
            env.bid_id.numpy(), env.round_len.numpy(), env.palifico.numpy(),
            env.had_palifico.numpy(), env.rules.palifico,
        )  # fmt: skip

    def step(
        self, env: BatchedEnv, actions: torch.Tensor, active: torch.Tensor | None
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor, dict[str, torch.Tensor]]:
        """:meth:`BatchedEnv.step` once its arguments are checked (long actions, ``(B,)``)."""
        k, codec = self.kernels, env.codec
        b, p = env.num_envs, env.num_players
        acts = actions.numpy()
        on = self.all_active if active is None else active.numpy()
        if env.check_actions:
            bad = k.first_illegal(
                acts, on, env.bid_id.numpy(), env.palifico.numpy(), env.dice_left.numpy(),
                *self.tables, *self.legality,
            )  # fmt: skip
            if bad >= 0:
                env._raise_illegal(bad, actions)
        # a step hands out new tensors for these (as the torch path does), so that a
        # caller holding the old ones keeps the state before the step
        env.dice_left = env.dice_left.clone()
        env.current_player = env.current_player.clone()
        env.bid_id = env.bid_id.clone()
        env.last_bidder = env.last_bidder.clone()
        called = torch.zeros(b, dtype=torch.bool)
        count = torch.zeros(b, dtype=torch.long)
        lost, gained, eliminated = (torch.zeros((b, p), dtype=torch.bool) for _ in range(3))
        rewards = torch.zeros((b, p), dtype=torch.float32)
        winner = torch.full((b,), -1, dtype=torch.long)
        over = torch.zeros(b, dtype=torch.bool)
        opener = torch.full((b,), -1, dtype=torch.long)
        k.apply_actions(
            acts, on, env.dice.numpy(), env.dice_left.numpy(), env.current_player.numpy(),
            env.bid_id.numpy(), env.last_bidder.numpy(), env.round_len.numpy(),
            env.round_moves.numpy(), env.palifico.numpy(), codec.bid_quantity, codec.bid_face,
            codec.num_bids, self.exact_id, self.exact_mode, env.rules.ones_wild,
            env.rules.wild_die, env.rules.single_round, env.rules.dice_per_player,
            env._penalty, called.numpy(), count.numpy(),
            lost.numpy(), gained.numpy(), eliminated.numpy(), rewards.numpy(),
            winner.numpy(), over.numpy(), opener.numpy(),
        )  # fmt: skip
        round_rows = (called & ~over).nonzero().squeeze(1)
        env._advance(
            round_rows=round_rows,
            round_opener=opener.index_select(0, round_rows),
            game_rows=over.nonzero().squeeze(1),
        )
        info = _step_info(called, count, lost, gained, eliminated, winner)
        return self.observe(env), self.legal_mask(env), rewards, over, info


def _step_info(
    called: torch.Tensor,
    count: torch.Tensor,
    lost: torch.Tensor,
    gained: torch.Tensor,
    eliminated: torch.Tensor,
    winner: torch.Tensor,
) -> dict[str, torch.Tensor]:
    """The ``info`` of :meth:`BatchedEnv.step` (one place for its keys)."""
    return {
        "called": called,
        "count": count,
        "lost": lost,
        "gained": gained,
        "eliminated": eliminated,
        "winner": winner,
    }


def _lookup(table: torch.Tensor, index: torch.Tensor) -> torch.Tensor:
    """``table[index]`` for a 1-D table (``index_select``: a fraction of the cost)."""
    return table.index_select(0, index.reshape(-1)).view(index.shape)


def _cat(tensors: list[torch.Tensor]) -> torch.Tensor:
    """``torch.cat`` that skips the copy for a single tensor."""
    return tensors[0] if len(tensors) == 1 else torch.cat(tensors)


def _int_array(values: Any, name: str, shape: tuple[int, ...] | None) -> np.ndarray:
    """``values`` as an int64 array of ``shape`` (any shape for ``None``), or ``ValueError``."""
    if isinstance(values, torch.Tensor):
        values = values.detach().cpu().numpy()
    array = np.asarray(values)
    if array.size == 0 and shape is None:
        array = array.reshape(array.shape[0] if array.ndim else 0, 0)
    if array.dtype.kind not in "iu" and not (array.size == 0):
        raise ValueError(f"{name} must hold ints, got dtype {array.dtype}")
    if shape is not None and array.shape != shape:
        raise ValueError(f"{name} must have shape {shape}, got {array.shape}")
    return array.astype(np.int64)


def _bool_array(values: Any, name: str, shape: tuple[int, ...]) -> np.ndarray:
    """``values`` as a bool array of ``shape``, or ``ValueError``."""
    if isinstance(values, torch.Tensor):
        values = values.detach().cpu().numpy()
    array = np.asarray(values)
    if array.dtype != bool or array.shape != shape:
        raise ValueError(f"{name} must be bools of shape {shape}, got {array.dtype} {array.shape}")
    return array
