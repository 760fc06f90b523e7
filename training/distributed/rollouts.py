"""Rollouts on Ray: ``workers`` actors, each playing its share of the games.

:class:`RolloutWorker` is the actor: a :class:`~liars_train.ppo.rollout.Rollout` over its
share of ``num_envs`` games (the batched engine on one CPU), a copy of the policy and of
the league, and its own generators. :class:`RemoteRollouts` is the driver's side, with the
same ``start``/``collect`` as the in-process rollout, so the trainer's loop does not change:

- **weights** go into Ray's object store once per update (``ray.put``) and every actor
  reads them from there;
- **the league** travels as deltas (:mod:`~liars_train.distributed.league_sync`), and each
  actor's game results come back and merge into the driver's PFSP statistics;
- **generators**: actor ``i`` seeds its games, league draws and samples from
  ``(seed, i)`` (actor 0 from ``seed`` itself). Without ``overlap`` actor 0 also carries
  the learner's own sampling generator through each collection and back (on a CPU
  learner), so ``workers: 1`` plays exactly the run of ``workers: 0``;
- **overlap**: the actors collect batch k+1 with the weights of update k while the
  learner updates on batch k (IMPALA's and Sebulba's one-update lag); the batch keeps
  the log-probabilities of the weights that played it, which the update's importance
  weights are taken against (``lag_correction``, :func:`~liars_train.ppo.update.ppo_update`);
- **faults**: an actor that dies (``kill -9``, out of memory) is started again from the
  driver's league of now with a generator of its own, and its share of the batch is
  collected again, so the run still counts exactly ``num_envs × num_steps`` decisions an
  update. Each restart is logged.
"""

from __future__ import annotations

import dataclasses
import json
import os
import time
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from liars_env.agents.batched import make_batched_bot
from liars_env.agents.policy import PolicyNet
from liars_env.batched import BatchedEnv
from liars_train.distributed.cluster import connect, require_ray
from liars_train.distributed.league_sync import (
    Delta,
    LeagueMirror,
    apply_delta,
    league_results,
    member_from_payload,
    merge_results,
    state_dict_cpu,
)
from liars_train.league import League
from liars_train.ppo.rollout import Batch, Rollout
from liars_train.ppo.settings import Args, game_rules, network_shape
from liars_train.reports import tqdm_write


def shares(num_envs: int, workers: int) -> list[int]:
    """Games of each actor: ``num_envs`` split as evenly as can be.

    Example:
        >>> shares(10, 3)
        [4, 3, 3]
    """
    base, extra = divmod(num_envs, workers)
    return [base + (i < extra) for i in range(workers)]


def actor_seed(seed: int, index: int, generation: int = 0) -> int:
    """The seed of actor ``index`` (``generation``: how often it was restarted).

    Actor 0 of the first generation plays with the run's own seed; the others draw
    theirs from ``(seed, index, generation)``.

    Example:
        >>> actor_seed(5, 0), actor_seed(5, 1) == actor_seed(5, 1), actor_seed(5, 1) != 5
        (5, True, True)
    """
    if index == 0 and generation == 0:
        return seed
    return int(np.random.SeedSequence([seed, index, generation]).generate_state(1)[0])


class RolloutWorker:
    """One rollout actor's state and calls (see the module docstring).

    Args:
        settings: The run's :class:`~liars_train.ppo.settings.Args` as a dict.
        num_games: Its share of the games.
        seed: Its seed (:func:`actor_seed`).
        league: The driver's league as payloads (:meth:`LeagueMirror.full`).
        state: Generator states to continue from (a resumed run's), or ``None``.
    """

    def __init__(
        self,
        settings: dict[str, Any],
        num_games: int,
        seed: int,
        league: list[dict[str, Any]],
        state: dict[str, Any] | None = None,
    ) -> None:
        args = Args(**settings)
        torch.set_num_threads(args.torch_threads or 1)
        rules = game_rules(args)
        env = BatchedEnv(
            rules,
            num_envs=num_games,
            device="cpu",
            seed=seed,
            check_actions=False,
            threads=args.torch_threads or None,
            backend=args.engine_backend,
        )
        shape = network_shape(args, env)
        self.policy = PolicyNet(shape, rules)
        self.np_rng = np.random.default_rng(seed)
        generator = torch.Generator().manual_seed(seed)
        opponents = League(
            env,
            self.np_rng,
            generator,
            args.self_play,
            args.pfsp_power,
            args.pool_size,
            seed=seed,
            group_shares=args.group_shares,
        )
        teacher = make_batched_bot(env, args.teacher, seed=seed + 7) if args.teacher else None
        opponents.members = [member_from_payload(p, rules) for p in league]
        opponents.assign(np.arange(num_games))
        self.rollout = Rollout(env, opponents, generator, args.dice_shaping, teacher)
        if state is not None:
            generator.set_state(state["generator"])
            env.generator.set_state(state["env_generator"])
            self.np_rng.bit_generator.state = state["np_rng"]

    def collect(
        self,
        weights: dict[str, torch.Tensor],
        delta: Delta,
        num_steps: int,
        teaching: float,
        generator: torch.Tensor | None = None,
    ) -> dict[str, Any]:
        """Plays ``num_steps`` learner decisions in each of its games with ``weights``.

        Args:
            weights: The policy's weights (from the object store).
            delta: The league's changes since the last call.
            num_steps: Learner decisions per game.
            teaching: The imitation weight (the teacher's moves are recorded if > 0).
            generator: A sampling generator's state to play with (the learner's, carried
                through and handed back), or ``None`` for the actor's own.

        Returns:
            ``batch``, the league's ``results``, ``generator`` (its state after, if one
            was given) and the ``seconds`` it took.
        """
        start = time.perf_counter()
        self.policy.load_state_dict(weights)
        apply_delta(self.rollout.league, delta)
        if generator is not None:
            self.rollout.generator.set_state(generator)
        batch = self.rollout.collect(self.policy, num_steps, teaching)
        return {
            "batch": batch,
            "results": league_results(self.rollout.league),
            "generator": None if generator is None else self.rollout.generator.get_state(),
            "seconds": time.perf_counter() - start,
        }

    def state(self) -> dict[str, Any]:
        """Its generators' states (for a checkpoint)."""
        return {
            "generator": self.rollout.generator.get_state(),
            "env_generator": self.rollout.env.generator.get_state(),
            "np_rng": self.np_rng.bit_generator.state,
        }

    def pid(self) -> int:
        """The actor's process id."""
        return os.getpid()


@dataclass
class _Launch:
    """One collection in flight: what each actor was sent, to send it again."""

    refs: list[Any]
    weights: Any
    num_steps: int
    teaching: float
    generator: torch.Tensor | None
    before: dict[str, tuple[float, float]]


class RemoteRollouts:
    """The driver's side of the rollout actors (see the module docstring).

    Args:
        args: The run's settings (``workers``, ``overlap``, ``num_envs``, ``seed``, ...).
        league: The driver's league (changed by the trainer, merged into here).
        generator: The learner's sampling generator (carried by actor 0 without overlap).
        device: Where the learner's batch goes.

    Raises:
        ValueError: Ray missing or unreachable, or fewer CPUs than ``workers``.
    """

    def __init__(
        self, args: Args, league: League, generator: torch.Generator, device: torch.device
    ) -> None:
        self.ray = require_ray(args.workers)
        self.started_ray = connect(args.workers)
        self.args, self.league, self.generator, self.device = args, league, generator, device
        self.shares = shares(args.num_envs, args.workers)
        self.share_generator = not args.overlap and generator.device.type == "cpu"
        self.actors: list[Any] = []
        self.generations = [0] * args.workers
        self.restarts = 0
        self.saved: list[dict[str, Any]] | None = None
        self.pending: _Launch | None = None
        self.rates: list[float] = []
        self.mirror = LeagueMirror(league)
        self.remote = self.ray.remote(num_cpus=1, max_restarts=0)(RolloutWorker)
        self.lag = 1 if args.overlap else 0

    # ------------------------------------------------------------ the rollout's interface
    def start(self, policy: PolicyNet) -> None:
        """Starts the actors (each with the league of now; new games in every slot)."""
        self.close_actors()
        self.mirror = LeagueMirror(self.league)
        saved = self.saved if self.saved and len(self.saved) == len(self.shares) else None
        self.actors = [
            self._spawn(i, None if saved is None else saved[i]) for i in range(len(self.shares))
        ]

    def collect(self, policy: PolicyNet, num_steps: int, teaching: float = 0.0) -> Batch:
        """A batch of every actor's games, joined; with ``overlap`` the one collected last.

        Without overlap the actors play with ``policy``'s weights of now; with it, the
        batch returned was played with the weights of the previous call, and the next
        one is launched with those of now before this returns.
        """
        if not self.args.overlap:
            return self._finish(self._launch(policy, num_steps, teaching))
        if self.pending is None:
            self.pending = self._launch(policy, num_steps, teaching)
        batch = self._finish(self.pending)
        self.pending = self._launch(policy, num_steps, teaching)
        return batch

    def stats(self) -> dict[str, float]:
        """Per-actor decisions per second of the last collection, and the restarts."""
        out = {f"actor{i}_steps_per_second": r for i, r in enumerate(self.rates)}
        out["actor_restarts"] = float(self.restarts)
        return out

    def describe(self) -> str:
        """Each actor's share of the games and its decisions/s, for the progress bar."""
        if not self.rates:
            return f"actors: {'+'.join(map(str, self.shares))} games"
        pairs = zip(self.shares, self.rates, strict=True)
        rates = " ".join(f"{g}g {r / 1000:.1f}k/s" for g, r in pairs)
        return f"actors: {rates}" + (f" ({self.restarts} restarts)" if self.restarts else "")

    def saved_state(self) -> dict[str, Any]:
        """Actor 0's games' and league's generators, and every actor's under ``workers``.

        Empty when an actor died since its last collection (it has no state to save;
        the trainer's own generators are saved then).
        """
        actors = self.states() if self.actors else []
        if not actors or None in actors:
            return {}
        out: dict[str, Any] = {
            "env_generator": actors[0]["env_generator"],
            "np_rng": actors[0]["np_rng"],
        }
        out["workers"] = [{**a, "np_rng": json.dumps(a["np_rng"])} for a in actors]
        return out

    def restore(self, state: dict[str, Any]) -> None:
        """The actors of a resumed run start from the generators saved under ``workers``.

        With another number of actors than was saved they start with fresh ones.
        """
        saved = state.get("workers", [])
        if len(saved) != self.args.workers:
            print(f"workers: {self.args.workers} actors start with fresh generators")
        else:
            self.saved = [{**a, "np_rng": json.loads(a["np_rng"])} for a in saved]

    def states(self) -> list[dict[str, Any] | None]:
        """Every actor's generator states (waits for a collection in flight).

        ``None`` for an actor that died since its last collection (it is started again
        when its share is next collected).
        """
        out = []
        for actor in self.actors:
            try:
                out.append(self.ray.get(actor.state.remote()))
            except self.ray.exceptions.RayActorError:
                out.append(None)
        return out

    def pids(self) -> list[int]:
        """The actors' process ids."""
        return self.ray.get([actor.pid.remote() for actor in self.actors])

    def close(self) -> None:
        """Stops the actors, and Ray if this run started it."""
        self.close_actors()
        if self.started_ray and self.ray.is_initialized():
            self.ray.shutdown()
            self.started_ray = False

    # ------------------------------------------------------------ inside
    def _spawn(self, index: int, state: dict[str, Any] | None = None):
        seed = actor_seed(self.args.seed, index, self.generations[index])
        return self.remote.remote(
            dataclasses.asdict(self.args), self.shares[index], seed, self.mirror.full(), state
        )

    def _launch(self, policy: PolicyNet, num_steps: int, teaching: float) -> _Launch:
        weights = self.ray.put(state_dict_cpu(policy))
        delta = self.mirror.delta()
        generator = self.generator.get_state() if self.share_generator else None
        refs = [
            actor.collect.remote(weights, delta, num_steps, teaching, generator if i == 0 else None)
            for i, actor in enumerate(self.actors)
        ]
        return _Launch(refs, weights, num_steps, teaching, generator, self.mirror.stats())

    def _finish(self, launch: _Launch) -> Batch:
        results = [self._result(i, launch) for i in range(len(self.actors))]
        batch = Batch.join([r["batch"] for r in results]).to(self.device)
        merge_results(self.league, launch.before, [r["results"] for r in results])
        if results[0]["generator"] is not None:
            self.generator.set_state(results[0]["generator"])
        seconds = [r["seconds"] for r in results]
        self.rates = [b * launch.num_steps / t for b, t in zip(self.shares, seconds, strict=True)]
        return batch

    def _result(self, index: int, launch: _Launch) -> dict[str, Any]:
        """Actor ``index``'s result; a dead actor is started again and collects again."""
        ref = launch.refs[index]
        while True:
            try:
                return self.ray.get(ref)
            except self.ray.exceptions.RayActorError as exc:
                self.restarts += 1
                self.generations[index] += 1
                tqdm_write(
                    f"rollout actor {index} died ({type(exc).__name__}); started again, "
                    f"collecting its {self.shares[index]} games' share again "
                    f"(restart {self.restarts})"
                )
                self.ray.kill(self.actors[index], no_restart=True)
                self.actors[index] = self._spawn(index)
                generator = launch.generator if index == 0 else None
                ref = self.actors[index].collect.remote(
                    launch.weights, Delta(), launch.num_steps, launch.teaching, generator
                )

    def close_actors(self) -> None:
        """Stops the actors (a collection in flight is dropped)."""
        for actor in self.actors:
            self.ray.kill(actor, no_restart=True)
        self.actors, self.pending = [], None
