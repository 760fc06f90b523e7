"""The training loop: collect → update → league → evaluate → checkpoint, to ``total_steps``.

:class:`Trainer` builds a run's pieces from its :class:`~liars_train.ppo.settings.Args` (the
network, its optimizer, the league, the games) and takes its roles from a
:class:`~liars_train.ppo.roles.Roles` chosen once where the run is built
(:func:`liars_train.runner.roles_for`; in this process by default): a
:class:`~liars_train.ppo.roles.RolloutSource` collects a batch with the current weights,
:func:`~liars_train.ppo.update.ppo_update` learns from it, snapshots and exploiters (an
:class:`~liars_train.ppo.roles.ExploiterTrainer`) join the league, an
:class:`~liars_train.ppo.roles.EvaluationService` measures the policy against the bots,
and :mod:`checkpoints <liars_train.ppo.checkpoints>` make the run resumable. The loop never
knows whether a role runs here or on Ray. :meth:`Trainer.train` reads top to bottom.
"""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import functools
import json
import random
import time
from pathlib import Path
from typing import Any

import numpy as np
import torch

import liars_train.ppo.checkpoints as checkpoints
import liars_train.ppo.evaluate as evaluate
from liars_env.agents.batched import make_batched_bot
from liars_env.agents.policy import PolicyNet, build_meta
from liars_env.batched import BatchedEnv
from liars_env.batched.threads import using_threads
from liars_train.league import Member, frozen_copy
from liars_train.ppo.exploiters import ExploiterResult, exploiter_args, judge_exploiter
from liars_train.ppo.loss import entropy_weight, linear_schedule, magnet_weight
from liars_train.ppo.roles import InProcess, Roles, RunContext
from liars_train.ppo.rollout import Batch, league_for
from liars_train.ppo.settings import Args, game_rules, network_shape, updates_of
from liars_train.ppo.update import ppo_update
from liars_train.reports import plot_learning_curve, progress_bar, tqdm_write, write_metrics


class StopRequested(KeyboardInterrupt):
    """Raised by the loop between two updates once :meth:`Trainer.request_stop` was called.

    A ``KeyboardInterrupt``, so a caller that stops on Ctrl-C stops on it too.
    """


class Trainer:
    """State and loop of one training run (see the module docstring).

    Args:
        args: The settings.
        roles: Builds the rollout source, the evaluation service and the exploiter
            trainer (default :class:`~liars_train.ppo.roles.InProcess`, which refuses
            ``workers`` > 0: :func:`liars_train.runner.make_trainer` picks the roles
            the settings ask for).
        resume: Continue from the run's last checkpoint.
        opponents: Extra league members (used for exploiters and ``liars-exploit``:
            the frozen policy they train against).
        init: A network of the configured shape whose weights the learner starts from
            (default: fresh weights).
    """

    def __init__(
        self,
        args: Args,
        roles: Roles | None = None,
        *,
        resume: bool = False,
        opponents: list[Member] | None = None,
        init: PolicyNet | None = None,
    ) -> None:
        self.args = args
        self.rules = game_rules(args)
        self.run_dir = Path(args.runs_dir) / args.run_name
        self.ckpt_dir = self.run_dir / "checkpoints"
        self.threads = args.torch_threads or None  # set while train() runs, then restored
        self.learn_threads = args.learn_threads or self.threads
        random.seed(args.seed)
        torch.manual_seed(args.seed)
        self.device = torch.device(args.device)
        self.env = BatchedEnv(
            self.rules,
            num_envs=args.num_envs,
            device=self.device,
            seed=args.seed,
            check_actions=False,
            threads=args.torch_threads or None,
            backend=args.engine_backend,
        )
        self.shape = network_shape(args, self.env)
        self.policy = PolicyNet(self.shape, self.rules).to(self.device)
        checkpoints.start_from(self.policy, init, args, self.rules, resume)
        self.optimizer = torch.optim.Adam(self.policy.parameters(), lr=args.learning_rate, eps=1e-5)
        self.magnet_net = (
            frozen_copy(self.policy) if args.magnet_coef and args.magnet == "ema" else None
        )
        self.np_rng = np.random.default_rng(args.seed)
        self.generator = torch.Generator(device=self.device).manual_seed(args.seed)
        self.teacher = (
            make_batched_bot(self.env, args.teacher, seed=args.seed + 7) if args.teacher else None
        )
        self.league = league_for(args, self.env, self.np_rng, self.generator, opponents)
        self.batch_size = args.num_envs * args.num_steps
        self.seconds: dict[str, float] = {}  # per phase of the loop (time_report)
        self.num_updates = updates_of(args)
        self.counters = checkpoints.Counters()
        roles = InProcess() if roles is None else roles
        context = RunContext(
            args=args,
            rules=self.rules,
            env=self.env,
            league=self.league,
            generator=self.generator,
            np_rng=self.np_rng,
            device=self.device,
            threads=self.threads,
            teacher=self.teacher,
            train_exploiter=functools.partial(
                train_exploiter, args, device=self.device, threads=self.threads
            ),
        )
        self.rollout = roles.rollouts(context)
        self.evaluations = roles.evaluations(context)
        self.exploiter = roles.exploiter(context)
        # a batch played by the weights of one update before: decoupled PPO's ratio
        self.decoupled = self.rollout.lag > 0 and args.lag_correction == "decoupled"
        try:
            if resume:
                self._restore()
            elif self.ckpt_dir.is_dir() and any(self.ckpt_dir.iterdir()):
                if not args.overwrite:
                    raise ValueError(
                        f"run folder {self.run_dir} already holds checkpoints: continue it "
                        f"with --resume {self.run_dir}, choose another run_name, or set "
                        "overwrite=true to delete them and start afresh"
                    )
                checkpoints.clear_run_outputs(self.run_dir)
        except BaseException:  # the roles started (a Ray, its actors) stop with the error
            self._close_roles()
            raise

    stop_requested = False
    """Set by :meth:`request_stop`; the loop stops before its next update."""

    def request_stop(self) -> None:
        """Asks the loop to stop before its next update (with :class:`StopRequested`).

        Safe to call from a signal handler: it only sets :attr:`stop_requested`. The
        roles are stopped and the last checkpoint stands, as after a Ctrl-C.
        """
        self.stop_requested = True

    def _close_roles(self) -> None:
        """Stops the roles (the exploiter, the evaluations, the rollout source)."""
        self.exploiter.close()
        self.evaluations.close()
        self.rollout.close()

    # The counters, by the names the rest of the project reads them.
    update = property(lambda self: self.counters.update)
    global_step = property(lambda self: self.counters.global_step)
    best_win_rate = property(lambda self: self.counters.best_win_rate)
    exploiters = property(lambda self: self.counters.exploiters)
    history = property(lambda self: self.counters.history)
    episode_returns = property(lambda self: self.counters.episode_returns)

    def train(self) -> dict[str, Any]:
        """Runs the training loop to ``total_steps``; returns the final evaluation.

        Runs on ``torch_threads`` threads (``learn_threads`` for the updates) and gives
        the caller's thread setting back when it returns.
        """
        with using_threads(self.threads):
            return self._train()

    def _train(self) -> dict[str, Any]:
        args, run = self.args, self.counters
        writer = self._open_logs()
        bar = progress_bar(args.progress, self.num_updates * self.batch_size, run.global_step)
        try:
            self._loop(writer, bar)
        finally:  # Ctrl-C too: the roles stop, the last checkpoint stays resumable
            self._close_roles()
            bar.close()
            writer.close()
        tqdm_write(self.time_report())
        self.plot_learning_curve()
        return self.final_evaluation()

    def _loop(self, writer, bar) -> None:
        args, run = self.args, self.counters
        start_time, start_step = time.perf_counter(), run.global_step
        latest_eval = ""
        with self._timed("start"):
            self.rollout.start(self.policy)
        while run.update < self.num_updates:
            if self.stop_requested:  # between two updates: no Ray call is cut in half
                raise StopRequested(f"stopped at update {run.update}")
            # collect: a batch of learner decisions with the weights of now
            teaching = self._teacher_weight()
            with self._timed("collect"):
                batch = self.rollout.collect(self.policy, args.num_steps, teaching)
            run.global_step += batch.size
            run.episode_returns += batch.episode_returns
            # update: GAE and the PPO epochs
            if args.anneal_lr:
                self.optimizer.param_groups[0]["lr"] = linear_schedule(
                    args.learning_rate, 0.0, run.update, self.num_updates
                )
            with using_threads(self.learn_threads), self._timed("learn"):
                stats = self._learn(batch, teaching)
            run.update += 1
            # league: a snapshot of the learner joins
            if args.pool_size and run.update % args.snapshot_every == 0:
                name = f"snapshot@{run.global_step}"
                self.league.add(Member(name, "snapshot", net=frozen_copy(self.policy)))
            sps = (run.global_step - start_step) / (time.perf_counter() - start_time)
            self._log_training(writer, stats, sps)
            # exploiters: trained now or beside the run, and joining if they win
            if args.exploiter_every and run.update % args.exploiter_every == 0:
                with self._timed("exploiters"):
                    self._train_exploiter(writer)
            # evaluate: win rates against the bots, booked when done (the best checkpoint)
            last = run.update == self.num_updates
            with self._timed("evaluations"):
                if args.eval_every and run.update % args.eval_every == 0 or last:
                    self.evaluations.submit(self.policy, run.update, run.global_step)
                latest_eval = self._book_background(writer, wait=last) or latest_eval
            # checkpoint: everything --resume needs
            if run.update % args.checkpoint_every == 0 or last:
                with self._timed("checkpoints"):
                    self._checkpoint()
            for phase, seconds in self.seconds.items():
                writer.add_scalar(f"time/{phase}_seconds", seconds, run.global_step)
            parts = (self.rollout.describe(), latest_eval)  # the bar shows the one rate
            bar.set_postfix_str(" ".join(p for p in parts if p), refresh=False)
            bar.update(batch.size)

    @contextlib.contextmanager
    def _timed(self, phase: str):
        """Adds the seconds the block takes to ``phase`` (see :meth:`time_report`)."""
        began = time.perf_counter()
        try:
            yield
        finally:
            self.seconds[phase] = self.seconds.get(phase, 0.0) + time.perf_counter() - began

    def time_report(self) -> str:
        """Where this process's time went, as one line.

        Seconds spent starting the roles, collecting, learning, on exploiters, on
        evaluations (the driver's share: playing them in-process, or submitting,
        booking and waiting for the last) and on checkpoints (TensorBoard: ``time/``).
        """
        parts = ", ".join(f"{phase} {seconds:.1f}s" for phase, seconds in self.seconds.items())
        return f"time: {parts}"

    # -------------------------------------------------------------- the roles
    def _learn(self, batch: Batch, teaching: float = 0.0) -> dict[str, float]:
        """The PPO update on one batch, with the schedules' weights of now."""
        args, update = self.args, self.counters.update
        return ppo_update(
            args,
            self.policy,
            self.optimizer,
            batch,
            self.generator,
            magnet=self.magnet_net,
            alpha=magnet_weight(args, update, self.num_updates),
            ent_coef=entropy_weight(args, update, self.num_updates),
            teaching=teaching,
            proximal=self.decoupled,
        )

    def _teacher_weight(self) -> float:
        """Weight of the imitation loss now: ``teacher_coef``, fading to 0 linearly."""
        if self.teacher is None or not self.args.teacher_steps:
            return 0.0
        left = 1.0 - self.counters.global_step / self.args.teacher_steps
        return self.args.teacher_coef * max(0.0, left)

    def _train_exploiter(self, writer) -> dict[str, Any]:
        """Trains a fresh learner against the frozen main policy; promotes it if it wins.

        The exploiter's own run (logs, checkpoints) goes to
        ``runs/<run>/exploiters/<k>``; its result is logged under ``league/``.
        """
        run = self.counters
        if not self.exploiter.busy:  # one at a time
            run.exploiters += 1
            self.exploiter.start(run.exploiters - 1, self.policy, run.global_step)
        match: dict[str, Any] = {}
        for done in self.exploiter.done(self.policy):  # (one trained beside: later)
            self._exploiter_done(writer, done)
            match = done.match
        return match

    def _book_background(self, writer, wait: bool = False) -> str:
        """Books the evaluations and the exploiter that finished (``wait``: all evaluations).

        Returns:
            The last evaluation's line for the progress bar (empty if none finished).
        """
        line = ""
        for done in self.evaluations.done(wait):
            line = self._book_eval(writer, done.results, done.update, done.step)
            self._best_checkpoint(done.results, done.weights, done.update, done.step)
        for done in self.exploiter.done(self.policy):
            self._exploiter_done(writer, done)
        return line

    def _exploiter_done(self, writer, done) -> None:
        """Books a trained exploiter: it joins the league if promoted; logs the match."""
        step, win_rate = self.counters.global_step, done.match["win_rate"]
        if done.promoted:
            self.league.add(Member(f"exploiter{done.k}@{step}", "exploiter", net=done.net))
        writer.add_scalar("league/exploiter_win_rate", win_rate, step)
        writer.add_scalar("league/exploiter_promoted", float(done.promoted), step)
        tqdm_write(
            f"exploiter {done.k}: win rate {win_rate:.3f} vs the main policy "
            f"({'joins the league' if done.promoted else 'not promoted'})"
        )

    # -------------------------------------------------------------- logs and evaluation
    def _open_logs(self):
        """The run folder with its ``config.json``, and a TensorBoard writer on it."""
        from torch.utils.tensorboard import SummaryWriter

        self.run_dir.mkdir(parents=True, exist_ok=True)
        config = json.dumps(dataclasses.asdict(self.args), indent=2)
        (self.run_dir / "config.json").write_text(config)
        return SummaryWriter(str(self.run_dir))

    def _log_training(self, writer, stats: dict[str, float], sps: float) -> None:
        """The update's statistics and the recent games' returns, under ``train/``."""
        returns = self.counters.episode_returns
        stats.update(steps_per_second=sps, episodes=len(returns), **self.rollout.stats())
        if returns:
            recent = returns[-1000:]
            stats["mean_return"] = float(np.mean(recent))
            stats["win_fraction"] = float(np.mean(np.array(recent) > 0))
        for key, value in stats.items():
            writer.add_scalar(f"train/{key}", value, self.counters.global_step)

    def _book_eval(self, writer, results: list[dict], update: int, step: int) -> str:
        """Logs an evaluation of update ``update`` and the league's table; a line for the bar."""
        row, line = evaluate.eval_row(writer, results, self.args, self.league, update, step)
        self.counters.history.append(row)
        write_metrics(self.run_dir / "metrics.csv", self.counters.history)
        return line

    def _best_checkpoint(self, results: list[dict], weights: dict, update: int, step: int):
        """Writes ``best`` with the weights an evaluation measured, if they are the best."""
        rates = [r["win_rate"] for r in results]
        if not rates or float(np.mean(rates)) <= self.counters.best_win_rate:
            return
        self.counters.best_win_rate = float(np.mean(rates))
        measured = copy.deepcopy(self.policy)  # (draws nothing from torch's generator)
        measured.load_state_dict(weights)
        self._checkpoint(name="best", policy=measured, step=step, update=update)

    def plot_learning_curve(self) -> Path | None:
        """Writes ``learning_curve.png``: win rate vs the eval opponents over training."""
        return plot_learning_curve(
            self.history,
            self.args.eval_opponents,
            parity=1 / self.rules.num_players,
            title=f"{self.args.run_name}: {self.args.rules}, {self.rules.num_players} players",
            path=self.run_dir / "learning_curve.png",
        )

    def final_evaluation(self) -> dict[str, Any]:
        """Plays the final table: the new policy (and a shipped one) vs each bot."""
        return evaluate.final_table(
            self.policy, self.rules, self.args, self.run_dir, self.device, self.threads
        )

    # -------------------------------------------------------------- start, checkpoints
    def _generator_states(self) -> dict[str, Any]:
        """The generators the run owns, for ``trainer_state.pt``.

        The rollout source's (:meth:`~liars_train.ppo.roles.RolloutSource.saved_state`)
        win over the driver's: on Ray, the games' and the league's generators are
        actor 0's (as in a run of one process), and ``workers`` holds every actor's.
        """
        states = {
            "generator": self.generator.get_state(),
            "env_generator": self.env.generator.get_state(),
            "np_rng": self.np_rng.bit_generator.state,
        }
        states.update(self.rollout.saved_state())
        return states

    def _checkpoint(
        self,
        name: str | None = None,
        policy: PolicyNet | None = None,
        step: int | None = None,
        update: int | None = None,
    ) -> Path:
        """Saves the network and everything ``--resume`` needs (``best`` or ``step_N``).

        ``policy``, ``step`` and ``update``: an evaluated network of an earlier update
        (a ``best`` measured beside training); by default the learner of now.
        """
        run = self.counters
        meta = build_meta(
            self.rules,
            self.shape,
            step=run.global_step if step is None else step,
            update=run.update if update is None else update,
            seed=self.args.seed,
            run_name=self.args.run_name,
            best_win_rate=run.best_win_rate,
            last_eval=run.history[-1] if run.history else None,
        )
        state = checkpoints.trainer_state(
            run, self.optimizer, self.league, self._generator_states(), self.magnet_net
        )
        policy = self.policy if policy is None else policy
        return checkpoints.save_run_checkpoint(
            self.ckpt_dir, name, policy, meta, state, keep=self.args.keep_checkpoints
        )

    def _restore(self) -> None:
        """Continues from the newest ``step_N`` checkpoint (network, optimizer, league, RNGs)."""
        path, state = checkpoints.load_run_checkpoint(
            self.ckpt_dir, self.policy, self.rules, self.device
        )
        self.counters = checkpoints.restore_state(
            state, self.optimizer, self.league, self.policy, self.magnet_net, list(self.args.league)
        )
        self._restore_generators(state)
        if not self.args.anneal_lr:  # a learning rate set on resume wins over the saved one
            self.optimizer.param_groups[0]["lr"] = self.args.learning_rate
        print(f"resumed {path} at update {self.update}, step {self.global_step}")

    def _restore_generators(self, state: dict[str, Any]) -> None:
        """Puts back the generators of :meth:`_generator_states`."""
        self.generator.set_state(state["generator"])
        self.env.generator.set_state(state["env_generator"])
        self.np_rng.bit_generator.state = checkpoints.numpy_state(state)
        self.rollout.restore(state)


def train_exploiter(
    args: Args,
    k: int,
    main: PolicyNet,
    step: int,
    device: torch.device | str = "cpu",
    threads: int | None = None,
) -> ExploiterResult:
    """Trains the run's exploiter ``k`` against a frozen copy of ``main``; judges it.

    Args:
        args: The main run's settings.
        k: The exploiter's number (its seed and folder follow from it).
        main: The main policy now (copied, never changed).
        step: The main run's learner decisions now (the frozen opponent's name).
        device: Where the promotion match is played.
        threads: Torch threads of the match.

    Returns:
        The exploiter and its match (:func:`~liars_train.ppo.exploiters.judge_exploiter`).
    """
    opponent = Member(f"main@{step}", "checkpoint", net=frozen_copy(main))
    init = main if args.exploiter_init == "main" else None
    exploiter = Trainer(exploiter_args(args, k), InProcess(), opponents=[opponent], init=init)
    exploiter.train()
    return judge_exploiter(args, k, exploiter.policy, opponent, device, threads)
