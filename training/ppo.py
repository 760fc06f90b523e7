"""Masked PPO self-play for Liar's Dice, in the manner of CleanRL's ``ppo.py``.

One policy network plays one seat (the learner's) in every game of a
:class:`~liars_env.batched.BatchedEnv`; the other seats are filled, game by game, from a
configurable mix of opponents: the current policy itself, frozen snapshots of earlier
policies (the pool, which grows during training: fictitious self-play), and the
heuristic bots. Logits are masked to the legal actions, and the entropy bonus counts only
legal actions.

Run ``liars-train --config configs/quickstart.yaml`` (``--set key=value`` overrides a
field, ``--resume RUN`` continues a run after a crash). Everything lands in
``runs/<run_name>/``: TensorBoard events, ``metrics.csv``, checkpoints (``last`` few and
``best``), the learning curve PNG and the final evaluation JSON.
"""

from __future__ import annotations

import argparse
import csv
import dataclasses
import json
import os
import random
import shutil
import sys
import time
import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn

from liars_env.agents.batched import BATCHED_BOT_NAMES, make_batched_bot
from liars_env.agents.probabilistic import BOT_PRESETS
from liars_env.batched import BatchedEnv
from liars_env.policy import (
    CheckpointError,
    NetworkShape,
    PolicyNet,
    build_meta,
    load_policy,
    load_trainer_state,
    masked_entropy,
    sample_actions,
    write_checkpoint,
)
from liars_env.rules import PRESETS, RuleSet
from liars_env.threads import DEFAULT_THREADS, using_threads
from training.config import parse_key_values, require_positive
from training.league import (
    DEFAULT_GROUP_SHARES,
    League,
    Member,
    check_member_spec,
    frozen_copy,
    member_from_spec,
    play_match,
)


@dataclass
class Args:
    """Every setting of a training run (YAML configs set these fields)."""

    run_name: str = "quickstart"
    """Folder under ``runs_dir`` for logs and checkpoints."""
    runs_dir: str = "runs"
    """Where runs are written."""
    rules: str = "perudo"
    """Preset of the game (see ``liars_env.PRESETS``)."""
    rule_overrides: dict = field(default_factory=dict)
    """RuleSet fields to change, e.g. ``{palifico: true}``."""
    num_players: int = 3
    """Seats at the table."""
    seed: int = 0
    """Seeds the games, the network and every sampler."""
    device: str = "cpu"
    """``cpu`` or ``cuda``."""
    torch_threads: int = 1
    """Intra-op torch threads on the CPU for the engine, the bots, the rollouts and the
    evaluations (many small ops). 1, the default, stays fast when another process holds
    a core; 0 leaves torch's default (all cores: faster on an idle machine, 30–80× slower
    on a busy one). See :mod:`liars_env.threads`."""
    learn_threads: int = 0
    """Intra-op threads for the PPO update (large matmuls); 0: the same as
    ``torch_threads``. 2 helps on an idle 2-core machine."""
    total_steps: int = 2_000_000
    """Learner decisions to train for."""
    num_envs: int = 512
    """Games played in parallel (one learner seat in each)."""
    num_steps: int = 32
    """Learner decisions per game per rollout."""
    learning_rate: float = 3e-4
    """Adam learning rate (annealed linearly to 0 if ``anneal_lr``)."""
    anneal_lr: bool = True
    """Anneal the learning rate over the run."""
    gamma: float = 1.0
    """Discount; games are short and the reward is the outcome."""
    gae_lambda: float = 0.95
    """GAE lambda."""
    num_minibatches: int = 4
    """Minibatches per epoch."""
    update_epochs: int = 4
    """PPO epochs per rollout."""
    clip_coef: float = 0.2
    """PPO ratio clip."""
    ent_coef: float = 0.01
    """Entropy bonus (over legal actions)."""
    vf_coef: float = 0.5
    """Value loss weight."""
    max_grad_norm: float = 0.5
    """Gradient clipping norm."""
    hidden_size: int = 256
    """Width of the MLP layers."""
    hidden_layers: int = 2
    """Number of MLP layers."""
    bid_features: bool = True
    """Feed the network each bid's probability from its own dice (see
    ``liars_env.policy.BidProbabilityFeatures``)."""
    belief_features: bool = True
    """Feed the network what the round's bids say about the opponents' dice (see
    ``liars_env.policy.BeliefFeatures``)."""
    self_play: float = 0.2
    """Share of games against the current policy itself; the rest draw a league member
    (see ``training/league.py``)."""
    league: list = field(default_factory=lambda: ["probabilistic", "bayes", "belief"])
    """Fixed league members: bot presets and ``checkpoint:PATH`` (frozen policies)."""
    pfsp_power: float = 2.0
    """Prioritized fictitious self-play: a member is drawn with weight
    ``(1 − learner's win rate against it) ** pfsp_power`` (0: uniformly)."""
    group_shares: dict = field(default_factory=lambda: dict(DEFAULT_GROUP_SHARES))
    """Relative shares of the league's groups in the games that are not self-play:
    ``fixed`` (the ``league`` bots and checkpoints), ``snapshot``, ``exploiter``; PFSP
    draws within each group."""
    pool_size: int = 10
    """Frozen snapshots of the learner kept in the league (oldest dropped first; 0:
    none)."""
    snapshot_every: int = 10
    """Updates between snapshots of the learner added to the league."""
    exploiter_every: int = 0
    """Updates between exploiters (0: none): a fresh learner trained against the frozen
    main policy, joining the league if it beats it by ``exploiter_margin``."""
    exploiter_steps: int = 500_000
    """Learner decisions each exploiter trains for."""
    exploiter_margin: float = 0.05
    """An exploiter joins the league if its win rate against the main policy is at
    least parity plus this."""
    exploiter_eval_games: int = 1000
    """Games that decide an exploiter's promotion."""
    exploiter_init: str = "main"
    """Where exploiters start: ``main`` (the current main policy's weights) or
    ``scratch`` (fresh weights; in 3+ player games a fresh learner facing strong players
    rarely learns within a small budget)."""
    exploiter_dice_shaping: float = 1.0
    """``dice_shaping`` of the exploiters (a learner starting from scratch against strong
    players in 3+ player games rarely wins at first, and learns nothing from outcomes
    alone)."""
    dice_shaping: float = 0.0
    """Weight of a potential-based reward shaping on dice: ``Φ = dice_shaping · (own
    dice − the others' mean) ÷ D``. It leaves episode returns and the optimal policy
    unchanged, and gives a learning signal before the first wins (0: off)."""
    teacher: str = ""
    """A bot (a batched preset, e.g. ``belief``) whose moves the policy imitates at first
    (kickstarting, Schmitt et al. 2018): the PPO loss gets ``teacher_coef ·
    cross-entropy(policy, the teacher's move)`` on every learner decision, fading
    linearly to 0 over ``teacher_steps`` learner decisions. Empty: off."""
    teacher_coef: float = 1.0
    """Initial weight of the imitation loss (see ``teacher``)."""
    teacher_steps: int = 2_000_000
    """Learner decisions over which the imitation weight fades to 0."""
    eval_every: int = 20
    """Updates between evaluations against the bots (0: only at the end)."""
    eval_games: int = 600
    """Games per periodic evaluation (per bot)."""
    eval_opponents: list = field(default_factory=lambda: ["probabilistic", "bayes", "belief"])
    """Opponents evaluated against periodically (all other seats are that opponent):
    bot presets or ``checkpoint:PATH``. The ``best`` checkpoint has the highest mean
    win rate over them."""
    checkpoint_every: int = 20
    """Updates between checkpoints."""
    keep_checkpoints: int = 3
    """Most recent checkpoints kept (plus ``best``)."""
    final_eval_games: int = 600
    """Games per row of the final evaluation table (0: skip it)."""
    compare_checkpoint: str = ""
    """A shipped checkpoint to include in the final table (empty: none)."""
    progress: bool = True
    """Show a progress bar."""


# ------------------------------------------------------------------------- config
def load_args(config: str | None = None, sets: list[str] | None = None, cls: type = None) -> Any:
    """Builds :class:`Args` from a YAML file and ``key=value`` overrides.

    Every key and value is checked before any work starts: an unknown key, a value of
    the wrong type or an unknown preset raises ``ValueError`` naming it.
    """
    import yaml

    values: dict[str, Any] = {}
    if config is not None:
        path = Path(config)
        if not path.is_file():
            raise ValueError(f"config file {config} does not exist")
        try:
            loaded = yaml.safe_load(path.read_text())
        except yaml.YAMLError as exc:
            raise ValueError(f"config file {config} is not valid YAML: {exc}") from None
        if loaded is None:
            loaded = {}
        if not isinstance(loaded, dict):
            raise ValueError(f"config file {config} must hold a mapping of settings")
        values.update(loaded)
    values.update(parse_key_values(sets or []))
    return make_args(values, source=config or "--set", cls=cls)


def make_args(values: dict[str, Any], source: str = "settings", cls: type = None) -> Any:
    """Checks ``values`` against the fields of :class:`Args` (or ``cls``) and builds it."""
    cls = cls or Args
    hints = typing.get_type_hints(cls)
    known = {f.name for f in dataclasses.fields(cls)}
    for key, value in values.items():
        if key == "opponent_mix" and cls is Args:
            raise ValueError(
                f"{source}: opponent_mix was replaced by the league: set self_play (share of "
                "games against the current policy), league (bots and checkpoint:PATH) and "
                "pool_size/snapshot_every (snapshots)"
            )
        if key not in known:
            raise ValueError(
                f"{source}: unknown setting {key!r}; expected one of {', '.join(sorted(known))}"
            )
        expected = hints[key]
        if expected is str and value is None:  # "--set key=" (an empty YAML value)
            values[key] = value = ""
        ok = isinstance(value, expected) and not (
            expected in (int, float) and isinstance(value, bool)
        )
        if expected is float and isinstance(value, int) and not isinstance(value, bool):
            values[key] = float(value)
            ok = True
        if not ok:
            raise ValueError(
                f"{source}: {key} must be {expected.__name__}, "
                f"got {value!r} ({type(value).__name__})"
            )
    args = cls(**values)
    if cls is Args:
        validate(args)
    return args


def validate(args: Args) -> None:
    """Checks value ranges and names (rules, opponents) of a whole configuration."""
    if args.rules not in PRESETS:
        raise ValueError(
            f"rules: unknown preset {args.rules!r}; expected one of {', '.join(PRESETS)}"
        )
    game_rules(args)  # checks num_players and rule_overrides
    require_positive(
        args,
        (
            "total_steps",
            "num_envs",
            "num_steps",
            "num_minibatches",
            "update_epochs",
            "hidden_size",
            "hidden_layers",
            "snapshot_every",
            "exploiter_steps",
            "exploiter_eval_games",
            "checkpoint_every",
            "keep_checkpoints",
        ),
    )
    if (args.num_envs * args.num_steps) % args.num_minibatches:
        raise ValueError(
            f"num_envs × num_steps ({args.num_envs * args.num_steps}) must divide into "
            f"num_minibatches ({args.num_minibatches})"
        )
    for name in ("self_play", "exploiter_margin"):
        if not 0.0 <= getattr(args, name) <= 1.0:
            raise ValueError(f"{name} must lie in [0, 1], got {getattr(args, name)!r}")
    for group, share in args.group_shares.items():
        if group not in DEFAULT_GROUP_SHARES:
            raise ValueError(
                f"group_shares: unknown group {group!r}; expected fixed, snapshot, exploiter"
            )
        if not isinstance(share, (int, float)) or isinstance(share, bool) or share <= 0:
            raise ValueError(f"group_shares: share of {group!r} must be > 0, got {share!r}")
    if args.exploiter_init not in ("main", "scratch"):
        raise ValueError(f"exploiter_init must be 'main' or 'scratch', got {args.exploiter_init!r}")
    if args.pfsp_power < 0:
        raise ValueError(f"pfsp_power must be >= 0, got {args.pfsp_power!r}")
    if args.teacher and args.teacher not in BATCHED_BOT_NAMES:
        raise ValueError(
            f"teacher must be empty or a bot with a batched twin "
            f"({', '.join(BATCHED_BOT_NAMES)}), got {args.teacher!r}"
        )
    for name in ("teacher_coef", "teacher_steps"):
        if getattr(args, name) < 0:
            raise ValueError(f"{name} must be >= 0, got {getattr(args, name)!r}")
    for name in ("pool_size", "exploiter_every"):
        if getattr(args, name) < 0:
            raise ValueError(f"{name} must be >= 0, got {getattr(args, name)}")
    for spec in [*args.league, *args.eval_opponents]:
        check_member_spec(spec)
    if args.self_play < 1.0 and not args.league and not args.pool_size:
        raise ValueError(
            "nobody to play: self_play < 1 needs league members or snapshots (pool_size)"
        )
    if args.device.startswith("cuda") and not torch.cuda.is_available():
        raise ValueError(f"device {args.device!r} asked for, but torch sees no CUDA device")


def game_rules(args: Args) -> RuleSet:
    """The rule set a run trains on."""
    return RuleSet.preset(args.rules, num_players=args.num_players, **args.rule_overrides)


# ------------------------------------------------------------------------- evaluation
def evaluate_policy(
    policy: PolicyNet,
    rules: RuleSet,
    opponent: str,
    games: int,
    seed: int,
    device: str = "cpu",
    threads: int | None = DEFAULT_THREADS,
) -> dict[str, Any]:
    """Win rate of ``policy`` in one seat against ``opponent`` in all others.

    ``opponent`` is a bot preset or ``checkpoint:PATH``; see
    :func:`training.league.play_match` (and :mod:`liars_env.threads` for ``threads``).
    """
    result = play_match(
        Member("policy", "self"),
        member_from_spec(opponent, rules, device),
        rules,
        games,
        seed,
        device,
        policy=policy,
        threads=threads,
    )
    return {"bot": opponent, **result}


# ------------------------------------------------------------------------- training
class Trainer:
    """State and loop of one training run (see the module docstring).

    Args:
        args: The settings.
        resume: Continue from the run's last checkpoint.
        opponents: Extra league members (used for exploiters and ``liars-exploit``:
            the frozen policy they train against).
        init: A network of the configured shape whose weights the learner starts from
            (default: fresh weights).
    """

    def __init__(
        self,
        args: Args,
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
        )
        self.shape = NetworkShape(
            self.env.observation_size,
            self.env.num_actions,
            args.hidden_size,
            args.hidden_layers,
            args.bid_features,
            args.belief_features,
        )
        self.policy = PolicyNet(self.shape, self.rules).to(self.device)
        if init is not None:
            if init.shape != self.shape:
                raise ValueError(f"init network {init.shape} differs from the config {self.shape}")
            self.policy.load_state_dict(init.state_dict())
        self.optimizer = torch.optim.Adam(self.policy.parameters(), lr=args.learning_rate, eps=1e-5)
        self.np_rng = np.random.default_rng(args.seed)
        self.generator = torch.Generator(device=self.device).manual_seed(args.seed)
        self.league = League(
            self.env,
            self.np_rng,
            self.generator,
            args.self_play,
            args.pfsp_power,
            args.pool_size,
            seed=args.seed,
            group_shares=args.group_shares,
        )
        self.teacher = (
            make_batched_bot(self.env, args.teacher, seed=args.seed + 7) if args.teacher else None
        )
        for spec in args.league:
            self.league.add(member_from_spec(spec, self.rules, self.device))
        for member in opponents or []:
            self.league.add(member)
        self.league.assign(np.arange(args.num_envs))
        self.learner = torch.arange(args.num_envs, device=self.device) % self.rules.num_players
        self.batch_size = args.num_envs * args.num_steps
        self.num_updates = max(1, args.total_steps // self.batch_size)
        self.update = 0
        self.global_step = 0
        self.best_win_rate = -1.0
        self.exploiters = 0
        self.history: list[dict[str, Any]] = []
        self.episode_returns: list[float] = []
        if resume:
            self._restore()

    # -------------------------------------------------------------- rollouts
    def _advance(self, obs, mask, rewards_acc, dones_acc):
        """Steps the opponents until the learner is to act in every game.

        Rewards the learner earns meanwhile go to ``rewards_acc``; a game that ends for
        the learner (game over, or the learner out) sets ``dones_acc`` and the slot gets
        a new game (and a new opponent).
        """
        env, learner = self.env, self.learner
        for _ in range(64 * self.rules.num_players):
            waiting = env.current_player != learner
            if not bool(waiting.any()):
                return obs, mask
            rows = waiting.nonzero().squeeze(1).cpu().numpy()
            actions = self.league.act(self.policy, obs, mask, rows)
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
        if self.args.dice_shaping:
            # potential-based shaping: Φ is 0 at every game's start (equal dice) and, by
            # convention, at its end (the slot's new game), so episode returns and the
            # optimal policy are unchanged (Ng, Harada & Russell, 1999)
            potential = self._potential()
            rewards_acc += potential - self.potential
            self.potential = potential
        return obs, mask

    def _teacher_weight(self) -> float:
        """Weight of the imitation loss now: ``teacher_coef``, fading to 0 linearly."""
        if self.teacher is None or not self.args.teacher_steps:
            return 0.0
        left = 1.0 - self.global_step / self.args.teacher_steps
        return self.args.teacher_coef * max(0.0, left)

    def _potential(self) -> torch.Tensor:
        """Φ = dice_shaping · (own dice − the others' mean dice) ÷ D, per game."""
        dice = self.env.dice_left.float()
        own = dice.gather(1, self.learner[:, None]).squeeze(1)
        others = (dice.sum(1) - own) / (self.rules.num_players - 1)
        return self.args.dice_shaping * (own - others) / self.rules.dice_per_player

    def train(self) -> dict[str, Any]:
        """Runs the training loop to ``total_steps``; returns the final evaluation.

        Runs on ``torch_threads`` threads (``learn_threads`` for the updates) and gives
        the caller's thread setting back when it returns.
        """
        with using_threads(self.threads):
            return self._train()

    def _train(self) -> dict[str, Any]:
        from torch.utils.tensorboard import SummaryWriter

        args, env, device = self.args, self.env, self.device
        self.run_dir.mkdir(parents=True, exist_ok=True)
        (self.run_dir / "config.json").write_text(json.dumps(dataclasses.asdict(args), indent=2))
        writer = SummaryWriter(str(self.run_dir))
        t, b = args.num_steps, args.num_envs
        obs_buf = torch.zeros((t, b, env.observation_size), device=device)
        feat_buf = torch.zeros((t, b, self.policy.features_size), device=device)
        mask_buf = torch.zeros((t, b, env.num_actions), dtype=torch.bool, device=device)
        act_buf = torch.zeros((t, b), dtype=torch.long, device=device)
        logp_buf = torch.zeros((t, b), device=device)
        val_buf = torch.zeros((t, b), device=device)
        rew_buf = torch.zeros((t, b), device=device)
        done_buf = torch.zeros((t, b), device=device)
        teach_buf = torch.zeros((t, b), dtype=torch.long, device=device)
        every_row = torch.arange(b, device=device)
        ep_return = torch.zeros(b, device=device)

        obs, mask = env.reset()
        self.potential = torch.zeros(b, device=device)
        obs, mask = self._advance(
            obs,
            mask,
            torch.zeros(b, device=device),
            torch.zeros(b, dtype=torch.bool, device=device),
        )
        bar = _progress_bar(args.progress, self.num_updates * self.batch_size, self.global_step)
        start_time, start_step = time.perf_counter(), self.global_step
        latest_eval = ""
        while self.update < self.num_updates:
            if args.anneal_lr:
                frac = 1.0 - self.update / self.num_updates
                self.optimizer.param_groups[0]["lr"] = frac * args.learning_rate
            teaching = self._teacher_weight()
            for step in range(t):
                obs_buf[step], mask_buf[step] = obs, mask
                if teaching:
                    teach_buf[step] = self.teacher.act(mask, every_row, obs)
                with torch.no_grad():
                    features = self.policy.input_features(obs)
                    if features is not None:
                        feat_buf[step] = features
                    logits, value = self.policy(obs, mask, features)
                    action = sample_actions(logits, self.generator)
                    logp_buf[step] = (
                        torch.log_softmax(logits, -1).gather(1, action[:, None]).squeeze(1)
                    )
                act_buf[step], val_buf[step] = action, value
                rewards_acc = torch.zeros(b, device=device)
                dones_acc = torch.zeros(b, dtype=torch.bool, device=device)
                obs, mask, rewards, dones, _ = env.step(action)
                obs, mask = self._settle(obs, mask, rewards, dones, rewards_acc, dones_acc)
                obs, mask = self._advance(obs, mask, rewards_acc, dones_acc)
                rew_buf[step], done_buf[step] = rewards_acc, dones_acc.float()
                ep_return += rewards_acc
                if bool(dones_acc.any()):
                    self.episode_returns += ep_return[dones_acc].tolist()
                    ep_return[dones_acc] = 0.0
            self.global_step += self.batch_size
            buffers = (obs_buf, feat_buf, mask_buf, act_buf, logp_buf, val_buf, rew_buf, done_buf)
            with using_threads(self.learn_threads):
                stats = self._learn(obs, mask, *buffers, teach_buf=teach_buf, teaching=teaching)
            self.update += 1
            if args.pool_size and self.update % args.snapshot_every == 0:
                self.league.add(
                    Member(f"snapshot@{self.global_step}", "snapshot", net=frozen_copy(self.policy))
                )
            sps = (self.global_step - start_step) / (time.perf_counter() - start_time)
            stats.update(steps_per_second=sps, episodes=len(self.episode_returns))
            if self.episode_returns:
                recent = self.episode_returns[-1000:]
                stats["mean_return"] = float(np.mean(recent))
                stats["win_fraction"] = float(np.mean(np.array(recent) > 0))
            for key, value in stats.items():
                writer.add_scalar(f"train/{key}", value, self.global_step)
            if args.exploiter_every and self.update % args.exploiter_every == 0:
                self._train_exploiter(writer)
            if (
                args.eval_every
                and self.update % args.eval_every == 0
                or self.update == self.num_updates
            ):
                latest_eval = self._periodic_eval(writer)
            if self.update % args.checkpoint_every == 0 or self.update == self.num_updates:
                self._checkpoint()
            bar.set_postfix_str(f"{sps:,.0f} steps/s {latest_eval}".strip(), refresh=False)
            bar.update(self.batch_size)
        bar.close()
        writer.close()
        self.plot_learning_curve()
        return self.final_evaluation()

    def _learn(
        self,
        next_obs,
        next_mask,
        obs_buf,
        feat_buf,
        mask_buf,
        act_buf,
        logp_buf,
        val_buf,
        rew_buf,
        done_buf,
        teach_buf=None,
        teaching: float = 0.0,
    ) -> dict[str, float]:
        """GAE and the clipped PPO update on one rollout (+ the teacher's imitation loss)."""
        args = self.args
        with torch.no_grad():
            _, next_value = self.policy(next_obs, next_mask)
            advantages = torch.zeros_like(rew_buf)
            last = torch.zeros_like(next_value)
            for step in reversed(range(args.num_steps)):
                following = next_value if step == args.num_steps - 1 else val_buf[step + 1]
                nonterminal = 1.0 - done_buf[step]
                delta = rew_buf[step] + args.gamma * following * nonterminal - val_buf[step]
                last = delta + args.gamma * args.gae_lambda * nonterminal * last
                advantages[step] = last
            returns = advantages + val_buf
        b_obs = obs_buf.reshape(-1, obs_buf.shape[-1])
        b_feat = feat_buf.reshape(-1, feat_buf.shape[-1])
        has_features = b_feat.shape[-1] > 0
        b_mask = mask_buf.reshape(-1, mask_buf.shape[-1])
        b_act, b_logp = act_buf.reshape(-1), logp_buf.reshape(-1)
        b_adv, b_ret, b_val = advantages.reshape(-1), returns.reshape(-1), val_buf.reshape(-1)
        b_teach = teach_buf.reshape(-1) if teaching else None
        minibatch = self.batch_size // args.num_minibatches
        clipfracs, teacher_losses, agreement = [], [], []
        for _ in range(args.update_epochs):
            order = torch.randperm(self.batch_size, device=self.device, generator=self.generator)
            for start in range(0, self.batch_size, minibatch):
                idx = order[start : start + minibatch]
                feats = b_feat[idx] if has_features else None
                logits, value = self.policy(b_obs[idx], b_mask[idx], feats)
                logp_all = torch.log_softmax(logits, -1)
                new_logp = logp_all.gather(1, b_act[idx, None]).squeeze(1)
                log_ratio = new_logp - b_logp[idx]
                ratio = log_ratio.exp()
                with torch.no_grad():
                    approx_kl = ((ratio - 1) - log_ratio).mean()
                    clipfracs.append(((ratio - 1.0).abs() > args.clip_coef).float().mean().item())
                adv = b_adv[idx]
                adv = (adv - adv.mean()) / (adv.std() + 1e-8)
                pg_loss = torch.max(
                    -adv * ratio, -adv * ratio.clamp(1 - args.clip_coef, 1 + args.clip_coef)
                ).mean()
                v_loss = 0.5 * ((value - b_ret[idx]) ** 2).mean()
                entropy = masked_entropy(logits, b_mask[idx]).mean()
                loss = pg_loss - args.ent_coef * entropy + args.vf_coef * v_loss
                if b_teach is not None:
                    imitation = nn.functional.cross_entropy(logits, b_teach[idx])
                    loss = loss + teaching * imitation
                    teacher_losses.append(imitation.item())
                    agreement.append((logits.argmax(1) == b_teach[idx]).float().mean().item())
                self.optimizer.zero_grad()
                loss.backward()
                nn.utils.clip_grad_norm_(self.policy.parameters(), args.max_grad_norm)
                self.optimizer.step()
        var_y = b_ret.var()
        explained = float("nan") if var_y == 0 else float(1 - (b_ret - b_val).var() / var_y)
        teacher_stats = (
            {
                "teacher_weight": teaching,
                "teacher_loss": float(np.mean(teacher_losses)),
                "teacher_agreement": float(np.mean(agreement)),
            }
            if b_teach is not None
            else {}
        )
        return {
            **teacher_stats,
            "policy_loss": pg_loss.item(),
            "value_loss": v_loss.item(),
            "entropy": entropy.item(),
            "approx_kl": approx_kl.item(),
            "clipfrac": float(np.mean(clipfracs)),
            "explained_variance": explained,
            "learning_rate": self.optimizer.param_groups[0]["lr"],
        }

    # -------------------------------------------------------------- exploiters
    def _train_exploiter(self, writer) -> dict[str, Any]:
        """Trains a fresh learner against the frozen main policy; promotes it if it wins.

        The exploiter's own run (logs, checkpoints) goes to
        ``runs/<run>/exploiters/<k>``; its result is logged under ``league/``.
        """
        args = self.args
        k = self.exploiters
        self.exploiters += 1
        main = Member(f"main@{self.global_step}", "checkpoint", net=frozen_copy(self.policy))
        sub_args = dataclasses.replace(
            args,
            run_name=f"{args.run_name}/exploiters/{k}",
            total_steps=args.exploiter_steps,
            seed=args.seed + 1000 + k,
            dice_shaping=args.exploiter_dice_shaping,
            teacher="",
            self_play=0.0,
            league=[],
            pool_size=0,
            exploiter_every=0,
            eval_every=0,
            eval_opponents=[],
            final_eval_games=0,
            compare_checkpoint="",
            progress=False,
        )
        init = self.policy if args.exploiter_init == "main" else None
        exploiter = Trainer(sub_args, opponents=[main], init=init)
        exploiter.train()
        frozen = frozen_copy(exploiter.policy)
        result = play_match(
            Member("exploiter", "checkpoint", net=frozen),
            main,
            self.rules,
            args.exploiter_eval_games,
            seed=20_000 + k,
            device=self.device,
            threads=self.threads,
        )
        parity = 1.0 / self.rules.num_players
        promoted = result["win_rate"] >= parity + args.exploiter_margin
        if promoted:
            self.league.add(Member(f"exploiter{k}@{self.global_step}", "exploiter", net=frozen))
        writer.add_scalar("league/exploiter_win_rate", result["win_rate"], self.global_step)
        writer.add_scalar("league/exploiter_promoted", float(promoted), self.global_step)
        tqdm_write(
            f"exploiter {k}: win rate {result['win_rate']:.3f} vs the main policy "
            f"({'joins the league' if promoted else 'not promoted'})"
        )
        return {**result, "promoted": promoted}

    # -------------------------------------------------------------- evaluation
    def _periodic_eval(self, writer) -> str:
        args = self.args
        row: dict[str, Any] = {"update": self.update, "step": self.global_step}
        parts = []
        rates = []
        for opponent in args.eval_opponents:
            result = evaluate_policy(
                self.policy,
                self.rules,
                opponent,
                args.eval_games,
                seed=10_000 + self.update,
                device=args.device,
                threads=self.threads,
            )
            rates.append(result["win_rate"])
            row[f"win_rate_vs_{opponent}"] = result["win_rate"]
            row[f"ci95_lo_vs_{opponent}"], row[f"ci95_hi_vs_{opponent}"] = result["ci95"]
            writer.add_scalar(f"eval/win_rate_vs_{opponent}", result["win_rate"], self.global_step)
            parts.append(f"vs {opponent}: {result['win_rate']:.3f}")
        for member in self.league.table():
            name = member["name"]
            row[f"league_win_rate_vs_{name}"] = member["win_rate"]
            row[f"league_weight_{name}"] = member["weight"]
            writer.add_scalar(f"league/win_rate_vs_{name}", member["win_rate"], self.global_step)
            writer.add_scalar(f"league/weight_{name}", member["weight"], self.global_step)
        self.history.append(row)
        write_metrics(self.run_dir / "metrics.csv", self.history)
        if rates and float(np.mean(rates)) > self.best_win_rate:
            self.best_win_rate = float(np.mean(rates))
            self._checkpoint(name="best")
        return " ".join(parts)

    def plot_learning_curve(self) -> Path | None:
        """Writes ``learning_curve.png``: win rate vs the eval opponents over training."""
        if not self.history:
            return None
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        fig, ax = plt.subplots(figsize=(6.4, 3.8))
        for opponent in self.args.eval_opponents:
            rows = [r for r in self.history if f"win_rate_vs_{opponent}" in r]
            steps = [r["step"] for r in rows]
            rate = [r[f"win_rate_vs_{opponent}"] for r in rows]
            lo = [r[f"ci95_lo_vs_{opponent}"] for r in rows]
            hi = [r[f"ci95_hi_vs_{opponent}"] for r in rows]
            ax.plot(steps, rate, marker="o", label=f"vs {opponent}")
            ax.fill_between(steps, lo, hi, alpha=0.2)
        ax.axhline(1 / self.rules.num_players, color="grey", linestyle="--", label="parity")
        ax.set_xlabel("learner decisions")
        ax.set_ylabel("win rate (95% CI)")
        ax.set_ylim(0, 1)
        ax.set_title(f"{self.args.run_name}: {self.args.rules}, {self.rules.num_players} players")
        ax.legend()
        fig.tight_layout()
        path = self.run_dir / "learning_curve.png"
        fig.savefig(path, dpi=110)
        plt.close(fig)
        return path

    def final_evaluation(self) -> dict[str, Any]:
        """Plays the final table: the new policy (and a shipped one) vs each bot."""
        args = self.args
        table: dict[str, Any] = {"rules": self.rules.to_dict(), "rows": []}
        if args.final_eval_games <= 0:
            return table
        players = {"new policy": self.policy}
        if args.compare_checkpoint:
            try:
                players["shipped " + args.compare_checkpoint], _ = load_policy(
                    args.compare_checkpoint, self.rules, device=self.device
                )
            except CheckpointError as exc:
                print(f"(not comparing with {args.compare_checkpoint}: {exc})")
        for name, net in players.items():
            for bot in BOT_PRESETS:
                result = evaluate_policy(
                    net,
                    self.rules,
                    bot,
                    args.final_eval_games,
                    seed=99,
                    device=args.device,
                    threads=self.threads,
                )
                table["rows"].append({"agent": name, **result})
        (self.run_dir / "final_eval.json").write_text(json.dumps(table, indent=2))
        return table

    # -------------------------------------------------------------- checkpoints
    def _checkpoint(self, name: str | None = None) -> Path:
        args = self.args
        meta = build_meta(
            self.rules,
            self.shape,
            step=self.global_step,
            update=self.update,
            seed=args.seed,
            run_name=args.run_name,
            best_win_rate=self.best_win_rate,
            last_eval=self.history[-1] if self.history else None,
        )
        state = {
            "optimizer": self.optimizer.state_dict(),
            "update": self.update,
            "global_step": self.global_step,
            "best_win_rate": self.best_win_rate,
            "exploiters": self.exploiters,
            **self.league.state(),
            "torch_rng": torch.get_rng_state(),
            "generator": self.generator.get_state(),
            "env_generator": self.env.generator.get_state(),
            "np_rng": json.dumps(self.np_rng.bit_generator.state),
            "history": json.dumps(self.history),
            "episode_returns": torch.tensor(self.episode_returns[-1000:]),
        }
        path = write_checkpoint(
            self.ckpt_dir / (name or f"step_{self.global_step:010d}"), self.policy, meta, state
        )
        if name is None:
            steps = sorted(p for p in self.ckpt_dir.glob("step_*") if p.is_dir())
            for old in steps[: -args.keep_checkpoints]:
                shutil.rmtree(old, ignore_errors=True)
        return path

    def _restore(self) -> None:
        steps = sorted(p for p in self.ckpt_dir.glob("step_*") if p.is_dir())
        if not steps:
            raise CheckpointError(f"no checkpoint to resume in {self.ckpt_dir}")
        path = steps[-1]
        model, meta = load_policy(path, self.rules, device=self.device)
        if meta["network"] != dataclasses.asdict(self.shape):
            raise CheckpointError(f"{path}: network {meta['network']} differs from the config")
        self.policy.load_state_dict(model.state_dict())
        state = load_trainer_state(path)
        if "league" not in state:
            raise CheckpointError(
                f"{path} was saved before league training and cannot be resumed by it"
            )
        self.optimizer.load_state_dict(state["optimizer"])
        self.update, self.global_step = int(state["update"]), int(state["global_step"])
        self.best_win_rate = float(state["best_win_rate"])
        self.exploiters = int(state["exploiters"])
        self.league.load_state(state, self.policy)
        torch.set_rng_state(state["torch_rng"])
        self.generator.set_state(state["generator"])
        self.env.generator.set_state(state["env_generator"])
        self.np_rng.bit_generator.state = json.loads(state["np_rng"])
        self.history = json.loads(state["history"])
        self.episode_returns = state["episode_returns"].tolist()
        print(f"resumed {path} at update {self.update}, step {self.global_step}")


def write_metrics(path: Path, rows: list[dict[str, Any]]) -> None:
    """Writes ``metrics.csv`` anew (temp file, then rename).

    One row per evaluation; the columns are the union of all rows' keys, since league
    members join over time.
    """
    columns: list[str] = []
    for row in rows:
        columns += [key for key in row if key not in columns]
    tmp = path.with_name(f".{path.name}.tmp")
    with open(tmp, "w", newline="") as handle:
        out = csv.DictWriter(handle, fieldnames=columns)
        out.writeheader()
        out.writerows(rows)
    os.replace(tmp, path)


def tqdm_write(message: str) -> None:
    """Prints a line without breaking a progress bar."""
    from tqdm import tqdm

    tqdm.write(message)


def _progress_bar(enabled: bool, total: int, initial: int):
    from tqdm import tqdm

    return tqdm(
        total=total,
        initial=initial,
        unit="step",
        unit_scale=True,
        disable=not enabled,
        dynamic_ncols=True,
        desc="training",
    )


def print_final_table(table: dict[str, Any]) -> None:
    """Prints the final evaluation table with rich."""
    from rich.console import Console
    from rich.table import Table

    out = Table(
        title="final evaluation: agent in one seat, the bot in all others", title_justify="left"
    )
    for column in ("agent", "opponents", "games", "win rate", "95% CI"):
        out.add_column(column, no_wrap=True)
    for row in table["rows"]:
        out.add_row(
            row["agent"],
            row["bot"],
            str(row["games"]),
            f"{row['win_rate']:.3f}",
            f"[{row['ci95'][0]:.3f}, {row['ci95'][1]:.3f}]",
        )
    Console(width=120).print(out)


def build_parser() -> argparse.ArgumentParser:
    """The ``liars-train`` argument parser."""
    parser = argparse.ArgumentParser(prog="liars-train", description=__doc__.splitlines()[0])
    parser.add_argument("--config", help="YAML file of training settings (fields of Args)")
    parser.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="override one setting (repeatable)",
    )
    parser.add_argument(
        "--resume",
        metavar="RUN",
        help="continue the run RUN (its saved config) from its last checkpoint",
    )
    parser.add_argument("--device", help="cpu or cuda (overrides the config)")
    parser.add_argument(
        "--threads",
        type=int,
        metavar="N",
        help="torch threads for the engine, bots and rollouts (overrides torch_threads; "
        "default 1: see liars_env.threads)",
    )
    parser.add_argument(
        "--backend",
        choices=["ours", "rllib"],
        default="ours",
        help="our batched PPO (default) or Ray RLlib (pip install -e '.[rllib]')",
    )
    return parser


def main(argv: list[str] | None = None) -> int:
    """Entry point of ``liars-train``."""
    args_ns = build_parser().parse_args(argv)
    if args_ns.backend == "rllib":
        return _main_rllib(args_ns)
    try:
        sets = list(args_ns.set)
        if args_ns.device:
            sets.append(f"device={args_ns.device}")
        if args_ns.threads is not None:
            sets.append(f"torch_threads={args_ns.threads}")
        if args_ns.resume:
            run = Path(args_ns.resume)
            config_file = (
                run / "config.json" if run.is_dir() else Path("runs") / run / "config.json"
            )
            if not config_file.is_file():
                raise ValueError(
                    f"--resume {args_ns.resume}: no run found (looked for {config_file})"
                )
            saved = json.loads(config_file.read_text())
            saved.update(parse_key_values(sets))
            args = make_args(saved, source=str(config_file))
            trainer = Trainer(args, resume=True)
        else:
            args = load_args(args_ns.config, sets)
            trainer = Trainer(args)
    except (ValueError, CheckpointError) as exc:
        print(f"liars-train: {exc}", file=sys.stderr)
        return 2
    table = trainer.train()
    if table["rows"]:
        print_final_table(table)
    curve = trainer.run_dir / "learning_curve.png"
    print(f"run folder: {trainer.run_dir} (TensorBoard: tensorboard --logdir {args.runs_dir})")
    if curve.exists():
        print(f"learning curve: {curve}")
    return 0


def _main_rllib(args_ns: argparse.Namespace) -> int:
    """``liars-train --backend rllib``: see ``training/rllib_backend.py``."""
    try:
        from training import rllib_backend
    except ImportError as exc:
        print(
            f"liars-train: the rllib backend needs Ray RLlib: pip install -e '.[rllib]' ({exc})",
            file=sys.stderr,
        )
        return 2
    try:
        if args_ns.resume:
            raise ValueError("--resume is not supported with --backend rllib")
        args = load_args(args_ns.config, list(args_ns.set), cls=rllib_backend.RLlibArgs)
        rllib_backend.validate(args)
    except ValueError as exc:
        print(f"liars-train: {exc}", file=sys.stderr)
        return 2
    out = rllib_backend.train(args)
    print(f"RLlib checkpoint: {out['rllib_checkpoint']}")
    print(f"exported policy: {out['exported']} (use checkpoint:{out['exported']} in liars-eval)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
