"""The search's playouts: candidate moves played out on the batched engine, and their returns.

:class:`SearchPlayouts` holds :class:`~liars_env.agents.search.SearchAgent`'s rollouts
(step 2 of its module docstring): the batches of games it keeps (a few sizes, reused), the
loop that plays a candidate and then the base (or the bot drawn for a seat) in every seat
to the depth searched, scoring the leaves with the base's value head or
:func:`~liars_env.agents.search_bases.dice_value`, and the bots that play the types of a
``mixed`` belief. It is a mixin of ``SearchAgent`` and reads that class's ``rules``,
``settings``, ``base``, ``_types()``, ``_envs``, ``_bots`` and ``_bot_seed``.
"""

from __future__ import annotations

from typing import Any

import torch

from liars_env.agents.batched import make_batched_bot
from liars_env.agents.search_bases import dice_value
from liars_env.batched import BatchedEnv
from liars_env.rules import loser_reward


class SearchPlayouts:
    """The playouts of :class:`~liars_env.agents.search.SearchAgent` (a mixin)."""

    def _env(self, size: int) -> BatchedEnv:
        env = self._envs.get(size)
        if env is None:
            env = BatchedEnv(self.rules, num_envs=size, seed=0, check_actions=False)
            self._envs[size] = env
            while len(self._envs) > 4:
                self._envs.popitem(last=False)
        self._envs.move_to_end(size)
        return env

    @torch.no_grad()
    def _play(
        self,
        env: BatchedEnv,
        me: torch.Tensor,
        first: torch.Tensor,
        gen: torch.Generator,
        players: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """Plays ``first`` then the base in every seat; the return of seat ``me`` per game.

        ``players`` ``(n, P)``, where given, names who plays each seat of each game: 0
        the base, ``k`` the ``k``-th bot of ``types``.
        """
        n = env.num_envs
        by_depth = self.settings.depth == "round"
        lose = loser_reward(self.rules.num_players)
        value = torch.zeros(n, dtype=torch.float64)
        live = torch.ones(n, dtype=torch.bool)
        round_over = torch.zeros(n, dtype=torch.bool)
        actions = first
        rows = torch.arange(n)
        for _ in range(100_000):
            obs, mask, rewards, dones, info = env.step(actions, live)
            mine = rewards.gather(1, me[:, None]).squeeze(1).double()
            out = live & ~dones & (env.dice_left.gather(1, me[:, None]).squeeze(1) == 0)
            value = torch.where(live & dones, mine, value)
            value = torch.where(out, torch.full_like(value, lose), value)
            live &= ~dones & ~out
            round_over |= info["called"] & live
            if by_depth:
                leaf = live & round_over & (env.current_player == me)
                if bool(leaf.any()):
                    at = leaf.nonzero().squeeze(1)
                    if self.base.has_value:
                        scores = self.base.values(obs[at], mask[at])
                    else:
                        scores = dice_value(env.dice_left[at], me[at]).double()
                    value[at] = scores
                    live &= ~leaf
            if not bool(live.any()):
                return value
            at = rows[live]
            actions = torch.zeros(n, dtype=torch.long)
            if players is None:
                actions[at] = self.base.rollout(env, obs, mask, at, gen).long()
                continue
            who = players[at, env.current_player[at]]
            for k in who.unique().tolist():
                part = at[who == k]
                if k == 0:
                    actions[part] = self.base.rollout(env, obs, mask, part, gen).long()
                else:
                    actions[part] = self._type_bot(env, k).act(mask, part, obs).long()
        raise RuntimeError("rollouts did not finish")  # pragma: no cover

    def _type_bot(self, env: BatchedEnv, k: int) -> Any:
        """The batched bot playing type ``k`` in ``env``'s games (made once per env)."""
        key = (id(env), k)
        bot = self._bots.get(key)
        if bot is None or bot.env is not env:
            bot = self._bots[key] = make_batched_bot(env, self._types()[k - 1], self._bot_seed + k)
        return bot

    def _reseed_types(self, seed: int) -> None:
        self._bot_seed = seed
        for (_, k), bot in self._bots.items():
            bot.generator.manual_seed(seed + k)
