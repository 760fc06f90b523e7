"""What the search asks of its base agent: one adapter per kind of agent.

A checkpoint (its network decides the rollouts, weighs hands and scores positions), a
bot with a batched twin (:mod:`liars_env.agents.batched`), or any other agent with
``action_probabilities`` (asked one position at a time); and :func:`dice_value`, the
score of a position for a base without a value head.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from liars_env.agents.base import PlayerView
from liars_env.agents.batched import check_batched_bot_spec, make_batched_bot
from liars_env.batched import BatchedEnv
from liars_env.engine import LiarsDiceGame
from liars_env.observation import ObservationLayout, view_of
from liars_env.rules import RuleSet


def dice_value(dice_left: torch.Tensor, seat: torch.Tensor) -> torch.Tensor:
    """A position's value to ``seat`` from the dice alone (for a base without a value head).

    The seat's share of the dice in play, ``s``, taken as its chance to win and turned
    into an expected return: ``s · 1 + (1 − s) · (−1/(N − 1))``. Exact where the round
    decides the game; a crude but monotone score elsewhere.

    Args:
        dice_left: ``(B, N)`` dice per seat.
        seat: ``(B,)`` the seat valued.

    Example:
        >>> dice_value(torch.tensor([[3, 1], [0, 2]]), torch.tensor([0, 0])).tolist()
        [0.5, -1.0]
    """
    n = dice_left.shape[1]
    share = dice_left.gather(1, seat[:, None]).squeeze(1) / dice_left.sum(1)
    return share * (1 + 1 / (n - 1)) - 1 / (n - 1)


class _Base:
    """What the search asks of its base agent (one adapter per kind of agent)."""

    has_value = False

    def __init__(self, agent: Any, rules: RuleSet) -> None:
        self.agent = agent
        self.rules = rules

    def probabilities(self, views: list[PlayerView]) -> np.ndarray:
        """The base's action distributions at ``views``, ``(len, A)``."""
        batch = getattr(self.agent, "action_probabilities_batch", None)
        if batch is not None:
            return np.asarray(batch(views), dtype=np.float64)
        return np.stack([_as_numpy(self.agent.action_probabilities(v)) for v in views])

    def bid_log_probabilities(
        self, obs: torch.Tensor, mask: torch.Tensor, actions: torch.Tensor, views: Any
    ) -> torch.Tensor:
        """``log π(action | position)`` of many positions (``views()`` builds them)."""
        probs = self.probabilities(views())
        picked = probs[np.arange(len(probs)), actions.numpy()]
        return torch.from_numpy(np.log(np.maximum(picked, 1e-300)))

    def reseed(self, seed: int) -> None:
        """Seeds the rollouts' own draws."""

    def rollout(self, env: BatchedEnv, obs, mask, rows, generator) -> torch.Tensor:
        """Actions of the acting players of ``env``'s games ``rows``."""
        raise NotImplementedError

    def values(self, obs: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """The value head at ``obs`` (bases with one)."""
        raise NotImplementedError


class _NetworkBase(_Base):
    """A checkpoint: its network decides rollouts, weighs hands and scores positions."""

    has_value = True

    def __init__(self, agent: Any, rules: RuleSet) -> None:
        super().__init__(agent, rules)
        self.model = agent.model

    def probabilities(self, views: list[PlayerView]) -> np.ndarray:
        obs = torch.from_numpy(np.stack([v.observation for v in views]))
        mask = torch.from_numpy(np.stack([v.mask > 0 for v in views]))
        with torch.no_grad():
            return torch.softmax(self.model(obs, mask)[0].double(), -1).numpy()

    def bid_log_probabilities(self, obs, mask, actions, views) -> torch.Tensor:
        with torch.no_grad():
            logits, _ = self.model(obs, mask)
            return torch.log_softmax(logits.double(), -1).gather(1, actions[:, None])[:, 0]

    def rollout(self, env, obs, mask, rows, generator) -> torch.Tensor:
        from liars_env.agents.policy import sample_actions

        logits, _ = self.model(obs[rows], mask[rows])
        return sample_actions(logits, generator)

    def values(self, obs, mask) -> torch.Tensor:
        return self.model(obs, mask)[1].double()


class _BotBase(_Base):
    """A bot with a batched twin (:mod:`liars_env.agents.batched`) for the rollouts."""

    def __init__(self, agent: Any, rules: RuleSet, spec: str) -> None:
        super().__init__(agent, rules)
        self.spec = spec
        self._bots: dict[int, Any] = {}
        self._seed = 0

    def reseed(self, seed: int) -> None:
        self._seed = seed
        for bot in self._bots.values():
            bot.generator.manual_seed(seed)

    def rollout(self, env, obs, mask, rows, generator) -> torch.Tensor:
        bot = self._bots.get(id(env))
        if bot is None or bot.env is not env:
            bot = self._bots[id(env)] = make_batched_bot(env, self.spec, self._seed)
        return bot.act(mask, rows, obs)


class _ScalarBase(_Base):
    """Any agent with ``action_probabilities``: rollouts ask it game by game (slow)."""

    def __init__(self, agent: Any, rules: RuleSet) -> None:
        super().__init__(agent, rules)
        self.game = LiarsDiceGame(rules)
        self.layout = ObservationLayout(rules)

    def rollout(self, env, obs, mask, rows, generator) -> torch.Tensor:
        states = env.states(rows)
        probs = self.probabilities([view_of(self.game, self.layout, s) for s in states])
        u = torch.rand(len(states), generator=generator, dtype=torch.float64).numpy()
        cumulative = np.cumsum(probs, 1)
        picks = (cumulative < (u * cumulative[:, -1])[:, None]).sum(1)
        return torch.from_numpy(np.minimum(picks, probs.shape[1] - 1))


def _as_numpy(probs: Any) -> np.ndarray:
    if isinstance(probs, torch.Tensor):
        return probs.detach().double().cpu().numpy()
    return np.asarray(probs, dtype=np.float64)


def _is_batched_bot(spec: str) -> bool:
    try:
        check_batched_bot_spec(spec)
    except ValueError:
        return False
    return True
