"""Position import and export for the batched engine: games put at given positions, read back.

:class:`BatchedPositions` holds :class:`~liars_env.batched.BatchedEnv`'s
:meth:`~BatchedPositions.set_positions` (rounds in progress from arrays, checked against the
rules), :meth:`~BatchedPositions.load_states` (from scalar
:class:`~liars_env.engine.GameState` objects) and :meth:`~BatchedPositions.states` (back to
them): what search and scenario tests need to start games from chosen positions. It is a
mixin of :class:`~liars_env.batched.BatchedEnv` and reads and writes that class's public
state tensors (``dice``, ``dice_left``, ``current_player``, ``opener``, ``bid_id``,
``last_bidder``, ``round_len``, ``round_moves``, ``palifico``, ``had_palifico``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import torch

from liars_env.batched.kernels import bid_caps, first_holding
from liars_env.engine import GameState


class BatchedPositions:
    """The position methods of :class:`~liars_env.batched.BatchedEnv` (a mixin).

    Example:
        >>> from liars_env.batched import BatchedEnv
        >>> env = BatchedEnv("perudo", num_players=2, dice_per_player=2, num_envs=2)
        >>> _ = env.reset()
        >>> env.load_states([1], env.states([0]))
        >>> env.states([1]) == env.states([0])
        True
    """

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
        :meth:`BatchedEnv.step` as from any other. Every value is checked against the rules first
        (nothing changes on an error): the same legality tables, bid caps, seat order and
        palifico rule as :meth:`BatchedEnv.step`, so a position the scalar engine could not reach
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
            >>> from liars_env.batched import BatchedEnv
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
