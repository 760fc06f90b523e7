"""The settings of a training run: :class:`Args`, their checks, and what follows from them.

Every field has one docstring; YAML configs and ``--set key=value`` set them (see
:mod:`liars_train.config`). :func:`updates_of` and :func:`last_step` say how long a run
is, :func:`game_rules` which game it plays.
"""

from __future__ import annotations

import typing
from dataclasses import dataclass, field
from typing import Any

import torch

from liars_env.agents.batched import check_batched_bot_spec
from liars_env.agents.policy import NetworkShape
from liars_env.batched import resolve_backend
from liars_env.rules import PRESETS, RuleSet
from liars_train.config import (
    load_settings,
    make_settings,
    refuse_table_size,
    require_non_negative,
    require_positive,
)
from liars_train.league import DEFAULT_GROUP_SHARES, check_member_spec


@dataclass
class Args:
    """Every setting of a training run (YAML configs set these fields).

    The fields come in groups, in this order:

    - **the run**: ``run_name``, ``runs_dir``, ``seed``, ``device``, ``torch_threads``,
      ``learn_threads``, ``engine_backend``, ``workers``, ``overlap``, ``rollout_split``,
      ``lag_correction``, ``placement_timeout``, ``ray_timeout``;
    - **the game**: ``rules``, ``rule_overrides``, ``num_players``;
    - **PPO**: ``total_steps``, ``num_envs``, ``num_steps``, ``learning_rate``,
      ``anneal_lr``, ``gamma``, ``gae_lambda``, ``num_minibatches``, ``update_epochs``,
      ``clip_coef``, ``ent_coef`` and its schedule, ``vf_coef``, ``max_grad_norm``,
      ``bf16_update``;
    - **regularized self-play**: the magnet (``magnet_coef``, ``magnet``,
      ``magnet_ema_rate``, ``magnet_schedule``, ``magnet_power``) and ``kl_coef``;
    - **the network**: ``hidden_size``, ``hidden_layers``, ``bid_features``,
      ``belief_features``;
    - **the league**: ``self_play``, ``league``, ``pfsp_power``, ``group_shares``,
      ``pool_size``, ``snapshot_every``;
    - **exploiters**: ``exploiter_*``;
    - **shaping and kickstarting**: ``dice_shaping``, ``teacher``, ``teacher_coef``,
      ``teacher_steps``;
    - **evaluation**: ``eval_every``, ``eval_games``, ``eval_opponents``,
      ``final_eval_games``, ``compare_checkpoint``;
    - **checkpoints and starting points**: ``checkpoint_every``, ``keep_checkpoints``,
      ``init_checkpoint``, ``init_other_rules``, ``overwrite``, ``progress``.
    """

    # ------------------------------------------------------------- the run
    run_name: str = "quickstart"
    """Folder under ``runs_dir`` for logs and checkpoints."""
    runs_dir: str = "runs"
    """Where runs are written."""
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
    workers: int = 0
    """Rollout actors on Ray (the ``ray`` extra: ``pip install -e ".[ray]"``), each playing
    its share of the ``num_envs`` games on one CPU; the learner stays in this process, on
    ``device``. 0, the default, plays every game in this process and needs no Ray. Ray
    runs on this machine only (127.0.0.1) unless ``RAY_ADDRESS`` names a cluster. See
    :mod:`liars_train.distributed`."""
    overlap: bool = True
    """With ``workers``: the actors collect the next batch with the weights of now while
    the learner updates on this one, so each batch is played by weights one update old
    (see ``lag_correction``). Off: the actors wait for each update, and ``workers: 1``
    writes the same checkpoints, bit for bit, as ``workers: 0``."""
    rollout_split: str = "games"
    """With ``workers``, how the actors share the collecting. ``games`` (the default): the
    ``num_envs`` games are cut into ``workers`` shares, and every actor plays its share of
    every batch. ``batches``: each actor holds ``num_envs`` games of its own and plays
    whole batches in turn, ``workers`` batches in flight, so each batch is played by
    weights ``workers`` updates old (needs ``overlap``; ``lag_correction`` applies; with
    one worker it is ``games``). A step of the games costs nearly as much for 256 games
    as for 512 (the opponents' and the network's calls), so whole batches cost the
    actors less CPU where ``num_envs`` is small: on a 2-core machine, ``workers: 2``
    runs the quickstart faster this way. ``workers`` times the games are in play, and
    the checkpoints differ from ``games``'."""
    lag_correction: str = "decoupled"
    """How the update treats a batch played by older weights (with ``overlap``):
    ``decoupled`` (the default) takes PPO's clip and the KL to the previous policy
    against the learner's weights at the update's start (the *proximal* policy), weighs
    each decision by π_proximal/π_behaviour, and bootstraps GAE with the critic of now
    (decoupled PPO, Hilton et al. 2021), so the trust region is the same size as without
    the lag; ``none`` takes them against the stored log-probabilities and values of the
    weights that played the batch (a trust region one update behind). Ignored without
    ``overlap``, where the batch is never stale."""
    placement_timeout: float = 60.0
    """With ``workers``: seconds a rollout actor may take to be placed (started on a node
    with a free CPU, and answering). An actor lost with its node that cannot be placed
    again in this time has its share of the games moved to the actors that are left, or
    to this process when none is; the run goes on at the lower rate, and actors are
    started again, up to ``workers``, when capacity comes back."""
    ray_timeout: float = 600.0
    """With ``workers``: seconds any other wait on Ray may take (a collection, an
    evaluation, an actor's generator states) before the work counts as lost: a
    collection is then played again elsewhere, an evaluation run again or skipped."""
    # ------------------------------------------------------------- the game
    rules: str = "perudo"
    """Preset of the game (see ``liars_env.PRESETS``)."""
    rule_overrides: dict = field(default_factory=dict)
    """RuleSet fields to change, e.g. ``{palifico: true}``."""
    num_players: int = 3
    """Seats at the table."""
    # ------------------------------------------------------------- PPO
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
    vf_coef: float = 0.5
    """Value loss weight."""
    max_grad_norm: float = 0.5
    """Gradient clipping norm."""
    bf16_update: bool = False
    """Run the network's forward and backward passes of the PPO update in bfloat16
    (``torch.autocast``; losses, optimizer and weights stay float32). About 2× faster on
    CPUs with AMX or AVX512-BF16; see docs/training.md for its effect on learning."""
    # ------------------------------------------------------------- regularized self-play
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
    # ------------------------------------------------------------- the network
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
    # ------------------------------------------------------------- the league
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
    # ------------------------------------------------------------- exploiters
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
    # ------------------------------------------------------------- shaping and kickstarting
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
    # ------------------------------------------------------------- evaluation
    eval_every: int = 20
    """Updates between evaluations against the bots (0: only at the end)."""
    eval_games: int = 600
    """Games per periodic evaluation (per bot)."""
    eval_opponents: list = field(default_factory=lambda: ["probabilistic", "bayes", "belief"])
    """Opponents evaluated against periodically (all other seats are that opponent):
    bot presets or ``checkpoint:PATH``. The ``best`` checkpoint has the highest mean
    win rate over them."""
    final_eval_games: int = 600
    """Games per row of the final evaluation table, at least (0: skip it): a row's match
    stops once this many games have finished, and the games that end on that same last
    step count too, so a row shows up to a few more (1,000 to 1,007 at 1,000; see
    :func:`liars_train.league.play_match`)."""
    compare_checkpoint: str = ""
    """A shipped checkpoint to include in the final table (empty: none)."""
    # ------------------------------------------------------------- checkpoints and starting points
    checkpoint_every: int = 20
    """Updates between checkpoints."""
    keep_checkpoints: int = 3
    """Most recent checkpoints kept (plus ``best``)."""
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
    overwrite: bool = False
    """Start afresh in a run folder that already holds checkpoints, deleting them and the
    earlier run's logs, metrics, curve and exploiters (the default refuses: resume it
    with ``--resume``, or pick another ``run_name``)."""

    progress: bool = True
    """Show a progress bar."""

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
            "workers",
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
    if args.rollout_split not in ROLLOUT_SPLITS:
        raise ValueError(
            f"rollout_split: unknown split {args.rollout_split!r}; expected one of "
            f"{', '.join(ROLLOUT_SPLITS)}"
        )
    if args.rollout_split == "batches" and args.workers > 1 and not args.overlap:
        raise ValueError(
            "rollout_split: batches needs overlap: true (the actors play whole batches in "
            "turn while the learner updates); without overlap use rollout_split: games"
        )
    if args.lag_correction not in LAG_CORRECTIONS:
        raise ValueError(
            f"lag_correction: unknown correction {args.lag_correction!r}; expected one of "
            f"{', '.join(LAG_CORRECTIONS)}"
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
    for name in ("placement_timeout", "ray_timeout"):
        if not getattr(args, name) > 0:
            raise ValueError(f"{name} must be > 0 seconds, got {getattr(args, name)!r}")
    if args.workers > args.num_envs:
        raise ValueError(
            f"workers ({args.workers}) must not exceed num_envs ({args.num_envs}): each "
            "rollout actor plays at least one game"
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


ROLLOUT_SPLITS = ("games", "batches")
"""Values of :attr:`Args.rollout_split`."""
LAG_CORRECTIONS = ("decoupled", "none")
"""Values of :attr:`Args.lag_correction`."""
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


def game_rules(args: Args) -> RuleSet:
    """The rule set a run trains on (``ValueError`` for bad ``rule_overrides``)."""
    refuse_table_size(args.rule_overrides, "rule_overrides:", "num_players")
    return RuleSet.preset(args.rules, num_players=args.num_players, **args.rule_overrides)


def network_shape(args: Args, env: Any) -> NetworkShape:
    """The policy network's shape for a run's settings on ``env`` (a batched engine)."""
    return NetworkShape(
        env.observation_size,
        env.num_actions,
        args.hidden_size,
        args.hidden_layers,
        args.bid_features,
        args.belief_features,
    )
