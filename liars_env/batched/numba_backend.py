"""The numba backend of the batched engine: its steps, observations and masks as compiled loops.

:class:`NumbaBackend` implements :class:`~liars_env.batched.backends.BatchedBackend` through
the kernels of :mod:`liars_env.batched.fused`, on the CPU (``BatchedEnv(backend="numba")``,
the CPU's default where numba is installed). It reads only the env's public attributes.

Example:
    >>> from liars_env.batched import BatchedEnv
    >>> env = BatchedEnv("perudo", num_envs=4, backend="numba")
    >>> type(env.backend_impl).__name__
    'NumbaBackend'
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import torch

from liars_env.batched.backends import Transition, step_info
from liars_env.rules import loser_reward

if TYPE_CHECKING:
    from liars_env.batched.engine import BatchedEnv


class NumbaBackend:
    """:class:`BatchedEnv`'s steps, observations and masks through :mod:`liars_env.batched.fused`.

    Holds the numpy forms of the env's tables; reads and writes the env's state tensors
    through numpy views (the CPU shares their memory), taken afresh at every call since
    a step replaces some of them.
    """

    name = "numba"

    def __init__(self, env: BatchedEnv) -> None:
        from liars_env.batched import fused

        self.kernels = fused
        r, codec, layout = env.rules, env.codec, env.layout
        # the legality tables (raise, palifico raise, cap) as bytes: the mask kernel's
        # bitwise and of bytes vectorizes, of bools it does not
        self.tables = tuple(
            table.view(np.uint8)
            for table in (codec.legal_after, codec.palifico_legal_after, codec.cap_table)
        )
        self.own_dice_value = np.asarray(layout.own_dice_values, dtype=np.float32)
        self.dice_left_value = np.asarray(layout.dice_left_values, dtype=np.float32)
        # move_cell[move · P + o]: where a move (bid id × P + bidder) goes in observer
        # o's bid history, bid id × P + the bidder relative to o
        p = env.num_players
        seats = np.arange(p)
        relative = (seats[:, None] - seats[None, :]) % p
        move = np.arange(codec.num_bids * p)
        self.move_cell = ((move // p * p)[:, None] + relative[move % p]).reshape(-1)
        names = ("own_dice", "dice_left", "opener", "palifico", "current_bid")
        self.offsets = np.array(
            [layout.slices[name].start for name in (*names, "current_bidder", "bid_history")],
            dtype=np.int64,
        )
        self.exact_id = -1 if codec.exact is None else codec.exact
        modes = {"none": fused.NO_EXACT, "spot_on": fused.SPOT_ON, "calza": fused.CALZA}
        self.exact_mode = modes[r.exact_call]
        self.legality = (r.palifico, r.bid_cap, r.max_quantity)
        self.penalty = loser_reward(p)
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

    def sample_actions(
        self, env: BatchedEnv, generator: torch.Generator | None
    ) -> torch.Tensor | None:
        """:meth:`BatchedEnv.sample_actions` for every game (``None`` without the tables)."""
        if env.sampler_tables is None:
            return None
        counts, kth = env.sampler_tables
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

    def first_illegal(
        self, env: BatchedEnv, actions: torch.Tensor, active: torch.Tensor | None
    ) -> int:
        """The first game (among ``active``) whose action is not legal, or ``-1``."""
        on = self.all_active if active is None else active.numpy()
        return int(
            self.kernels.first_illegal(
                actions.numpy(),
                on,
                env.bid_id.numpy(),
                env.palifico.numpy(),
                env.dice_left.numpy(),
                *self.tables,
                *self.legality,
            )  # fmt: skip
        )

    def apply_actions(
        self, env: BatchedEnv, actions: torch.Tensor, active: torch.Tensor | None
    ) -> Transition:
        """:meth:`BatchedEnv.step`'s actions applied, once checked (long actions, ``(B,)``)."""
        k, codec = self.kernels, env.codec
        b, p = env.num_envs, env.num_players
        acts = actions.numpy()
        on = self.all_active if active is None else active.numpy()
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
            self.penalty, called.numpy(), count.numpy(),
            lost.numpy(), gained.numpy(), eliminated.numpy(), rewards.numpy(),
            winner.numpy(), over.numpy(), opener.numpy(),
        )  # fmt: skip
        round_rows = (called & ~over).nonzero().squeeze(1)
        return Transition(
            rewards=rewards,
            over=over,
            info=step_info(called, count, lost, gained, eliminated, winner),
            round_rows=round_rows,
            round_opener=opener.index_select(0, round_rows),
            game_rows=over.nonzero().squeeze(1),
        )
