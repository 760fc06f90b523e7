"""Rollouts: the learner's games against the league, collected into one :class:`Batch`.

A :class:`Rollout` owns a batch of games (a :class:`~liars_env.batched.BatchedEnv`), the
league that fills their other seats and a generator for the actions it samples. Given a
policy, :meth:`Rollout.collect` plays ``num_steps`` learner decisions in every game:
between two of the learner's decisions the opponents move (``_advance``), rewards and
finished games are booked (``_settle``, which also feeds the league's PFSP results and the
dice-shaping potential). Everything it needs comes as arguments, so the same object runs
in the trainer's process or inside a Ray actor (:mod:`liars_train.distributed`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

from liars_env.agents.policy import CheckpointError, PolicyNet, sample_actions
from liars_env.batched import BatchedEnv
from liars_train.league import League, Member, member_from_spec
from liars_train.ppo.settings import Args


def league_for(
    args: Args,
    env: BatchedEnv,
    rng: np.random.Generator,
    generator: torch.Generator,
    opponents: list[Member] | None = None,
) -> League:
    """The league of a run's settings on ``env``: ``league``'s members, then ``opponents``.

    Every game slot gets its first opponent. A ``checkpoint:`` entry of ``eval_opponents``
    is loaded once here, so that a bad one fails now, not hours later.

    Raises:
        CheckpointError: a checkpoint member or evaluation opponent that does not load.
    """
    league = League(
        env,
        rng,
        generator,
        args.self_play,
        args.pfsp_power,
        args.pool_size,
        seed=args.seed,
        group_shares=args.group_shares,
    )
    for spec in args.league:
        league.add(member_from_spec(spec, env.rules, env.device))
    for spec in args.eval_opponents:
        if spec.startswith("checkpoint:") and spec not in args.league:
            try:
                member_from_spec(spec, env.rules, env.device)
            except CheckpointError as exc:
                raise CheckpointError(f"eval_opponents: {exc}") from None
    for member in opponents or []:
        league.add(member)
    league.assign(np.arange(env.num_envs))
    return league


@dataclass
class Batch:
    """What the learner saw and did over one rollout, ``(num_steps, games, ...)`` each.

    Attributes:
        obs: Observations, float.
        features: The network's input features of each observation (width 0 without).
        mask: Legal actions, bool.
        actions: The actions played.
        logp: Their log-probabilities under the policy that played them (the behaviour
            policy: PPO's ratio is taken against it).
        values: The value head's estimates.
        rewards: Rewards (outcome and shaping) earned after each decision.
        dones: 1.0 where the learner's game ended after the decision.
        teacher: The teacher's move at each decision (zeros when not kickstarting).
        next_obs: The observation after the last decision (to bootstrap the value).
        next_mask: Its legal actions.
        episode_returns: Returns of the games that ended during the rollout.
    """

    obs: torch.Tensor
    features: torch.Tensor
    mask: torch.Tensor
    actions: torch.Tensor
    logp: torch.Tensor
    values: torch.Tensor
    rewards: torch.Tensor
    dones: torch.Tensor
    teacher: torch.Tensor
    next_obs: torch.Tensor
    next_mask: torch.Tensor
    episode_returns: list[float] = field(default_factory=list)

    @classmethod
    def empty(
        cls,
        num_steps: int,
        env: BatchedEnv,
        features_size: int,
    ) -> Batch:
        """A zeroed batch for ``num_steps`` decisions in each of ``env``'s games."""
        t, b, device = num_steps, env.num_envs, env.device

        def zeros(*shape, dtype=torch.float32):
            return torch.zeros((t, b, *shape), dtype=dtype, device=device)

        return cls(
            obs=zeros(env.observation_size),
            features=zeros(features_size),
            mask=zeros(env.num_actions, dtype=torch.bool),
            actions=zeros(dtype=torch.long),
            logp=zeros(),
            values=zeros(),
            rewards=zeros(),
            dones=zeros(),
            teacher=zeros(dtype=torch.long),
            next_obs=torch.zeros((b, env.observation_size), device=device),
            next_mask=torch.zeros((b, env.num_actions), dtype=torch.bool, device=device),
        )

    @property
    def size(self) -> int:
        """Learner decisions in the batch."""
        return self.actions.numel()

    def to(self, device: torch.device | str) -> Batch:
        """This batch on ``device``."""
        moved = {
            name: value.to(device) if isinstance(value, torch.Tensor) else value
            for name, value in vars(self).items()
        }
        return Batch(**moved)

    @classmethod
    def join(cls, batches: list[Batch]) -> Batch:
        """One batch of the games of ``batches`` side by side (the games axis, in order).

        Example:
            >>> from liars_env.rules import RuleSet
            >>> env = BatchedEnv(RuleSet.preset("perudo", num_players=2), num_envs=3)
            >>> Batch.join([Batch.empty(4, env, 0), Batch.empty(4, env, 0)]).obs.shape[:2]
            torch.Size([4, 6])
        """
        if len(batches) == 1:
            return batches[0]
        joined = {}
        for name in vars(batches[0]):
            if name == "episode_returns":
                joined[name] = [r for b in batches for r in b.episode_returns]
            else:
                axis = 0 if name.startswith("next_") else 1
                joined[name] = torch.cat([getattr(b, name) for b in batches], axis)
        return cls(**joined)


class Rollout:
    """The learner's games against the league (see the module docstring).

    Args:
        env: The games; the learner plays seat ``game % num_players`` in game ``game``.
        league: Fills the other seats (bound to ``env``).
        generator: Samples the learner's actions.
        dice_shaping: Weight of the potential-based shaping on dice (0: off).
        teacher: A batched bot on ``env`` whose moves are recorded for kickstarting.
    """

    def __init__(
        self,
        env: BatchedEnv,
        league: League,
        generator: torch.Generator,
        dice_shaping: float = 0.0,
        teacher=None,
    ) -> None:
        self.env, self.league, self.generator = env, league, generator
        self.dice_shaping, self.teacher = dice_shaping, teacher
        self.learner = torch.arange(env.num_envs, device=env.device) % env.num_players
        self.obs: torch.Tensor | None = None
        self.mask: torch.Tensor | None = None
        self.potential = torch.zeros(env.num_envs, device=env.device)
        self.ep_return = torch.zeros(env.num_envs, device=env.device)

    def start(self, policy: PolicyNet) -> None:
        """New games in every slot, played on until the learner is to act in each."""
        env = self.env
        obs, mask = env.reset()
        self.potential = torch.zeros(env.num_envs, device=env.device)
        self.ep_return = torch.zeros(env.num_envs, device=env.device)
        rewards = torch.zeros(env.num_envs, device=env.device)
        dones = torch.zeros(env.num_envs, dtype=torch.bool, device=env.device)
        self.obs, self.mask = self._advance(policy, obs, mask, rewards, dones)

    def collect(self, policy: PolicyNet, num_steps: int, teaching: float = 0.0) -> Batch:
        """Plays ``num_steps`` learner decisions in every game with ``policy``.

        Args:
            policy: The learner's network (it also plays the self-play games).
            num_steps: Learner decisions per game.
            teaching: The imitation weight now; if non-zero the teacher's moves are
                recorded.

        Returns:
            The batch (the games carry on from where it ends at the next call).
        """
        if self.obs is None:
            self.start(policy)
        env = self.env
        batch = Batch.empty(num_steps, env, policy.features_size)
        every_row = torch.arange(env.num_envs, device=env.device)
        obs, mask = self.obs, self.mask
        for step in range(num_steps):
            batch.obs[step], batch.mask[step] = obs, mask
            if teaching:
                batch.teacher[step] = self.teacher.act(mask, every_row, obs)
            with torch.no_grad():
                features = policy.input_features(obs)
                if features is not None:
                    batch.features[step] = features
                logits, value = policy(obs, mask, features)
                action = sample_actions(logits, self.generator)
                batch.logp[step] = (
                    torch.log_softmax(logits, -1).gather(1, action[:, None]).squeeze(1)
                )
            batch.actions[step], batch.values[step] = action, value
            rewards_acc = torch.zeros(env.num_envs, device=env.device)
            dones_acc = torch.zeros(env.num_envs, dtype=torch.bool, device=env.device)
            obs, mask, rewards, dones, _ = env.step(action)
            obs, mask = self._settle(obs, mask, rewards, dones, rewards_acc, dones_acc)
            obs, mask = self._advance(policy, obs, mask, rewards_acc, dones_acc)
            batch.rewards[step], batch.dones[step] = rewards_acc, dones_acc.float()
            self.ep_return += rewards_acc
            if bool(dones_acc.any()):
                batch.episode_returns += self.ep_return[dones_acc].tolist()
                self.ep_return[dones_acc] = 0.0
        self.obs, self.mask = obs, mask
        batch.next_obs, batch.next_mask = obs, mask
        return batch

    lag = 0
    """Each batch is played by the weights of now (the Ray rollouts with overlap: 1)."""

    def stats(self) -> dict[str, float]:
        """Figures for TensorBoard beside the update's (none in this process)."""
        return {}

    def saved_state(self) -> dict[str, Any]:
        """Nothing beside the trainer's own generators (this source plays its games)."""
        return {}

    def restore(self, state: dict[str, Any]) -> None:
        """Nothing to restore: the trainer puts back its own games' generators."""

    def describe(self) -> str:
        """A note for the progress bar (none in this process)."""
        return ""

    def close(self) -> None:
        """Nothing to stop in this process (the Ray rollouts stop their actors)."""

    def _advance(self, policy, obs, mask, rewards_acc, dones_acc):
        """Steps the opponents until the learner is to act in every game.

        Rewards the learner earns meanwhile go to ``rewards_acc``; a game that ends for
        the learner (game over, or the learner out) sets ``dones_acc`` and the slot gets
        a new game (and a new opponent).
        """
        env, learner = self.env, self.learner
        for _ in range(64 * env.num_players):
            waiting = env.current_player != learner
            if not bool(waiting.any()):
                return obs, mask
            rows = waiting.nonzero().squeeze(1).cpu().numpy()
            actions = self.league.act(policy, obs, mask, rows)
            obs, mask, rewards, dones, _ = env.step(actions, active=waiting)
            obs, mask = self._settle(obs, mask, rewards, dones, rewards_acc, dones_acc)
        raise RuntimeError("opponents did not hand the turn back to the learner")

    def _settle(self, obs, mask, rewards, dones, rewards_acc, dones_acc):
        """Books the learner's rewards and results; ends games the learner has left."""
        env, learner = self.env, self.learner
        mine = rewards.gather(1, learner[:, None]).squeeze(1)
        rewards_acc += mine
        out = (env.dice_left.gather(1, learner[:, None]).squeeze(1) == 0) & ~dones
        finished = dones | out
        dones_acc |= finished
        if bool(finished.any()):
            if bool(out.any()):
                env.reset_games(out)
                obs, mask = env.observe(), env.legal_mask()
            slots = finished.nonzero().squeeze(1)
            self.league.record(slots.cpu().numpy(), (mine[slots] > 0).cpu().numpy())
            self.league.assign(slots.cpu().numpy())
        if self.dice_shaping:
            # potential-based shaping: Φ is 0 at every game's start (equal dice) and, by
            # convention, at its end (the slot's new game), so episode returns and the
            # optimal policy are unchanged (Ng, Harada & Russell, 1999)
            potential = self._potential()
            rewards_acc += potential - self.potential
            self.potential = potential
        return obs, mask

    def _potential(self) -> torch.Tensor:
        """Φ = dice_shaping · (own dice − the others' mean dice) ÷ D, per game."""
        dice = self.env.dice_left.float()
        own = dice.gather(1, self.learner[:, None]).squeeze(1)
        others = (dice.sum(1) - own) / (self.env.num_players - 1)
        return self.dice_shaping * (own - others) / self.env.rules.dice_per_player
