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

from liars_env.agents.probabilistic import BOT_PRESETS
from liars_env.batched import BatchedEnv
from liars_env.batched_bots import BatchedProbabilisticBot
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
from training.evaluate import wilson_interval

BATCHED_BOTS = tuple(name for name in BOT_PRESETS if name != "bayes")


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
    torch_threads: int = 0
    """Intra-op threads for torch on the CPU (0: torch's default)."""
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
    opponent_mix: dict = field(
        default_factory=lambda: {"self": 0.2, "pool": 0.3, "probabilistic": 0.5}
    )
    """Weights of opponent kinds, drawn per game: ``self``, ``pool`` and bot names
    (``probabilistic``, ``cautious``, ``bold``)."""
    pool_size: int = 10
    """Frozen snapshots kept in the opponent pool (oldest dropped first)."""
    snapshot_every: int = 10
    """Updates between snapshots added to the pool."""
    eval_every: int = 20
    """Updates between evaluations against the bots (0: only at the end)."""
    eval_games: int = 600
    """Games per periodic evaluation (per bot)."""
    eval_opponents: list = field(default_factory=lambda: ["probabilistic"])
    """Bots evaluated against periodically (all other seats are that bot)."""
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
    for item in sets or []:
        key, eq, raw = item.partition("=")
        if not eq:
            raise ValueError(f"--set {item!r} must look like key=value")
        values[key.strip()] = yaml.safe_load(raw)
    return make_args(values, source=config or "--set", cls=cls)


def make_args(values: dict[str, Any], source: str = "settings", cls: type = None) -> Any:
    """Checks ``values`` against the fields of :class:`Args` (or ``cls``) and builds it."""
    cls = cls or Args
    hints = typing.get_type_hints(cls)
    known = {f.name for f in dataclasses.fields(cls)}
    for key, value in values.items():
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
            "pool_size",
            "snapshot_every",
            "checkpoint_every",
            "keep_checkpoints",
        ),
    )
    if (args.num_envs * args.num_steps) % args.num_minibatches:
        raise ValueError(
            f"num_envs × num_steps ({args.num_envs * args.num_steps}) must divide into "
            f"num_minibatches ({args.num_minibatches})"
        )
    kinds = ("self", "pool", *BATCHED_BOTS)
    if not args.opponent_mix:
        raise ValueError("opponent_mix must name at least one opponent kind")
    for kind, weight in args.opponent_mix.items():
        if kind not in kinds:
            raise ValueError(
                f"opponent_mix: unknown opponent {kind!r}; expected some of {', '.join(kinds)}"
            )
        if not isinstance(weight, (int, float)) or isinstance(weight, bool) or weight < 0:
            raise ValueError(
                f"opponent_mix: weight of {kind!r} must be a number >= 0, got {weight!r}"
            )
    if sum(args.opponent_mix.values()) <= 0:
        raise ValueError("opponent_mix weights must not all be zero")
    for bot in args.eval_opponents:
        if bot not in BATCHED_BOTS:
            raise ValueError(
                f"eval_opponents: unknown bot {bot!r}; expected some of {', '.join(BATCHED_BOTS)}"
            )
    if args.device.startswith("cuda") and not torch.cuda.is_available():
        raise ValueError(f"device {args.device!r} asked for, but torch sees no CUDA device")


def require_positive(args: Any, names: tuple[str, ...]) -> None:
    """Raises ``ValueError`` for the first of the fields ``names`` of ``args`` below 1."""
    for name in names:
        if getattr(args, name) < 1:
            raise ValueError(f"{name} must be at least 1, got {getattr(args, name)}")


def game_rules(args: Args) -> RuleSet:
    """The rule set a run trains on."""
    return RuleSet.preset(args.rules, num_players=args.num_players, **args.rule_overrides)


# ------------------------------------------------------------------------- opponents
class Opponents:
    """Chooses and plays the non-learner seats of every game.

    Each game slot draws one opponent kind from ``opponent_mix`` when its game starts:
    the current policy (``self``), the pool snapshot of the current rollout (``pool``,
    drawn uniformly from the pool at every rollout; the current policy while the pool is
    empty), or a bot.
    """

    def __init__(self, args: Args, env: BatchedEnv, rng: np.random.Generator) -> None:
        self.env = env
        self.rng = rng
        self.kinds = list(args.opponent_mix)
        weights = np.array([args.opponent_mix[k] for k in self.kinds], dtype=float)
        self.weights = weights / weights.sum()
        self.bots = {
            name: BatchedProbabilisticBot(env, name, seed=args.seed + i)
            for i, name in enumerate(self.kinds)
            if name in BATCHED_BOTS
        }
        self.pool: list[PolicyNet] = []
        self.pool_size = args.pool_size
        self.kind = np.zeros(env.num_envs, dtype=np.int64)
        self.snapshot = 0
        self.redraw(np.arange(env.num_envs))

    def new_rollout(self) -> None:
        """Draws the pool snapshot that plays ``pool`` games during the next rollout."""
        self.snapshot = int(self.rng.integers(0, max(1, len(self.pool))))

    def redraw(self, slots: np.ndarray) -> None:
        """Draws new opponents for the game slots ``slots``."""
        if len(slots) == 0:
            return
        self.kind[slots] = self.rng.choice(len(self.kinds), size=len(slots), p=self.weights)

    def add_snapshot(self, model: PolicyNet) -> None:
        """Freezes a copy of ``model`` into the pool."""
        frozen = PolicyNet(model.shape, model.rules).to(self.env.device)
        frozen.load_state_dict(model.state_dict())
        frozen.eval()
        self.pool.append(frozen)
        if len(self.pool) > self.pool_size:
            self.pool.pop(0)
        self.snapshot = min(self.snapshot, len(self.pool) - 1)

    @torch.no_grad()
    def act(
        self,
        policy: PolicyNet,
        obs: torch.Tensor,
        mask: torch.Tensor,
        rows: np.ndarray,
        generator: torch.Generator,
    ) -> torch.Tensor:
        """Actions for the opponents to act in games ``rows`` (full-batch tensor)."""
        device = self.env.device
        actions = torch.zeros(self.env.num_envs, dtype=torch.long, device=device)
        for k, kind in enumerate(self.kinds):
            sel = rows[self.kind[rows] == k]
            if len(sel) == 0:
                continue
            if kind in self.bots:
                idx = torch.as_tensor(sel, device=device)
                actions[idx] = self.bots[kind].act(mask, idx)
                continue
            net = policy if kind == "self" or not self.pool else self.pool[self.snapshot]
            idx = torch.as_tensor(sel, device=device)
            logits, _ = net(obs[idx], mask[idx])
            actions[idx] = sample_actions(logits, generator)
        return actions


# ------------------------------------------------------------------------- evaluation
@torch.no_grad()
def evaluate_policy(
    policy: PolicyNet, rules: RuleSet, bot: str, games: int, seed: int, device: str = "cpu"
) -> dict[str, Any]:
    """Win rate of ``policy`` in one seat against ``bot`` in all others (batched).

    Seats rotate over the game slots; a game in which the policy is eliminated counts as
    a loss at once (and the slot starts a new game).
    """
    n = rules.num_players
    slots = min(games, 512)
    slots -= slots % n or 0
    slots = max(slots, n)
    env = BatchedEnv(rules, num_envs=slots, device=device, seed=seed, check_actions=False)
    bot_player = BatchedProbabilisticBot(env, bot, seed=seed)
    gen = torch.Generator(device=device).manual_seed(seed)
    learner = torch.arange(slots, device=device) % n
    obs, mask = env.reset()
    wins = played = 0
    was_training = policy.training
    policy.eval()
    while played < games:
        mine = env.current_player == learner
        actions = torch.zeros(slots, dtype=torch.long, device=device)
        if bool(mine.any()):
            idx = mine.nonzero().squeeze(1)
            logits, _ = policy(obs[idx], mask[idx])
            actions[idx] = sample_actions(logits, gen)
        other = (~mine).nonzero().squeeze(1)
        actions[other] = bot_player.act(mask, other)
        obs, mask, _, dones, info = env.step(actions)
        out = (env.dice_left.gather(1, learner[:, None]).squeeze(1) == 0) & ~dones
        won = dones & (info["winner"] == learner)
        wins += int(won.sum())
        played += int(dones.sum()) + int(out.sum())
        if bool(out.any()):
            env.reset_games(out)
            obs, mask = env.observe(), env.legal_mask()
    policy.train(was_training)
    lo, hi = wilson_interval(wins, played)
    return {"bot": bot, "games": played, "wins": wins, "win_rate": wins / played, "ci95": [lo, hi]}


# ------------------------------------------------------------------------- training
class Trainer:
    """State and loop of one training run (see the module docstring)."""

    def __init__(self, args: Args, resume: bool = False) -> None:
        self.args = args
        self.rules = game_rules(args)
        self.run_dir = Path(args.runs_dir) / args.run_name
        self.ckpt_dir = self.run_dir / "checkpoints"
        if args.torch_threads:
            torch.set_num_threads(args.torch_threads)
        random.seed(args.seed)
        torch.manual_seed(args.seed)
        self.device = torch.device(args.device)
        self.env = BatchedEnv(
            self.rules,
            num_envs=args.num_envs,
            device=self.device,
            seed=args.seed,
            check_actions=False,
        )
        self.shape = NetworkShape(
            self.env.observation_size,
            self.env.num_actions,
            args.hidden_size,
            args.hidden_layers,
            args.bid_features,
        )
        self.policy = PolicyNet(self.shape, self.rules).to(self.device)
        self.optimizer = torch.optim.Adam(self.policy.parameters(), lr=args.learning_rate, eps=1e-5)
        self.np_rng = np.random.default_rng(args.seed)
        self.generator = torch.Generator(device=self.device).manual_seed(args.seed)
        self.opponents = Opponents(args, self.env, self.np_rng)
        self.learner = torch.arange(args.num_envs, device=self.device) % self.rules.num_players
        self.batch_size = args.num_envs * args.num_steps
        self.num_updates = max(1, args.total_steps // self.batch_size)
        self.update = 0
        self.global_step = 0
        self.best_win_rate = -1.0
        self.history: list[dict[str, Any]] = []
        self.episode_returns: list[float] = []
        if resume:
            self._restore()

    # -------------------------------------------------------------- rollouts
    def _advance(self, obs, mask, rewards_acc, dones_acc):
        """Steps the opponents until the learner is to act in every game.

        Rewards the learner earns meanwhile go to ``rewards_acc``; a game that ends for
        the learner (game over, or the learner out) sets ``dones_acc`` and the slot gets
        a new game (and new opponents).
        """
        env, learner = self.env, self.learner
        for _ in range(64 * self.rules.num_players):
            waiting = env.current_player != learner
            if not bool(waiting.any()):
                return obs, mask
            rows = waiting.nonzero().squeeze(1).cpu().numpy()
            actions = self.opponents.act(self.policy, obs, mask, rows, self.generator)
            obs, mask, rewards, dones, _ = env.step(actions, active=waiting)
            obs, mask = self._settle(obs, mask, rewards, dones, rewards_acc, dones_acc)
        raise RuntimeError("opponents did not hand the turn back to the learner")

    def _settle(self, obs, mask, rewards, dones, rewards_acc, dones_acc):
        """Books the learner's rewards and ends games the learner has left."""
        env, learner = self.env, self.learner
        rewards_acc += rewards.gather(1, learner[:, None]).squeeze(1)
        out = (env.dice_left.gather(1, learner[:, None]).squeeze(1) == 0) & ~dones
        finished = dones | out
        dones_acc |= finished
        if bool(finished.any()):
            if bool(out.any()):
                env.reset_games(out)
                obs, mask = env.observe(), env.legal_mask()
            self.opponents.redraw(finished.nonzero().squeeze(1).cpu().numpy())
        return obs, mask

    def train(self) -> dict[str, Any]:
        """Runs the training loop to ``total_steps``; returns the final evaluation."""
        from torch.utils.tensorboard import SummaryWriter

        args, env, device = self.args, self.env, self.device
        self.run_dir.mkdir(parents=True, exist_ok=True)
        (self.run_dir / "config.json").write_text(json.dumps(dataclasses.asdict(args), indent=2))
        writer = SummaryWriter(str(self.run_dir))
        csv_path = self.run_dir / "metrics.csv"
        t, b = args.num_steps, args.num_envs
        obs_buf = torch.zeros((t, b, env.observation_size), device=device)
        mask_buf = torch.zeros((t, b, env.num_actions), dtype=torch.bool, device=device)
        act_buf = torch.zeros((t, b), dtype=torch.long, device=device)
        logp_buf = torch.zeros((t, b), device=device)
        val_buf = torch.zeros((t, b), device=device)
        rew_buf = torch.zeros((t, b), device=device)
        done_buf = torch.zeros((t, b), device=device)
        ep_return = torch.zeros(b, device=device)

        obs, mask = env.reset()
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
            self.opponents.new_rollout()
            for step in range(t):
                obs_buf[step], mask_buf[step] = obs, mask
                with torch.no_grad():
                    logits, value = self.policy(obs, mask)
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
            stats = self._learn(
                obs, mask, obs_buf, mask_buf, act_buf, logp_buf, val_buf, rew_buf, done_buf
            )
            self.update += 1
            if self.update % args.snapshot_every == 0:
                self.opponents.add_snapshot(self.policy)
            sps = (self.global_step - start_step) / (time.perf_counter() - start_time)
            stats.update(steps_per_second=sps, episodes=len(self.episode_returns))
            if self.episode_returns:
                recent = self.episode_returns[-1000:]
                stats["mean_return"] = float(np.mean(recent))
                stats["win_fraction"] = float(np.mean(np.array(recent) > 0))
            for key, value in stats.items():
                writer.add_scalar(f"train/{key}", value, self.global_step)
            if (
                args.eval_every
                and self.update % args.eval_every == 0
                or self.update == self.num_updates
            ):
                latest_eval = self._periodic_eval(writer, csv_path)
            if self.update % args.checkpoint_every == 0 or self.update == self.num_updates:
                self._checkpoint()
            bar.set_postfix_str(f"{sps:,.0f} steps/s {latest_eval}".strip(), refresh=False)
            bar.update(self.batch_size)
        bar.close()
        writer.close()
        self.plot_learning_curve()
        return self.final_evaluation()

    def _learn(
        self, next_obs, next_mask, obs_buf, mask_buf, act_buf, logp_buf, val_buf, rew_buf, done_buf
    ) -> dict[str, float]:
        """GAE and the clipped PPO update on one rollout."""
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
        b_mask = mask_buf.reshape(-1, mask_buf.shape[-1])
        b_act, b_logp = act_buf.reshape(-1), logp_buf.reshape(-1)
        b_adv, b_ret, b_val = advantages.reshape(-1), returns.reshape(-1), val_buf.reshape(-1)
        minibatch = self.batch_size // args.num_minibatches
        clipfracs = []
        for _ in range(args.update_epochs):
            order = torch.randperm(self.batch_size, device=self.device, generator=self.generator)
            for start in range(0, self.batch_size, minibatch):
                idx = order[start : start + minibatch]
                logits, value = self.policy(b_obs[idx], b_mask[idx])
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
                self.optimizer.zero_grad()
                loss.backward()
                nn.utils.clip_grad_norm_(self.policy.parameters(), args.max_grad_norm)
                self.optimizer.step()
        var_y = b_ret.var()
        explained = float("nan") if var_y == 0 else float(1 - (b_ret - b_val).var() / var_y)
        return {
            "policy_loss": pg_loss.item(),
            "value_loss": v_loss.item(),
            "entropy": entropy.item(),
            "approx_kl": approx_kl.item(),
            "clipfrac": float(np.mean(clipfracs)),
            "explained_variance": explained,
            "learning_rate": self.optimizer.param_groups[0]["lr"],
        }

    # -------------------------------------------------------------- evaluation
    def _periodic_eval(self, writer, csv_path: Path) -> str:
        args = self.args
        row: dict[str, Any] = {"update": self.update, "step": self.global_step}
        parts = []
        for bot in args.eval_opponents:
            result = evaluate_policy(
                self.policy,
                self.rules,
                bot,
                args.eval_games,
                seed=10_000 + self.update,
                device=args.device,
            )
            row[f"win_rate_vs_{bot}"] = result["win_rate"]
            row[f"ci95_lo_vs_{bot}"], row[f"ci95_hi_vs_{bot}"] = result["ci95"]
            writer.add_scalar(f"eval/win_rate_vs_{bot}", result["win_rate"], self.global_step)
            parts.append(f"vs {bot}: {result['win_rate']:.3f}")
        self.history.append(row)
        first = not csv_path.exists()
        with open(csv_path, "a", newline="") as handle:
            out = csv.DictWriter(handle, fieldnames=list(row))
            if first:
                out.writeheader()
            out.writerow(row)
        key = f"win_rate_vs_{args.eval_opponents[0]}" if args.eval_opponents else None
        if key and row[key] > self.best_win_rate:
            self.best_win_rate = row[key]
            self._checkpoint(name="best")
        return " ".join(parts)

    def plot_learning_curve(self) -> Path | None:
        """Writes ``learning_curve.png``: win rate vs the bots over training steps."""
        if not self.history:
            return None
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        fig, ax = plt.subplots(figsize=(6.4, 3.8))
        steps = [r["step"] for r in self.history]
        for bot in self.args.eval_opponents:
            rate = [r[f"win_rate_vs_{bot}"] for r in self.history]
            lo = [r[f"ci95_lo_vs_{bot}"] for r in self.history]
            hi = [r[f"ci95_hi_vs_{bot}"] for r in self.history]
            ax.plot(steps, rate, marker="o", label=f"vs {bot}")
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
            for bot in BATCHED_BOTS:
                result = evaluate_policy(
                    net, self.rules, bot, args.final_eval_games, seed=99, device=args.device
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
        pool = {
            f"pool.{i}.{k}": v.detach().cpu()
            for i, net in enumerate(self.opponents.pool)
            for k, v in net.state_dict().items()
        }
        state = {
            "optimizer": self.optimizer.state_dict(),
            "update": self.update,
            "global_step": self.global_step,
            "best_win_rate": self.best_win_rate,
            "pool_size": len(self.opponents.pool),
            "pool": pool,
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
        self.optimizer.load_state_dict(state["optimizer"])
        self.update, self.global_step = int(state["update"]), int(state["global_step"])
        self.best_win_rate = float(state["best_win_rate"])
        for i in range(int(state["pool_size"])):
            prefix = f"pool.{i}."
            snapshot = PolicyNet(self.shape, self.rules).to(self.device)
            snapshot.load_state_dict(
                {k[len(prefix) :]: v for k, v in state["pool"].items() if k.startswith(prefix)}
            )
            self.opponents.add_snapshot(snapshot)
        torch.set_rng_state(state["torch_rng"])
        self.generator.set_state(state["generator"])
        self.env.generator.set_state(state["env_generator"])
        self.np_rng.bit_generator.state = json.loads(state["np_rng"])
        self.history = json.loads(state["history"])
        self.episode_returns = state["episode_returns"].tolist()
        print(f"resumed {path} at update {self.update}, step {self.global_step}")


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
        if args_ns.resume:
            run = Path(args_ns.resume)
            config_file = (
                run / "config.json" if run.is_dir() else Path("runs") / run / "config.json"
            )
            if not config_file.is_file():
                raise ValueError(
                    f"--resume {args_ns.resume}: no run found (looked for {config_file})"
                )
            import yaml

            saved = json.loads(config_file.read_text())
            for item in sets:
                key, _, raw = item.partition("=")
                saved[key.strip()] = yaml.safe_load(raw)
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
