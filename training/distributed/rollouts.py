"""Rollouts on Ray: ``workers`` shares of the games, played by the actors that are there.

The ``num_envs`` games are cut into ``workers`` fixed **shares** (:func:`shares`); share
``i`` has its own games, league copy and generators, and its home is actor ``i``.
:class:`RolloutWorker` hosts shares (normally one) in a Ray actor of one CPU, or in the
driver itself; :class:`RemoteRollouts` is the driver's side, a
:class:`~liars_train.ppo.roles.RolloutSource`:

- **weights** go into Ray's object store once per update (``ray.put``) and every actor
  reads them from there;
- **the league** travels as deltas (:mod:`~liars_train.distributed.league_sync`), and
  each share's game results come back and merge into the driver's PFSP statistics;
- **generators**: share ``i`` seeds its games, league draws and samples from
  :func:`actor_seed` (share 0 from ``seed`` itself). Without ``overlap`` share 0 also
  carries the learner's own sampling generator through each collection and back (on a
  CPU learner), so ``workers: 1`` plays exactly the run of ``workers: 0``;
- **overlap**: the actors collect batch k+1 with the weights of update k while the
  learner updates on batch k (IMPALA's one-update lag); the batch keeps the
  log-probabilities of the weights that played it (``lag_correction``);
- **whole batches** (``rollout_split: batches``): each share holds ``num_envs`` games
  and the shares play whole batches in turn, ``workers`` of them in flight (a lag of
  ``workers`` updates). Each share then has its own view of the league (its own
  :class:`LeagueMirror`), and its game results are added to the driver's;
- **elastic membership**: an actor that dies (``kill -9``, out of memory, its node
  lost) is started again in its place; if it cannot be placed within
  ``placement_timeout`` seconds its shares move to the actors that are left (fewest
  games first), or to the driver when none is, and the lost shares of the batch are
  collected again there, so every update still counts exactly ``num_envs × num_steps``
  decisions. At each update the driver looks for capacity again (every
  :data:`REGROW_EVERY_S` seconds): an actor placed in an empty slot takes its home
  share back. A share that moves starts new games with a new generator (its
  *generation* goes up). Every wait on Ray has a timeout (``placement_timeout``,
  ``ray_timeout``); every change of membership is a log line (and a line of
  ``runs/<run>/actors.log``).

Reproducibility: with the same seed and the same capacity changes at the same updates,
a run writes the same checkpoints (without ``overlap``; with it, the evaluations and the
exploiter are booked when they finish). What a capacity change changes: the moved
shares' games start afresh from generators of their next generation, and a share played
by the driver or beside another share on one actor is played more slowly, never
differently.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import socket
import time
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch

from liars_env.agents.batched import make_batched_bot
from liars_env.agents.policy import PolicyNet
from liars_env.batched import BatchedEnv
from liars_train.distributed.cluster import connect, crowding_note, require_ray
from liars_train.distributed.league_sync import (
    Delta,
    LeagueMirror,
    add_booked,
    apply_delta,
    booked_since,
    league_booked,
    league_results,
    member_from_payload,
    merge_results,
    state_dict_cpu,
)
from liars_train.league import League
from liars_train.ppo.rollout import Batch, Rollout
from liars_train.ppo.settings import Args, game_rules, network_shape
from liars_train.reports import tqdm_write

REGROW_EVERY_S = 5.0
"""How often (seconds, checked at update boundaries) the driver looks for capacity to
start actors again in empty slots."""

DRIVER = -1
"""The host number of the driver (a share it plays has no actor)."""


def shares(num_envs: int, workers: int) -> list[int]:
    """Games of each share: ``num_envs`` split as evenly as can be.

    Example:
        >>> shares(10, 3)
        [4, 3, 3]
    """
    base, extra = divmod(num_envs, workers)
    return [base + (i < extra) for i in range(workers)]


def actor_seed(seed: int, index: int, generation: int = 0) -> int:
    """The seed of share ``index`` (``generation``: how often its games started afresh).

    Share 0 of the first generation plays with the run's own seed; the others draw
    theirs from ``(seed, index, generation)``.

    Example:
        >>> actor_seed(5, 0), actor_seed(5, 1) == actor_seed(5, 1), actor_seed(5, 1) != 5
        (5, True, True)
    """
    if index == 0 and generation == 0:
        return seed
    return int(np.random.SeedSequence([seed, index, generation]).generate_state(1)[0])


@dataclass
class _Share:
    """One share's games, league copy and generators (inside a :class:`RolloutWorker`)."""

    rollout: Rollout
    np_rng: np.random.Generator


class RolloutWorker:
    """Hosts shares of the games: a Ray actor's state and calls, or the driver's own.

    Args:
        settings: The run's :class:`~liars_train.ppo.settings.Args` as a dict.
        own_process: Whether it runs in a process of its own (a Ray actor: it sets the
            process's torch threads); the driver's keeps the learner's setting.
    """

    def __init__(self, settings: dict[str, Any], own_process: bool = True) -> None:
        self.args = Args(**settings)
        if own_process:
            torch.set_num_threads(self.args.torch_threads or 1)
        self.rules = game_rules(self.args)
        self.units: dict[int, _Share] = {}
        self.policy: PolicyNet | None = None

    def adopt(
        self,
        index: int,
        num_games: int,
        seed: int,
        league: list[dict[str, Any]],
        state: dict[str, Any] | None = None,
    ) -> None:
        """Takes on share ``index``: ``num_games`` new games seeded with ``seed``.

        Args:
            index: The share's number.
            num_games: Its games.
            seed: Its seed (:func:`actor_seed`).
            league: The driver's league as payloads (:meth:`LeagueMirror.full`).
            state: Generator states to continue from (a resumed run's), or ``None``.
        """
        args, rules = self.args, self.rules
        env = BatchedEnv(
            rules,
            num_envs=num_games,
            device="cpu",
            seed=seed,
            check_actions=False,
            threads=args.torch_threads or None,
            backend=args.engine_backend,
        )
        if self.policy is None:
            self.policy = PolicyNet(network_shape(args, env), rules)
        np_rng = np.random.default_rng(seed)
        generator = torch.Generator().manual_seed(seed)
        opponents = League(
            env,
            np_rng,
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
        rollout = Rollout(env, opponents, generator, args.dice_shaping, teacher)
        if state is not None:
            generator.set_state(state["generator"])
            env.generator.set_state(state["env_generator"])
            np_rng.bit_generator.state = state["np_rng"]
        self.units[index] = _Share(rollout, np_rng)

    def drop(self, index: int) -> None:
        """Gives share ``index`` up (it moves to another host)."""
        self.units.pop(index, None)

    def collect(
        self,
        weights: dict[str, torch.Tensor],
        delta: Delta,
        num_steps: int,
        teaching: float,
        generator: torch.Tensor | None = None,
        only: list[int] | None = None,
    ) -> dict[str, Any]:
        """Plays ``num_steps`` learner decisions in each game of its shares with ``weights``.

        Args:
            weights: The policy's weights (from the object store).
            delta: The league's changes since the last call.
            num_steps: Learner decisions per game.
            teaching: The imitation weight (the teacher's moves are recorded if > 0).
            generator: A sampling generator's state for share 0 to play with (the
                learner's, carried through and handed back), or ``None``.
            only: The shares to play (default: all it hosts).

        Returns:
            ``shares``: per share, its ``batch``, the league's ``results`` and
            ``generator`` (its state after, if one was given); the ``seconds`` it took
            and the process's ``cpu_seconds`` in them (their ratio is the share of a
            core it got: well under 1 when it shares its core).
        """
        start, cpu = time.perf_counter(), time.process_time()
        self.policy.load_state_dict(weights)
        out = {}
        for index in sorted(self.units if only is None else only):
            unit = self.units[index]
            apply_delta(unit.rollout.league, delta)
            carried = generator if index == 0 else None
            if carried is not None:
                unit.rollout.generator.set_state(carried)
            booked = league_booked(unit.rollout.league)
            batch = unit.rollout.collect(self.policy, num_steps, teaching)
            out[index] = {
                "batch": batch,
                "results": league_results(unit.rollout.league),
                "booked": booked_since(unit.rollout.league, booked),
                "generator": None if carried is None else unit.rollout.generator.get_state(),
            }
        return {
            "shares": out,
            "seconds": time.perf_counter() - start,
            "cpu_seconds": time.process_time() - cpu,
        }

    def state(self) -> dict[int, dict[str, Any]]:
        """Each share's generator states (for a checkpoint)."""
        return {
            index: {
                "generator": unit.rollout.generator.get_state(),
                "env_generator": unit.rollout.env.generator.get_state(),
                "np_rng": unit.np_rng.bit_generator.state,
            }
            for index, unit in self.units.items()
        }

    def ready(self) -> dict[str, Any]:
        """The host's process id and node (answered once it is placed and set up).

        The node is Ray's node id (its first 8 characters) and address, as
        ``ray status`` and the Ray logs name it; the host name outside Ray.
        """
        try:
            import ray

            context = ray.get_runtime_context()
            node = f"node {context.get_node_id()[:8]} ({ray.util.get_node_ip_address()})"
        except Exception:  # noqa: BLE001 - not in a Ray worker
            node = socket.gethostname()
        return {"pid": os.getpid(), "node": node}

    def pid(self) -> int:
        """The actor's process id."""
        return os.getpid()


@dataclass
class _Actor:
    """A placed actor, the shares it plays, and where."""

    handle: Any
    shares: list[int]
    node: str = ""
    pid: int = 0


@dataclass
class _Launch:
    """One collection in flight: what each host was sent, to send it again."""

    refs: dict[int, Any]
    handles: dict[int, Any]
    held: dict[int, list[int]]
    weights: Any
    local_weights: dict[str, torch.Tensor]
    delta: Delta
    num_steps: int
    teaching: float
    generator: torch.Tensor | None
    playing: list[int]
    seconds: dict[int, float] = field(default_factory=dict)
    cpu_seconds: dict[int, float] = field(default_factory=dict)


class RemoteRollouts:
    """The driver's side of the rollout actors (see the module docstring).

    Args:
        args: The run's settings (``workers``, ``overlap``, ``num_envs``, ``seed``,
            ``placement_timeout``, ``ray_timeout``).
        league: The driver's league (changed by the trainer, merged into here).
        generator: The learner's sampling generator (carried by share 0 without overlap).
        device: Where the learner's batch goes.

    Raises:
        ValueError: Ray missing or unreachable, or fewer CPUs than ``workers``.
    """

    def __init__(
        self, args: Args, league: League, generator: torch.Generator, device: torch.device
    ) -> None:
        self.ray = require_ray(args.workers)
        began = time.perf_counter()
        self.started_ray = connect(args.workers)
        self.timings = {"ray_start_s": time.perf_counter() - began}
        if self.started_ray:  # a Ray of this machine alone: the learner's CPUs are its
            cpus = int(self.ray.cluster_resources().get("CPU", 0))
            note = crowding_note(args.workers, cpus, torch.device(device).type, args.rollout_split)
            if note:
                tqdm_write(note)
        self.args, self.league, self.generator, self.device = args, league, generator, device
        self.whole = args.rollout_split == "batches" and args.workers > 1
        self.shares = (
            [args.num_envs] * args.workers if self.whole else shares(args.num_envs, args.workers)
        )
        self.turn = 0
        self.share_generator = not args.overlap and generator.device.type == "cpu"
        self.actors: dict[int, _Actor] = {}
        self.local: RolloutWorker | None = None
        self.local_shares: list[int] = []
        self.pending: dict[int, tuple[_Actor, Any, float]] = {}
        self.last_probe = time.perf_counter()
        self.generations = [0] * args.workers
        self.restarts = 0
        self.moves = 0
        self.saved: list[dict[str, Any]] | None = None
        self.in_flight: deque[_Launch] = deque()
        self.rates: dict[int, float] = {}
        self.cpu_shares: dict[int, float] = {}
        self.mirror = LeagueMirror(league)
        self.mirrors: dict[int, LeagueMirror] = {}  # whole batches: each share's (start)
        self.remote = self.ray.remote(num_cpus=1, max_restarts=0)(RolloutWorker)
        self.settings = dataclasses.asdict(args)
        self.lag = (len(self.shares) if self.whole else 1) if args.overlap else 0
        self.log_path = Path(args.runs_dir) / args.run_name / "actors.log"
        self.started_at = 0.0

    # ------------------------------------------------------------ the rollout's interface
    def start(self, policy: PolicyNet) -> None:
        """Starts the actors, each with its home share (the league of now; new games).

        Actors not placed within ``placement_timeout`` leave their shares to the others
        (or the driver), and their slots are filled when capacity comes back.
        """
        self.close_actors()
        self.started_at = time.perf_counter()
        self.mirror = LeagueMirror(self.league)
        if self.whole:
            self.mirrors = {i: LeagueMirror(self.league) for i in range(len(self.shares))}
        self.turn = 0
        saved = self.saved if self.saved and len(self.saved) == len(self.shares) else None
        if saved is not None:
            self.generations = [int(s.get("generation", 0)) for s in saved]
        waiting = {}
        room = self._room()
        for i in range(len(self.shares)):
            state = None if saved is None else saved[i]
            waiting[i] = self._spawn(i, [(i, state)])
        placed = self._await_placement(waiting, room >= len(waiting))
        self.actors = {i: placed[i] for i in sorted(placed)}
        lost = [i for i in waiting if i not in placed]
        self._log(
            f"rollout actors started: {len(placed)} of {self.args.workers}"
            + "".join(f"; actor {i} on {a.node} (pid {a.pid})" for i, a in self.actors.items())
        )
        if lost:
            self._log(f"rollout actors {lost} not placed within {self.args.placement_timeout:g}s")
            self._move(lost)

    def collect(self, policy: PolicyNet, num_steps: int, teaching: float = 0.0) -> Batch:
        """A batch of the games; with ``overlap`` the one launched ``lag`` calls ago.

        The batch joins every share's games, or is one share's (``rollout_split:
        batches``, the shares in turn). Without overlap the actors play with
        ``policy``'s weights of now; with it, the batch returned was played with the
        weights of an earlier call, and the next one is launched with those of now
        before this returns (the first call launches ``lag`` of them). Membership
        changes (actors placed again, shares spread back) take effect here, between
        batches.
        """
        if not self.args.overlap:
            self._regrow()
            return self._finish(self._launch(policy, num_steps, teaching))
        while len(self.in_flight) < self.lag:
            self._regrow()
            self.in_flight.append(self._launch(policy, num_steps, teaching))
        batch = self._finish(self.in_flight.popleft())
        self._regrow()
        self.in_flight.append(self._launch(policy, num_steps, teaching))
        return batch

    def stats(self) -> dict[str, float]:
        """Per-host decisions per second of its last collection, membership, timings."""
        out = {
            (f"actor{i}_steps_per_second" if i != DRIVER else "driver_steps_per_second"): r
            for i, r in self.rates.items()
        }
        out |= {
            (f"actor{i}_cpu_share" if i != DRIVER else "driver_cpu_share"): c
            for i, c in self.cpu_shares.items()
        }
        out["actor_restarts"] = float(self.restarts)
        out["actors_live"] = float(len(self.actors))
        out["games_on_driver"] = float(sum(self.shares[s] for s in self.local_shares))
        out.update(self.timings)
        return out

    def describe(self) -> str:
        """Each actor's games and its decisions/s, for the progress bar."""
        hosts = {i: a.shares for i, a in self.actors.items()}
        if self.local_shares:
            hosts[DRIVER] = self.local_shares
        parts = []
        for i, held in sorted(hosts.items()):
            games = sum(self.shares[s] for s in held)
            rate = f" {self.rates[i] / 1000:.1f}k/s" if i in self.rates else ""
            parts.append(f"{games}g{rate}" if i != DRIVER else f"driver {games}g{rate}")
        note = f" ({self.restarts} restarts)" if self.restarts else ""
        return f"actors: {' '.join(parts)}{note}"

    def saved_state(self) -> dict[str, Any]:
        """Share 0's games' and league's generators, and every share's under ``workers``.

        Empty when an actor cannot answer (it died since its last collection: the
        trainer's own generators are saved then).
        """
        states = self.states()
        if None in states:
            return {}
        out: dict[str, Any] = {
            "env_generator": states[0]["env_generator"],
            "np_rng": states[0]["np_rng"],
        }
        out["workers"] = [
            {**s, "np_rng": json.dumps(s["np_rng"]), "generation": self.generations[i]}
            for i, s in enumerate(states)
        ]
        return out

    def restore(self, state: dict[str, Any]) -> None:
        """The shares of a resumed run start from the generators saved under ``workers``.

        With another number of shares than was saved they start with fresh ones.
        """
        saved = state.get("workers", [])
        if len(saved) != self.args.workers:
            print(f"workers: {self.args.workers} actors start with fresh generators")
        else:
            self.saved = [{**a, "np_rng": json.loads(a["np_rng"])} for a in saved]

    def states(self) -> list[dict[str, Any] | None]:
        """Every share's generator states (waits for a collection in flight).

        ``None`` for a share whose actor died since its last collection (it is played
        elsewhere when next collected).
        """
        out: dict[int, dict[str, Any]] = {}
        for actor in list(self.actors.values()):
            with contextlib.suppress(self.ray.exceptions.RayError, TimeoutError):
                out.update(self._get(actor.handle.state.remote(), "an actor's state"))
        if self.local is not None:
            out.update(self.local.state())
        return [out.get(i) for i in range(len(self.shares))]

    def pids(self) -> list[int]:
        """The actors' process ids, by actor number."""
        return [self._get(a.handle.pid.remote(), "a pid") for _, a in sorted(self.actors.items())]

    def close(self) -> None:
        """Stops the actors, and Ray if this run started it; prints where the time went."""
        if self.started_at:
            self._log(self.time_report())
        self.close_actors()
        if self.started_ray and self.ray.is_initialized():
            self.ray.shutdown()
            self.started_ray = False

    def time_report(self) -> str:
        """One line: Ray's start, the first batch, the waits for the actors, their CPU.

        The actors' *CPU share* is their processes' CPU time over the time their
        collections took: 1.0 when each had a core to itself, less when they shared.
        """
        t = self.timings
        busy = t.get("actor_busy_s", 0.0)
        share = f", CPU share {t['actor_cpu_s'] / busy:.2f}" if busy > 0 else ""
        return (
            f"rollout actors: Ray start {t['ray_start_s']:.1f}s, first batch "
            f"{t.get('first_batch_s', 0.0):.1f}s, waiting for actors "
            f"{t.get('actor_wait_s', 0.0):.1f}s, collecting {busy:.1f}s{share}, "
            f"{self.restarts} restarts, {self.moves} shares moved"
        )

    def close_actors(self) -> None:
        """Stops the actors (a collection in flight is dropped)."""
        for actor in [*self.actors.values(), *(p[0] for p in self.pending.values())]:
            self.ray.kill(actor.handle, no_restart=True)
        self.actors, self.pending = {}, {}
        self.in_flight.clear()
        self.local, self.local_shares = None, []

    # ------------------------------------------------------------ membership
    def _log(self, line: str) -> None:
        """A membership line: on the console and in ``runs/<run>/actors.log``."""
        tqdm_write(line)
        try:
            self.log_path.parent.mkdir(parents=True, exist_ok=True)
            with self.log_path.open("a") as f:
                f.write(f"{time.strftime('%Y-%m-%dT%H:%M:%S')} {line}\n")
        except OSError:
            pass

    def _get(self, ref: Any, what: str, timeout: float | None = None) -> Any:
        """``ray.get`` with ``ray_timeout``: a :class:`TimeoutError` naming ``what``."""
        limit = self.args.ray_timeout if timeout is None else timeout
        try:
            return self.ray.get(ref, timeout=limit)
        except self.ray.exceptions.GetTimeoutError:
            raise TimeoutError(f"{what} did not answer within {limit:g}s") from None

    def _spawn(self, slot: int, held: list[tuple[int, dict[str, Any] | None]]):
        """Starts actor ``slot`` with shares ``held`` (index, state); returns it and its ping."""
        handle = self.remote.remote(self.settings)
        league = self.mirror.full()
        for index, state in held:
            seed = actor_seed(self.args.seed, index, self.generations[index])
            handle.adopt.remote(index, self.shares[index], seed, league, state)
        actor = _Actor(handle, [index for index, _ in held])
        return actor, handle.ready.remote()

    def _room(self) -> int:
        """CPUs free in the cluster now (0 if Ray cannot say)."""
        try:
            return int(self.ray.available_resources().get("CPU", 0))
        except Exception:  # noqa: BLE001 - the GCS unreachable for a moment
            return 0

    def _await_placement(
        self, waiting: dict[int, tuple[_Actor, Any]], room: bool = False
    ) -> dict[int, _Actor]:
        """The actors of ``waiting`` that answer in time; the others are killed.

        In time: within ``placement_timeout``, or ``ray_timeout`` when the cluster had
        ``room`` (free CPUs for all of them) when they were started: they are placed
        then, and only their start (imports, games) takes the time.
        """
        refs = {ping: slot for slot, (_, ping) in waiting.items()}
        limit = self.args.ray_timeout if room else self.args.placement_timeout
        ready, _ = self.ray.wait(list(refs), num_returns=len(refs), timeout=limit)
        placed = {}
        for ping in refs:
            actor = waiting[refs[ping]][0]
            try:
                info = self._get(ping, "a new actor", timeout=0) if ping in ready else None
            except (self.ray.exceptions.RayError, TimeoutError):
                info = None
            if info is None:
                self.ray.kill(actor.handle, no_restart=True)
                continue
            actor.node, actor.pid = info["node"], info["pid"]
            placed[refs[ping]] = actor
        return placed

    def _host(self, share: int) -> int:
        """The host of ``share`` now: an actor's number, or :data:`DRIVER`."""
        for slot, actor in self.actors.items():
            if share in actor.shares:
                return slot
        return DRIVER

    def _move(self, moving: list[int]) -> None:
        """Shares ``moving`` (their host lost) start afresh on the hosts that are left."""
        league = self.mirror.full()
        for index in moving:
            self.generations[index] += 1
            self.moves += 1
            seed = actor_seed(self.args.seed, index, self.generations[index])
            if self.actors:  # the actor with the fewest games takes it
                slot = min(self.actors, key=lambda s: (self._games(s), s))
                actor = self.actors[slot]
                actor.handle.adopt.remote(index, self.shares[index], seed, league)
                actor.shares.append(index)
            else:
                if self.local is None:
                    self.local = RolloutWorker(self.settings, own_process=False)
                self.local.adopt(index, self.shares[index], seed, league)
                self.local_shares.append(index)
        self._log(f"shares moved: {self._spread()}")

    def _games(self, slot: int) -> int:
        return sum(self.shares[s] for s in self.actors[slot].shares)

    def _spread(self) -> str:
        """Who plays what now, e.g. ``actor 0: shares [0, 1] (512 games); driver: -``."""
        parts = [
            f"actor {slot}: shares {a.shares} ({self._games(slot)} games)"
            for slot, a in sorted(self.actors.items())
        ]
        games = sum(self.shares[s] for s in self.local_shares)
        if self.local_shares:
            parts.append(f"driver: shares {self.local_shares} ({games} games)")
        return "; ".join(parts)

    def _lose(self, slot: int, exc: BaseException) -> list[int]:
        """Actor ``slot`` is gone: started again in its place, or its shares move.

        Returns:
            The shares it played (to be collected again by their new hosts).
        """
        actor = self.actors.pop(slot)
        self.ray.kill(actor.handle, no_restart=True)
        self.restarts += 1
        lost = list(actor.shares)
        for index in lost:
            self.generations[index] += 1
        self._log(
            f"rollout actor {slot} died ({type(exc).__name__}); started again, collecting "
            f"its {sum(self.shares[s] for s in lost)} games' share again "
            f"(restart {self.restarts})"
        )
        room = self._room() >= 1
        placed = self._await_placement({slot: self._spawn(slot, [(s, None) for s in lost])}, room)
        if slot in placed:
            self.actors[slot] = placed[slot]
            self.actors = dict(sorted(self.actors.items()))
            self._log(f"rollout actor {slot} placed again on {placed[slot].node}")
            return lost
        for index in lost:  # _move counts the generation again
            self.generations[index] -= 1
        self._log(
            f"rollout actor {slot} could not be placed again within "
            f"{self.args.placement_timeout:g}s; {len(self.actors)} of {self.args.workers} "
            "actors left"
        )
        self._move(lost)
        self.last_probe = time.perf_counter()
        return lost

    def _regrow(self) -> None:
        """Between batches: books actors placed since, and tries to fill empty slots."""
        now = time.perf_counter()
        for slot, (actor, ping, since) in list(self.pending.items()):
            done, _ = self.ray.wait([ping], timeout=0)
            if done:
                del self.pending[slot]
                placed = self._await_placement({slot: (actor, ping)}, room=True)
                if slot in placed:
                    self._join(slot, placed[slot])
            elif now - since > self.args.ray_timeout:  # (started where a CPU was free)
                del self.pending[slot]
                self.ray.kill(actor.handle, no_restart=True)
                self._log(
                    f"rollout actor {slot} did not start within {self.args.ray_timeout:g}s; "
                    f"still {len(self.actors)} of {self.args.workers} actors"
                )
        empty = [s for s in range(self.args.workers) if s not in self.actors]
        empty = [s for s in empty if s not in self.pending]
        if not empty or now - self.last_probe < REGROW_EVERY_S:
            return
        self.last_probe = now
        for slot in empty[: self._room()]:
            actor, ping = self._spawn(slot, [])
            self.pending[slot] = (actor, ping, now)

    def _join(self, slot: int, actor: _Actor) -> None:
        """A newly placed actor takes its home share back (and any share the driver plays)."""
        self.actors[slot] = actor
        self.actors = dict(sorted(self.actors.items()))
        taking = [slot] + [s for s in self.local_shares if s != slot]  # the driver's too
        league = self.mirror.full()
        for index in taking:
            host = self._host(index)
            if host == slot:
                continue
            if host == DRIVER:
                self.local.drop(index)
                self.local_shares.remove(index)
            else:
                self.actors[host].handle.drop.remote(index)
                self.actors[host].shares.remove(index)
            self.generations[index] += 1
            self.moves += 1
            seed = actor_seed(self.args.seed, index, self.generations[index])
            actor.handle.adopt.remote(index, self.shares[index], seed, league)
            actor.shares.append(index)
        self._log(
            f"rollout actor {slot} joined on {actor.node} (pid {actor.pid}); "
            f"{len(self.actors)} of {self.args.workers} actors; {self._spread()}"
        )

    # ------------------------------------------------------------ collections
    def _launch(self, policy: PolicyNet, num_steps: int, teaching: float) -> _Launch:
        """Sends a collection: every share, or with whole batches the next one in turn."""
        local_weights = state_dict_cpu(policy)
        weights = self.ray.put(local_weights)
        playing = list(range(len(self.shares)))
        if self.whole:
            playing = [self.turn % len(self.shares)]
            self.turn += 1
            delta = self.mirrors[playing[0]].delta()
        else:
            delta = self.mirror.delta()
        generator = self.generator.get_state() if self.share_generator else None
        refs, handles, held = {}, {}, {}
        for slot, actor in self.actors.items():
            mine = [s for s in actor.shares if s in playing]
            if not mine:
                continue
            carried = generator if 0 in mine else None
            refs[slot] = actor.handle.collect.remote(
                weights, delta, num_steps, teaching, carried, mine
            )
            handles[slot], held[slot] = actor.handle, mine
        local = [s for s in self.local_shares if s in playing]
        if local:
            held[DRIVER] = local
        return _Launch(
            refs,
            handles,
            held,
            weights,
            local_weights,
            delta,
            num_steps,
            teaching,
            generator,
            playing,
        )

    def _finish(self, launch: _Launch) -> Batch:
        results: dict[int, dict[str, Any]] = {}
        # the driver plays its shares while the actors play theirs (those it held at the
        # launch: an actor placed since took its home share back, collected below)
        local = [s for s in launch.held.get(DRIVER, []) if s in self.local_shares]
        if local:
            out = self.local.collect(
                launch.local_weights,
                launch.delta,
                launch.num_steps,
                launch.teaching,
                launch.generator if 0 in local else None,
                only=local,
            )
            results.update(out["shares"])
            launch.seconds[DRIVER] = out["seconds"]
            launch.cpu_seconds[DRIVER] = out["cpu_seconds"]
        for index in launch.held.get(DRIVER, []):
            if index not in results:
                results[index] = self._collect_again(index, launch)
        waited = time.perf_counter()
        for slot, ref in launch.refs.items():
            try:
                out = self._get(ref, f"rollout actor {slot}'s batch")
                results.update(out["shares"])
                launch.seconds[slot] = out["seconds"]
                launch.cpu_seconds[slot] = out["cpu_seconds"]
            except (self.ray.exceptions.RayActorError, TimeoutError) as exc:
                self._lose_once(slot, launch.handles[slot], exc)
                for index in launch.held[slot]:
                    if index not in results:
                        results[index] = self._collect_again(index, launch)
        self.timings["actor_wait_s"] = self.timings.get("actor_wait_s", 0.0) + (
            time.perf_counter() - waited
        )
        if "first_batch_s" not in self.timings:
            self.timings["first_batch_s"] = time.perf_counter() - self.started_at
        ordered = [results[i] for i in launch.playing]
        batch = Batch.join([r["batch"] for r in ordered]).to(self.device)
        if self.whole:  # other shares' results came in since this one started: add to them
            add_booked(self.league, [ordered[0]["booked"]])
        else:
            results_of, booked = [r["results"] for r in ordered], [r["booked"] for r in ordered]
            merge_results(self.league, results_of, booked)
        if ordered[0]["generator"] is not None:
            self.generator.set_state(ordered[0]["generator"])
        if not self.whole:  # (whole batches: each host keeps the rate of its last batch)
            self.rates, self.cpu_shares = {}, {}
        hosts = set(self.actors) | ({DRIVER} if self.local_shares else set())
        for host in set(self.rates) - hosts:  # lost since, or the driver's shares gone
            del self.rates[host], self.cpu_shares[host]
        for host, held in launch.held.items():
            if host in launch.seconds and launch.seconds[host] > 0:
                games = sum(self.shares[s] for s in held)
                self.rates[host] = games * launch.num_steps / launch.seconds[host]
                self.cpu_shares[host] = launch.cpu_seconds[host] / launch.seconds[host]
                if host != DRIVER:  # the actors' totals (the driver's share is the learner's)
                    for name, seconds in (("actor_cpu_s", launch.cpu_seconds[host]),
                                          ("actor_busy_s", launch.seconds[host])):  # fmt: skip
                        self.timings[name] = self.timings.get(name, 0.0) + seconds
        return batch

    def _collect_again(self, index: int, launch: _Launch) -> dict[str, Any]:
        """Share ``index``'s part of ``launch``, played again by its host of now."""
        carried = launch.generator if index == 0 else None
        while True:
            host = self._host(index)
            if host == DRIVER:
                out = self.local.collect(
                    launch.local_weights,
                    Delta(),
                    launch.num_steps,
                    launch.teaching,
                    carried,
                    only=[index],
                )
                return out["shares"][index]
            actor = self.actors[host]
            ref = actor.handle.collect.remote(
                launch.weights, Delta(), launch.num_steps, launch.teaching, carried, [index]
            )
            try:
                return self._get(ref, f"rollout actor {host}'s batch")["shares"][index]
            except (self.ray.exceptions.RayActorError, TimeoutError) as exc:
                self._lose_once(host, actor.handle, exc)

    def _lose_once(self, slot: int, handle: Any, exc: BaseException) -> None:
        """:meth:`_lose` for actor ``slot``, unless it was lost (and replaced) already."""
        current = self.actors.get(slot)
        if current is not None and current.handle is handle:
            self._lose(slot, exc)
