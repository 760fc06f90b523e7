"""The torch backend of the batched engine: a step, observations and masks as tensor ops.

:class:`TorchBackend` implements :class:`~liars_env.batched.backends.BatchedBackend` on any
device (``BatchedEnv(backend="torch")``, the default off the CPU). It restates no rule: the
legality tables come from the env (built by :class:`~liars_env.actions.ActionCodec`), and
counting, settling calls, openers and palifico rounds from the array kernels of
:mod:`liars_env.batched.kernels`. It reads only the env's public attributes.

Example:
    >>> from liars_env.batched import BatchedEnv
    >>> env = BatchedEnv("perudo", num_envs=4, backend="torch")
    >>> type(env.backend_impl).__name__
    'TorchBackend'
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import torch

from liars_env.batched.backends import Transition, step_info
from liars_env.batched.kernels import (
    count_matches,
    face_counts,
    first_holding,
    palifico_starts,
    round_wild,
    settle_call,
)
from liars_env.rules import loser_reward

if TYPE_CHECKING:
    from liars_env.batched.engine import BatchedEnv


class TorchBackend:
    """:class:`BatchedEnv`'s steps, observations and masks as torch ops on its device.

    Holds the tables of the observation encoder on the env's device.
    """

    name = "torch"

    def __init__(self, env: BatchedEnv) -> None:
        dev, p = env.device, env.num_players
        self.seats = torch.arange(p, device=dev)
        self.die_slots = torch.arange(env.rules.dice_per_player, device=dev)
        self.rows = torch.arange(env.num_envs, device=dev)
        # rotation[o, k] = (o + k) % P: the seat k places clockwise from observer o
        self.rotation = (self.seats[:, None] + self.seats[None, :]) % p
        # relative[s, o] = (s − o) % P: seat s relative to observer o
        self.relative = (self.seats[:, None] - self.seats[None, :]) % p
        # move_cell[move · P + o]: where a move (bid id × P + bidder) goes in observer
        # o's bid history, bid id × P + the bidder relative to o
        move = torch.arange(env.codec.num_bids * p, device=dev)
        self.move_cell = ((move // p * p)[:, None] + self.relative[move % p]).view(-1)
        self.off = {name: sl.start for name, sl in env.layout.slices.items()}
        # the observation's values of each count (the layout's own tables, so that the
        # float32 values are the scalar encoder's to the bit)
        self.own_dice_value = torch.tensor(
            env.layout.own_dice_values, dtype=torch.float32, device=dev
        )
        self.dice_left_value = torch.tensor(
            env.layout.dice_left_values, dtype=torch.float32, device=dev
        )
        self.penalty = loser_reward(p)

    def observe(self, env: BatchedEnv) -> torch.Tensor:
        """``(B, size)`` float32 observations of the acting players (layout v1).

        Built from the state in a few passes: the round fields as one block, then every
        one-hot cell of the bids (the round's history, the current bid and its bidder) set
        to one by a single ``index_fill_``.
        """
        b, size, off, p = env.num_envs, env.observation_size, self.off, env.num_players
        cur = env.current_player
        own = env.dice.gather(1, cur[:, None, None].expand(-1, 1, env.rules.dice_per_player))
        rotated = env.dice_left.gather(1, self.rotation.index_select(0, cur))
        opener = _lookup(self.relative.view(-1), env.opener * p + cur)  # relative to cur
        head = torch.cat(
            [
                _lookup(self.own_dice_value, face_counts(own.squeeze(1), env.rules.faces)),
                _lookup(self.dice_left_value, rotated),
                (self.seats == opener[:, None]).float(),
                env.palifico[:, None].float(),
            ],
            dim=1,
        )
        obs = torch.zeros((b, size), dtype=torch.float32, device=env.device)
        obs[:, : off["current_bid"]] = head
        # The round's moves, flattened: game hit_row[i] made its k-th move (k = i −
        # first[hit_row[i]]), which goes to history cell hit_cell[i] (bid id × P + the
        # bidder relative to the actor)
        lens = env.round_len
        ends = lens.cumsum(0)
        hit_row = torch.repeat_interleave(self.rows, lens)
        first = (ends - lens).index_select(0, hit_row)
        slot = hit_row * env.codec.num_bids + torch.arange(len(hit_row), device=env.device) - first
        move = env.round_moves.view(-1).index_select(0, slot).long()
        hit_cell = self.move_cell.index_select(0, move * p + cur.index_select(0, hit_row))
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

    def legal_mask(self, env: BatchedEnv) -> torch.Tensor:
        """``(B, num_actions)`` bool: the env's legality tables at each game's row."""
        return env.legal_lookup(None)

    def sample_actions(
        self, env: BatchedEnv, generator: torch.Generator | None
    ) -> torch.Tensor | None:
        """``None``: the env's own table look-ups are this backend's sampler."""
        return None

    def first_illegal(
        self, env: BatchedEnv, actions: torch.Tensor, active: torch.Tensor | None
    ) -> int:
        """The first game (among ``active``) whose action is not legal, or ``-1``."""
        bad = ~env.is_legal(actions)  # (any id: out of range is illegal, not an error)
        if active is not None:
            bad &= active
        return int(bad.nonzero()[0, 0]) if bool(bad.any()) else -1

    def apply_actions(
        self, env: BatchedEnv, actions: torch.Tensor, active: torch.Tensor | None
    ) -> Transition:
        """:meth:`BatchedEnv.step`'s actions applied, once checked (long actions, ``(B,)``)."""
        r, codec = env.rules, env.codec
        if active is not None:
            actions = torch.where(active, actions, 0)
        cur = env.current_player
        is_bid = actions < codec.num_bids
        is_call = ~is_bid
        if active is not None:
            is_bid &= active
            is_call &= active

        # --- bids: the turn passes on (written to the observations by _advance)
        bidder = env.last_bidder
        prev_bid = env.bid_id
        env.bid_id = torch.where(is_bid, actions, env.bid_id)
        env.last_bidder = torch.where(is_bid, cur, env.last_bidder)

        # --- calls: count the dice of the called bid (in the games that call), settle it
        quantity, face = codec.decode_bids(prev_bid)
        count = torch.zeros_like(actions)
        call_rows = is_call.nonzero().squeeze(1)
        if call_rows.numel():
            wild = round_wild(r, env.palifico[call_rows]) if r.ones_wild else None
            count.index_copy_(
                0,
                call_rows,
                count_matches(env.dice[call_rows], face[call_rows], wild, wild_die=r.wild_die),
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
            dice_left=env.dice_left,
            challenge=is_challenge,
            exact=is_exact,
        )
        lost, gained = settled.lost, settled.gained
        env.dice_left = settled.dice_left
        eliminated = lost & (env.dice_left == 0)
        alive = env.dice_left > 0
        over = is_call & (alive.sum(1) == 1)
        winners = over[:, None] & alive
        rewards = torch.where(eliminated, self.penalty, winners.to(torch.float32))
        winner = torch.where(over, winners.to(torch.int8).argmax(1), -1)

        # --- the next bidder (games that bid) and the next round's opener (games that
        # called and go on), from the dice left after the call (a bid changes no dice)
        next_player = first_holding(env.dice_left, cur + 1)
        env.current_player = torch.where(is_bid, next_player, env.current_player)
        round_rows = (is_call & ~over).nonzero().squeeze(1)
        bid_rows = is_bid.nonzero().squeeze(1)
        return Transition(
            rewards=rewards,
            over=over,
            info=step_info(is_call, count, lost, gained, eliminated, winner),
            round_rows=round_rows,
            round_opener=first_holding(
                env.dice_left.index_select(0, round_rows),
                settled.anchor.index_select(0, round_rows),
            ),
            game_rows=over.nonzero().squeeze(1),
            bid_rows=bid_rows,
            bids=actions.index_select(0, bid_rows),
        )

    def start_rounds(
        self,
        env: BatchedEnv,
        rows: torch.Tensor,
        opener: torch.Tensor,
        rolled: torch.Tensor,
        first_new_game: int,
    ) -> None:
        """Writes the new rounds drawn by :meth:`BatchedEnv._draw_rounds` to the state."""
        r = env.rules
        game_rows = rows[first_new_game:]
        if game_rows.numel():
            env.dice_left[game_rows] = r.dice_per_player
            if r.palifico:
                env.had_palifico[game_rows] = False
        dice_left = env.dice_left.index_select(0, rows)
        env.dice.index_copy_(
            0, rows, torch.where(self.die_slots < dice_left[:, :, None], rolled, 0)
        )
        env.opener.index_copy_(0, rows, opener)
        env.current_player.index_copy_(0, rows, opener)
        env.bid_id.index_fill_(0, rows, -1)
        env.round_len.index_fill_(0, rows, 0)
        if r.palifico:
            had = env.had_palifico.index_select(0, rows)
            palifico = palifico_starts(r, dice_left, had, opener)
            env.palifico.index_copy_(0, rows, palifico)
            had |= palifico[:, None] & (self.seats == opener[:, None])
            env.had_palifico.index_copy_(0, rows, had)


def _lookup(table: torch.Tensor, index: torch.Tensor) -> torch.Tensor:
    """``table[index]`` for a 1-D table (``index_select``: a fraction of the cost)."""
    return table.index_select(0, index.reshape(-1)).view(index.shape)
