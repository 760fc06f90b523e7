"""The batched engine: thousands of games of one rule set, their state and their random draws.

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
other in the tests; for a seed they play the same games. Both implement one protocol,
:class:`~liars_env.batched.backends.BatchedBackend`
(:mod:`~liars_env.batched.torch_backend`, :mod:`~liars_env.batched.numba_backend`); the env
keeps the state, the legality tables and the random draws. Games put at given positions and
read back are :mod:`liars_env.batched.positions`'s job.

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

from functools import cached_property
from typing import Any

import torch

from liars_env.batched.backends import BACKENDS, BatchedBackend, resolve_backend
from liars_env.batched.kernels import bid_caps, first_openers
from liars_env.batched.memory import retain_freed_memory
from liars_env.batched.numba_backend import NumbaBackend
from liars_env.batched.positions import BatchedPositions
from liars_env.batched.threads import DEFAULT_THREADS, check_threads, using_threads
from liars_env.batched.torch_backend import TorchBackend
from liars_env.engine import get_codec
from liars_env.errors import IllegalActionError
from liars_env.observation import ObservationLayout
from liars_env.rules import RuleSet, resolve_rules

__all__ = ["BACKENDS", "BatchedEnv", "resolve_backend", "sample_legal"]


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


class BatchedEnv(BatchedPositions):
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
        self._rows = torch.arange(num_envs, device=dev)
        if self.layout.slices["current_bid"].start != r.faces + 2 * self.num_players + 1:
            raise RuntimeError("BatchedEnv expects the round fields first in the layout")
        self._allocate()
        self.backend_impl: BatchedBackend = (
            NumbaBackend(self) if self.backend == "numba" else TorchBackend(self)
        )
        """The backend object that computes steps, observations and masks
        (:mod:`liars_env.batched.backends`)."""

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
        p = self.num_players
        if bid_rows is not None and bid_rows.numel():
            slot = self.round_len.index_select(0, bid_rows)
            at = bid_rows * self.codec.num_bids + slot  # flat (row, slot)
            move = bids * p + self.last_bidder.index_select(0, bid_rows)
            self.round_moves.view(-1).index_copy_(0, at, move.to(self.round_moves.dtype))
            self.round_len.index_copy_(0, bid_rows, slot + 1)
        drawn = self._draw_rounds(round_rows, round_opener, game_rows)
        if drawn is None:
            return
        self.backend_impl.start_rounds(self, *drawn)

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
        return self.backend_impl.legal_mask(self)

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
        return in_range & self.legal_lookup(actions.clamp(0, self.num_actions - 1))

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
            if rows is None:
                sampled = self.backend_impl.sample_actions(self, generator)
                if sampled is not None:
                    return sampled
            if self.sampler_tables is None:
                mask = self.legal_mask()
                return sample_legal(mask if rows is None else mask[rows], generator, threads=None)
            counts, kth = self.sampler_tables
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
    def sampler_tables(self) -> tuple[torch.Tensor, torch.Tensor] | None:
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

    def legal_lookup(self, actions: torch.Tensor | None) -> torch.Tensor:
        """The legality tables at each game's row: every action (``None``), or one each.

        ``(B, num_actions)`` bool for ``None``, else ``(B,)`` bool for ``(B,)`` action ids
        that must lie in the action space (:meth:`is_legal` checks the range).
        """

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
        return self.backend_impl.observe(self)

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
        if self.check_actions:
            bad = self.backend_impl.first_illegal(self, actions, active)
            if bad >= 0:
                self._raise_illegal(bad, actions)
        moved = self.backend_impl.apply_actions(self, actions, active)
        self._advance(
            bid_rows=moved.bid_rows,
            bids=moved.bids,
            round_rows=moved.round_rows,
            round_opener=moved.round_opener,
            game_rows=moved.game_rows,
        )
        return self.observe(), self.legal_mask(), moved.rewards, moved.over, moved.info

    def _raise_illegal(self, game: int, actions: torch.Tensor) -> None:
        raise IllegalActionError(
            f"game {game}: action {int(actions[game])} is not legal for player "
            f"{int(self.current_player[game])} (current bid {self.current_bid[game].tolist()})"
        )


def _cat(tensors: list[torch.Tensor]) -> torch.Tensor:
    """``torch.cat`` that skips the copy for a single tensor."""
    return tensors[0] if len(tensors) == 1 else torch.cat(tensors)
