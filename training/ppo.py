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

This file reads top to bottom: :class:`Args` (every setting, one docstring each), its
checks, then :class:`Trainer` (rollouts against the league, GAE and the clipped PPO
update, exploiters, evaluation, checkpoints). Around it: ``config.py`` (YAML and
``key=value`` loading for both backends), ``league.py`` (opponents, PFSP, batched
matches), ``policy_eval.py`` (win rates against bots), ``checkpoints.py``, ``reports.py``
(metrics, curve, tables) and ``train_cli.py`` (the ``liars-train`` command).
"""

from __future__ import annotations

import dataclasses
import json
import random
import shutil
import time
import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn

from liars_env.agents.batched import check_batched_bot_spec, make_batched_bot
from liars_env.agents.policy import (
    CheckpointError,
    NetworkShape,
    PolicyNet,
    RulesMismatchError,
    build_meta,
    load_policy,
    masked_entropy,
    masked_kl,
    sample_actions,
    transfer_weights,
)
from liars_env.batched import BatchedEnv, resolve_backend
from liars_env.batched.threads import using_threads
from liars_env.rules import PRESETS, RuleSet
from liars_train.checkpoints import load_run_checkpoint, save_run_checkpoint
from liars_train.config import (
    load_settings,
    make_settings,
    refuse_table_size,
    require_non_negative,
    require_positive,
)
from liars_train.evaluation.policy_eval import bot_table, evaluate_policy
from liars_train.league import (
    DEFAULT_GROUP_SHARES,
    League,
    Member,
    check_member_spec,
    frozen_copy,
    member_from_spec,
    play_match,
)
from liars_train.reports import plot_learning_curve, progress_bar, tqdm_write, write_metrics


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
    on a busy one). See :mod:`liars_env.batched.threads`."""
    learn_threads: int = 0
    """Intra-op threads for the PPO update (large matmuls); 0: the same as
    ``torch_threads``. 2 helps on an idle 2-core machine."""
    engine_backend: str = "auto"
    """How the training games are stepped (``BatchedEnv(backend=...)``): ``auto`` (numba's
    compiled loops on the CPU, torch ops on a GPU), ``numba`` or ``torch``. Both play the
    same games for a seed; see :mod:`liars_env.batched.fused`."""
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
    ent_schedule: str = "constant"
    """How the entropy bonus changes over the run: ``constant`` (``ent_coef``) or
    ``linear`` (from ``ent_coef`` at the first update to ``ent_coef_end`` at the last: a
    strong pull toward uniform play early, a small bias at the end)."""
    ent_coef_end: float = 0.0
    """For ``ent_schedule: linear``: the entropy bonus at the end of the run."""
    magnet_coef: float = 0.0
    """α of magnetic mirror descent (Sokota et al., 2023): the loss gets
    ``α_t · KL(π_θ ‖ ρ)`` over the legal actions, pulling the policy toward the magnet
    ``ρ`` (see ``magnet``; ``α_t`` follows ``magnet_schedule``). 0: off. See
    docs/training.md, "Regularized self-play"."""
    magnet: str = "uniform"
    """The magnet ``ρ``: ``uniform`` (uniform over the legal actions; the term is then
    ``α·(log n_legal − entropy)``, an entropy bonus) or ``ema`` (the policy of an
    exponential moving average of the network's own parameters, ``magnet_ema_rate``)."""
    magnet_ema_rate: float = 0.05
    """For ``magnet: ema``: after each update the magnet's parameters move this share of
    the way to the policy's, ``θ_ρ ← (1 − rate)·θ_ρ + rate·θ``; in (0, 1] (1: the
    magnet is the policy of the previous update)."""
    magnet_schedule: str = "constant"
    """How ``α_t`` changes over the run (``u`` updates done of ``U``): ``constant``
    (``α``), ``linear`` (``α·(1 − u/U)``, 0 at the end) or ``power``
    (``α·(1 + u)^(−magnet_power)``, MMD's ``1/√t`` with the default power)."""
    magnet_power: float = 0.5
    """Exponent of the ``power`` schedule; > 0."""
    kl_coef: float = 0.0
    """β: weight of ``KL(π_θ ‖ π_old)``, the KL to the policy that played the rollout
    (MMD's proximal term), estimated on the rollout's actions as
    ``E[r·log r − (r − 1)]`` with ``r = π_θ(a)/π_old(a)``. 0: off."""
    vf_coef: float = 0.5
    """Value loss weight."""
    max_grad_norm: float = 0.5
    """Gradient clipping norm."""
    bf16_update: bool = False
    """Run the network's forward and backward passes of the PPO update in bfloat16
    (``torch.autocast``; losses, optimizer and weights stay float32). About 2× faster on
    CPUs with AMX or AVX512-BF16; see docs/training.md for its effect on learning."""
    hidden_size: int = 256
    """Width of the MLP layers."""
    hidden_layers: int = 2
    """Number of MLP layers."""
    bid_features: bool = True
    """Feed the network each bid's probability from its own dice (see
    ``liars_env.agents.policy.BidProbabilityFeatures``)."""
    belief_features: bool = True
    """Feed the network what the round's bids say about the opponents' dice (see
    ``liars_env.agents.policy.BeliefFeatures``)."""
    self_play: float = 0.2
    """Share of games against the current policy itself; the rest draw a league member
    (see ``training/league.py``)."""
    league: list = field(default_factory=lambda: ["probabilistic", "bayes", "belief"])
    """Fixed league members: bot presets (also with settings changed,
    ``belief:bluff_rate=0.1``) and ``checkpoint:PATH`` (frozen policies)."""
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
    exploiter_learning_rate: float = 0.0
    """Adam learning rate of the exploiters (annealed to 0 over ``exploiter_steps`` if
    ``anneal_lr``); 0: the main learner's ``learning_rate``. A fine-tuning round trains at
    a low rate, and exploiters that inherit it find less than ``liars-exploit``'s best
    responses (3e-4, the default ``learning_rate``): set 3e-4 to hunt the holes the
    measurement finds (docs/training.md, "Exploiters")."""
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
    init_checkpoint: str = ""
    """A checkpoint folder whose weights the learner starts from (fine-tuning a trained
    model under new settings; empty: fresh weights). Its rules and network shape must
    match this config; the league, optimizer and counters start afresh. ``--resume``
    ignores it (the run's own checkpoint wins)."""
    init_other_rules: bool = False
    """Let ``init_checkpoint`` come from a model trained under other rules whose network
    fits (the same observation size, layers and bids): transfer learning, e.g. a
    ``perudo`` model as the start of a ``perudo_palifico`` or ``perudo_calza`` one. The
    network's rule-derived tables (bid features, beliefs) are built for this config's
    rules; the policy head's rows follow the actions' meanings, and an exact call the
    source lacks starts as a rarer challenge (:func:`liars_env.agents.policy.transfer_weights`).
    Off: other rules are a ``RulesMismatchError``."""
    progress: bool = True
    """Show a progress bar."""
    overwrite: bool = False
    """Start afresh in a run folder that already holds checkpoints, deleting them and the
    earlier run's logs, metrics, curve and exploiters (the default refuses: resume it
    with ``--resume``, or pick another ``run_name``)."""

    RETIRED_SETTINGS: typing.ClassVar[dict[str, str]] = {
        "opponent_mix": "the league replaced it: set self_play (share of games against the "
        "current policy), league (bots and checkpoint:PATH) and pool_size/snapshot_every "
        "(snapshots)"
    }

    def validate(self) -> None:
        """Checks value ranges and names (see :func:`validate`); ``ValueError`` if bad."""
        validate(self)


def load_args(config: str | None = None, sets: list[str] | None = None) -> Args:
    """:class:`Args` from a YAML file and ``key=value`` overrides, checked (``ValueError``)."""
    return load_settings(Args, config, sets or ())


def make_args(values: dict[str, Any], source: str = "settings") -> Args:
    """:class:`Args` from a mapping of settings, checked (``ValueError`` naming ``source``)."""
    return make_settings(Args, values, source)


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
            "eval_games",
            "checkpoint_every",
            "keep_checkpoints",
        ),
    )
    require_non_negative(
        args,
        (
            "final_eval_games",
            "torch_threads",
            "learn_threads",
            "eval_every",
            "pfsp_power",
            "teacher_coef",
            "teacher_steps",
            "exploiter_learning_rate",
            "pool_size",
            "exploiter_every",
            "ent_coef",
            "magnet_coef",
            "kl_coef",
            "ent_coef_end",
        ),
    )
    if args.ent_schedule not in ENT_SCHEDULES:
        raise ValueError(
            f"ent_schedule: unknown schedule {args.ent_schedule!r}; expected one of "
            f"{', '.join(ENT_SCHEDULES)}"
        )
    if args.magnet not in MAGNETS:
        raise ValueError(
            f"magnet: unknown magnet {args.magnet!r}; expected one of {', '.join(MAGNETS)}"
        )
    if args.magnet_schedule not in MAGNET_SCHEDULES:
        raise ValueError(
            f"magnet_schedule: unknown schedule {args.magnet_schedule!r}; expected one of "
            f"{', '.join(MAGNET_SCHEDULES)}"
        )
    if not 0.0 < args.magnet_ema_rate <= 1.0:
        raise ValueError(f"magnet_ema_rate must lie in (0, 1], got {args.magnet_ema_rate!r}")
    if not args.magnet_power > 0:
        raise ValueError(f"magnet_power must be > 0, got {args.magnet_power!r}")
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
    if args.teacher:
        try:
            check_batched_bot_spec(args.teacher)
        except ValueError as exc:
            raise ValueError(f"teacher must be empty or a bot with a batched twin: {exc}") from None
    for spec in [*args.league, *args.eval_opponents]:
        check_member_spec(spec)
    if args.self_play < 1.0 and not args.league and not args.pool_size:
        raise ValueError(
            "nobody to play: self_play < 1 needs league members or snapshots (pool_size)"
        )
    try:
        device = torch.device(args.device)
    except RuntimeError:
        raise ValueError(f"device must be cpu or cuda[:N], got {args.device!r}") from None
    if device.type not in ("cpu", "cuda"):
        raise ValueError(f"device must be cpu or cuda[:N], got {args.device!r}")
    if device.type == "cuda" and not torch.cuda.is_available():
        raise ValueError(f"device {args.device!r} asked for, but torch sees no CUDA device")
    resolve_backend(args.engine_backend, device)


MAGNETS = ("uniform", "ema")
"""Values of :attr:`Args.magnet`."""
MAGNET_SCHEDULES = ("constant", "linear", "power")
"""Values of :attr:`Args.magnet_schedule`."""
ENT_SCHEDULES = ("constant", "linear")
"""Values of :attr:`Args.ent_schedule`."""


def updates_of(args: Args) -> int:
    """PPO updates of a run (at least one).

    ``total_steps`` in whole rollouts of ``num_envs × num_steps`` learner decisions.
    """
    return max(1, args.total_steps // (args.num_envs * args.num_steps))


def last_step(args: Args) -> int:
    """Learner decisions when a run ends: the step of its last checkpoint (``step_N``).

    Example:
        >>> last_step(make_args({"total_steps": 6_000_000, "num_envs": 128, "num_steps": 32}))
        5996544
    """
    return updates_of(args) * args.num_envs * args.num_steps


def linear_schedule(start: float, end: float, update: int, num_updates: int) -> float:
    """``start`` at update 0, moving in a straight line to ``end`` at ``num_updates``.

    The learning rate's annealing and the ``linear`` schedules of the magnet and the entropy
    bonus.

    Example:
        >>> linear_schedule(0.4, 0.0, 0, 4), linear_schedule(0.4, 0.0, 2, 4)
        (0.4, 0.2)
    """
    share = update / num_updates
    return (1.0 - share) * start + share * end


def magnet_weight(args: Args, update: int, num_updates: int) -> float:
    """``α_t``, the magnet term's weight at update ``update`` of ``num_updates``.

    Example:
        >>> args = Args(magnet_coef=0.2, magnet_schedule="linear")
        >>> magnet_weight(args, 0, 4), magnet_weight(args, 3, 4)
        (0.2, 0.05)
        >>> magnet_weight(Args(magnet_coef=0.2, magnet_schedule="power"), 3, 4)
        0.1
    """
    if args.magnet_schedule == "linear":
        return linear_schedule(args.magnet_coef, 0.0, update, num_updates)
    if args.magnet_schedule == "power":
        return args.magnet_coef * (1.0 + update) ** -args.magnet_power
    return args.magnet_coef


def entropy_weight(args: Args, update: int, num_updates: int) -> float:
    """The entropy bonus's weight at update ``update`` of ``num_updates``.

    Example:
        >>> entropy_weight(Args(ent_coef=0.05), 3, 4)
        0.05
        >>> args = Args(ent_coef=0.05, ent_schedule="linear", ent_coef_end=0.01)
        >>> entropy_weight(args, 0, 4), round(entropy_weight(args, 3, 4), 6)
        (0.05, 0.02)
    """
    if args.ent_schedule == "linear":
        return linear_schedule(args.ent_coef, args.ent_coef_end, update, num_updates)
    return args.ent_coef


def ppo_loss(
    args: Args,
    logits: torch.Tensor,
    value: torch.Tensor,
    mask: torch.Tensor,
    actions: torch.Tensor,
    old_logp: torch.Tensor,
    advantages: torch.Tensor,
    returns: torch.Tensor,
    magnet_logits: torch.Tensor | None = None,
    alpha: float = 0.0,
    ent_coef: float | None = None,
) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """The loss of one minibatch: clipped surrogate, value, entropy and the MMD terms.

    ``loss = pg − ent_coef·H + vf_coef·v + α·KL(π_θ ‖ ρ) + kl_coef·KL(π_θ ‖ π_old)``; a
    term whose weight is 0 is not computed, so with ``α = kl_coef = 0`` this is PPO's
    loss exactly.

    Args:
        args: The settings (``clip_coef``, ``ent_coef``, ``vf_coef``, ``kl_coef``).
        logits: The policy's masked logits, ``(B, A)``.
        value: The value head, ``(B,)``.
        mask: Legal actions, ``(B, A)`` bool.
        actions: The rollout's actions, ``(B,)``.
        old_logp: Their log-probabilities under the policy that played them.
        advantages: Normalized advantages.
        returns: Value targets.
        magnet_logits: The magnet's masked logits (``None``: the uniform magnet).
        alpha: ``α_t``, the magnet term's weight now.
        ent_coef: The entropy bonus's weight now (``None``: ``args.ent_coef``).

    Returns:
        The loss and its terms (``pg``, ``value``, ``entropy``, ``approx_kl``,
        ``ratio``; ``magnet_kl`` and ``prev_kl`` where computed).
    """
    logp_all = torch.log_softmax(logits, -1)
    new_logp = logp_all.gather(1, actions[:, None]).squeeze(1)
    log_ratio = new_logp - old_logp
    ratio = log_ratio.exp()
    pg_loss = torch.max(
        -advantages * ratio, -advantages * ratio.clamp(1 - args.clip_coef, 1 + args.clip_coef)
    ).mean()
    v_loss = 0.5 * ((value - returns) ** 2).mean()
    entropy = masked_entropy(logits, mask).mean()
    ent_coef = args.ent_coef if ent_coef is None else ent_coef
    loss = pg_loss - ent_coef * entropy + args.vf_coef * v_loss
    terms = {"pg": pg_loss, "value": v_loss, "entropy": entropy, "ratio": ratio}
    with torch.no_grad():
        terms["approx_kl"] = ((ratio - 1) - log_ratio).mean()
    if alpha:
        magnet_kl = masked_kl(logits, magnet_logits, mask).mean()
        loss = loss + alpha * magnet_kl
        terms["magnet_kl"] = magnet_kl
    if args.kl_coef:
        prev_kl = (ratio * log_ratio - (ratio - 1)).mean()
        loss = loss + args.kl_coef * prev_kl
        terms["prev_kl"] = prev_kl
    return loss, terms


@torch.no_grad()
def follow_ema(magnet: nn.Module, policy: nn.Module, rate: float) -> None:
    """Moves ``magnet``'s parameters ``rate`` of the way to ``policy``'s (an EMA step).

    Example:
        >>> a, b = nn.Linear(1, 1), nn.Linear(1, 1)
        >>> with torch.no_grad():
        ...     _ = a.weight.fill_(0.0), b.weight.fill_(1.0)
        >>> follow_ema(a, b, 0.25)
        >>> a.weight.item()
        0.25
    """
    for mine, theirs in zip(magnet.parameters(), policy.parameters(), strict=True):
        mine.lerp_(theirs, rate)


def game_rules(args: Args) -> RuleSet:
    """The rule set a run trains on (``ValueError`` for bad ``rule_overrides``)."""
    refuse_table_size(args.rule_overrides, "rule_overrides:", "num_players")
    return RuleSet.preset(args.rules, num_players=args.num_players, **args.rule_overrides)


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
            backend=args.engine_backend,
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
        source = "init network"
        if init is None and args.init_checkpoint and not resume:
            if not Path(args.init_checkpoint).is_dir():  # checked here: --resume ignores it
                raise ValueError(
                    f"init_checkpoint {args.init_checkpoint!r} is not a checkpoint folder "
                    "(expected a folder with model.safetensors and meta.json)"
                )
            check = None if args.init_other_rules else self.rules
            try:
                init, _ = load_policy(args.init_checkpoint, check, device=self.device)
            except RulesMismatchError as exc:
                raise RulesMismatchError(
                    f"init_checkpoint: {exc} (set init_other_rules: true to start from it "
                    "anyway, if the network's shape fits)"
                ) from None
            source = f"init_checkpoint {args.init_checkpoint}"
        if init is not None and init.rules != self.rules:  # init_other_rules: transfer
            try:
                transfer_weights(init, self.policy)
            except ValueError as exc:
                raise ValueError(f"{source}: {exc}") from None
        elif init is not None:
            if init.shape != self.shape:
                raise ValueError(
                    f"{source}: network {init.shape} differs from the config {self.shape}"
                )
            self.policy.load_state_dict(init.state_dict())
        self.optimizer = torch.optim.Adam(self.policy.parameters(), lr=args.learning_rate, eps=1e-5)
        self.magnet_net = (
            frozen_copy(self.policy) if args.magnet_coef and args.magnet == "ema" else None
        )
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
        for spec in args.eval_opponents:  # a bad checkpoint fails now, not hours later
            if spec.startswith("checkpoint:") and spec not in args.league:
                try:
                    member_from_spec(spec, self.rules, self.device)
                except CheckpointError as exc:
                    raise CheckpointError(f"eval_opponents: {exc}") from None
        for member in opponents or []:
            self.league.add(member)
        self.league.assign(np.arange(args.num_envs))
        self.learner = torch.arange(args.num_envs, device=self.device) % self.rules.num_players
        self.batch_size = args.num_envs * args.num_steps
        self.num_updates = updates_of(args)
        self.update = 0
        self.global_step = 0
        self.best_win_rate = -1.0
        self.exploiters = 0
        self.history: list[dict[str, Any]] = []
        self.episode_returns: list[float] = []
        if resume:
            self._restore()
        elif self.ckpt_dir.is_dir() and any(self.ckpt_dir.iterdir()):
            if not args.overwrite:
                raise ValueError(
                    f"run folder {self.run_dir} already holds checkpoints: continue it with "
                    f"--resume {self.run_dir}, choose another run_name, or set overwrite=true "
                    "to delete them and start afresh"
                )
            self._clear_run_outputs()

    def _clear_run_outputs(self) -> None:
        """Deletes what an earlier run left in the run folder (``overwrite``)."""
        shutil.rmtree(self.ckpt_dir, ignore_errors=True)
        shutil.rmtree(self.run_dir / "exploiters", ignore_errors=True)
        for pattern in ("events.out.tfevents.*", "metrics.csv", "final_eval.json"):
            for path in self.run_dir.glob(pattern):
                path.unlink()
        (self.run_dir / "learning_curve.png").unlink(missing_ok=True)

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
        bar = progress_bar(args.progress, self.num_updates * self.batch_size, self.global_step)
        start_time, start_step = time.perf_counter(), self.global_step
        latest_eval = ""
        while self.update < self.num_updates:
            if args.anneal_lr:
                self.optimizer.param_groups[0]["lr"] = linear_schedule(
                    args.learning_rate, 0.0, self.update, self.num_updates
                )
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
        extra: dict[str, list[float]] = {}
        alpha = magnet_weight(args, self.update, self.num_updates)
        ent_coef = entropy_weight(args, self.update, self.num_updates)
        for _ in range(args.update_epochs):
            order = torch.randperm(self.batch_size, device=self.device, generator=self.generator)
            for start in range(0, self.batch_size, minibatch):
                idx = order[start : start + minibatch]
                feats = b_feat[idx] if has_features else None
                with torch.autocast(
                    self.device.type, dtype=torch.bfloat16, enabled=args.bf16_update
                ):
                    logits, value = self.policy(b_obs[idx], b_mask[idx], feats)
                logits, value = logits.float(), value.float()
                magnet_logits = None
                if alpha and self.magnet_net is not None:
                    with torch.no_grad():
                        magnet_logits, _ = self.magnet_net(b_obs[idx], b_mask[idx], feats)
                adv = b_adv[idx]
                adv = (adv - adv.mean()) / (adv.std() + 1e-8)
                loss, terms = ppo_loss(
                    args,
                    logits,
                    value,
                    b_mask[idx],
                    b_act[idx],
                    b_logp[idx],
                    adv,
                    b_ret[idx],
                    magnet_logits,
                    alpha,
                    ent_coef,
                )
                with torch.no_grad():
                    ratio = terms["ratio"]
                    clipfracs.append(((ratio - 1.0).abs() > args.clip_coef).float().mean().item())
                    for key in ("magnet_kl", "prev_kl"):
                        if key in terms:
                            extra.setdefault(key, []).append(terms[key].item())
                if b_teach is not None:
                    imitation = nn.functional.cross_entropy(logits, b_teach[idx])
                    loss = loss + teaching * imitation
                    teacher_losses.append(imitation.item())
                    agreement.append((logits.argmax(1) == b_teach[idx]).float().mean().item())
                self.optimizer.zero_grad()
                loss.backward()
                nn.utils.clip_grad_norm_(self.policy.parameters(), args.max_grad_norm)
                self.optimizer.step()
        if self.magnet_net is not None:
            follow_ema(self.magnet_net, self.policy, args.magnet_ema_rate)
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
        magnet_stats = {key: float(np.mean(values)) for key, values in extra.items()}
        if args.magnet_coef:
            magnet_stats["magnet_weight"] = alpha
        return {
            **teacher_stats,
            **magnet_stats,
            "policy_loss": terms["pg"].item(),
            "value_loss": terms["value"].item(),
            "entropy": terms["entropy"].item(),
            "approx_kl": terms["approx_kl"].item(),
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
            learning_rate=args.exploiter_learning_rate or args.learning_rate,
            seed=args.seed + 1000 + k,
            dice_shaping=args.exploiter_dice_shaping,
            teacher="",
            magnet_coef=0.0,  # a best response is not regularized
            kl_coef=0.0,
            self_play=0.0,
            league=[],
            pool_size=0,
            exploiter_every=0,
            eval_every=0,
            eval_opponents=[],
            final_eval_games=0,
            compare_checkpoint="",
            progress=False,
            init_checkpoint="",  # exploiters start from `init` below (main or scratch)
            overwrite=True,  # a half-trained exploiter of a crashed run starts again
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
        return plot_learning_curve(
            self.history,
            self.args.eval_opponents,
            parity=1 / self.rules.num_players,
            title=f"{self.args.run_name}: {self.args.rules}, {self.rules.num_players} players",
            path=self.run_dir / "learning_curve.png",
        )

    def final_evaluation(self) -> dict[str, Any]:
        """Plays the final table: the new policy (and a shipped one) vs each bot."""
        args = self.args
        if args.final_eval_games <= 0:
            return {"rules": self.rules.to_dict(), "rows": []}
        players = {"new policy": self.policy}
        if args.compare_checkpoint:
            try:
                players["shipped " + args.compare_checkpoint], _ = load_policy(
                    args.compare_checkpoint, self.rules, device=self.device
                )
            except CheckpointError as exc:
                print(f"(not comparing with {args.compare_checkpoint}: {exc})")
        table = bot_table(
            players, self.rules, args.final_eval_games, device=args.device, threads=self.threads
        )
        (self.run_dir / "final_eval.json").write_text(json.dumps(table, indent=2))
        return table

    # -------------------------------------------------------------- checkpoints
    def _checkpoint(self, name: str | None = None) -> Path:
        """Saves the network and everything ``--resume`` needs (``best`` or ``step_N``)."""
        meta = build_meta(
            self.rules,
            self.shape,
            step=self.global_step,
            update=self.update,
            seed=self.args.seed,
            run_name=self.args.run_name,
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
        if self.magnet_net is not None:
            state["magnet"] = self.magnet_net.state_dict()
        return save_run_checkpoint(
            self.ckpt_dir, name, self.policy, meta, state, keep=self.args.keep_checkpoints
        )

    def _restore(self) -> None:
        """Continues from the newest ``step_N`` checkpoint (network, optimizer, league, RNGs)."""
        path, state = load_run_checkpoint(self.ckpt_dir, self.policy, self.rules, self.device)
        self.optimizer.load_state_dict(state["optimizer"])
        self.update, self.global_step = int(state["update"]), int(state["global_step"])
        self.best_win_rate = float(state["best_win_rate"])
        self.exploiters = int(state["exploiters"])
        self.league.load_state(state, self.policy)
        self._follow_league_setting()
        torch.set_rng_state(state["torch_rng"])
        self.generator.set_state(state["generator"])
        self.env.generator.set_state(state["env_generator"])
        self.np_rng.bit_generator.state = json.loads(state["np_rng"])
        self.history = json.loads(state["history"])
        self.episode_returns = state["episode_returns"].tolist()
        if self.magnet_net is not None:
            if "magnet" in state:
                self.magnet_net.load_state_dict(state["magnet"])
            else:  # the run was started without an EMA magnet: it starts here
                self.magnet_net.load_state_dict(self.policy.state_dict())
                print("magnet: ema starts from the resumed policy (none was saved)")
        if not self.args.anneal_lr:  # a learning rate set on resume wins over the saved one
            self.optimizer.param_groups[0]["lr"] = self.args.learning_rate
        print(f"resumed {path} at update {self.update}, step {self.global_step}")

    def _follow_league_setting(self) -> None:
        """After a resume, makes the fixed league what ``league`` says now.

        Members still listed keep their saved statistics; members no longer listed
        leave; new ones join afresh. Snapshots and exploiters are kept as saved.
        """
        fixed = ("bot", "checkpoint")
        saved = [m.spec for m in self.league.members if m.kind in fixed]
        wanted = list(self.args.league)
        dropped = [spec for spec in saved if spec not in wanted]
        added = [spec for spec in wanted if spec not in saved]
        for index in reversed(range(len(self.league.members))):
            member = self.league.members[index]
            if member.kind in fixed and member.spec in dropped:
                self.league.remove(index)
        for spec in added:
            self.league.add(member_from_spec(spec, self.rules, self.device))
        if dropped or added:
            self.league.assign(np.arange(self.args.num_envs))
            print(
                f"league changed on resume: left {', '.join(dropped) or 'none'}; "
                f"joined {', '.join(added) or 'none'}"
            )
