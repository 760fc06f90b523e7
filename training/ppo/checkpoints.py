"""A training run's checkpoints: its folders, the trainer's state in them, its restore.

The one home of a run's checkpoints (``liars_train.checkpoints``, its old path, still
imports, with a ``DeprecationWarning``). ``runs/<run>/checkpoints/`` holds ``step_N``
folders (the newest few kept: :func:`save_run_checkpoint`, :func:`step_checkpoints`,
:func:`load_run_checkpoint`) and ``best``, each written atomically by
:func:`liars_env.agents.policy.write_checkpoint` (the network as safetensors, the trainer
state loaded back with ``weights_only=True``). This module says what goes in
``trainer_state.pt`` (:func:`trainer_state`), how it comes back (:func:`restore_state`), how
a resumed run's fixed league follows the ``league`` setting of now
(:func:`follow_league_setting`), the weights a run starts from (:func:`start_from`) and
what ``overwrite`` deletes (:func:`clear_run_outputs`). The format of one checkpoint
folder is :mod:`liars_env.agents.policy`'s; the player that plays one (``checkpoint:PATH``)
is :class:`liars_env.agents.checkpoint.CheckpointAgent`.
"""

from __future__ import annotations

import dataclasses
import json
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch

from liars_env.agents.policy import (
    CheckpointError,
    PolicyNet,
    RulesMismatchError,
    load_policy,
    load_trainer_state,
    transfer_weights,
    write_checkpoint,
)
from liars_env.rules import RuleSet
from liars_train.league import League, member_from_spec
from liars_train.ppo.settings import Args


@dataclass
class Counters:
    """A run's progress: what ``--resume`` continues from, besides weights and generators."""

    update: int = 0
    """PPO updates done."""
    global_step: int = 0
    """Learner decisions played."""
    best_win_rate: float = -1.0
    """The best mean win rate of a periodic evaluation (the ``best`` checkpoint's)."""
    exploiters: int = 0
    """Exploiters trained."""
    history: list[dict[str, Any]] = field(default_factory=list)
    """One row per periodic evaluation (``metrics.csv``)."""
    episode_returns: list[float] = field(default_factory=list)
    """Returns of the learner's finished games."""


def trainer_state(
    counters: Counters,
    optimizer: torch.optim.Optimizer,
    league: League,
    generators: dict[str, Any],
    magnet: PolicyNet | None = None,
) -> dict[str, Any]:
    """The contents of ``trainer_state.pt``: tensors, and JSON strings for the rest.

    Args:
        counters: The run's progress.
        optimizer: The learner's optimizer.
        league: The league (members, their statistics, snapshot and exploiter weights).
        generators: ``generator`` and ``env_generator`` (torch generator states), and
            ``np_rng`` (the league's numpy generator state, a dict), plus any extra
            entries (already in a savable form).
        magnet: The EMA magnet's network, if any.
    """
    state = {
        "optimizer": optimizer.state_dict(),
        "update": counters.update,
        "global_step": counters.global_step,
        "best_win_rate": counters.best_win_rate,
        "exploiters": counters.exploiters,
        **league.state(),
        "torch_rng": torch.get_rng_state(),
        **{k: json.dumps(v) if k == "np_rng" else v for k, v in generators.items()},
        "history": json.dumps(counters.history),
        "episode_returns": torch.tensor(counters.episode_returns[-1000:]),
    }
    if magnet is not None:
        state["magnet"] = magnet.state_dict()
    return state


def restore_state(
    state: dict[str, Any],
    optimizer: torch.optim.Optimizer,
    league: League,
    policy: PolicyNet,
    magnet: PolicyNet | None,
    wanted_league: list[str],
) -> Counters:
    """Puts ``state`` (from :func:`trainer_state`) back; returns the counters.

    The optimizer, the league (re-synced to ``wanted_league``, the ``league`` setting of
    now: :func:`follow_league_setting`), the magnet and the global torch generator are
    restored here; the caller restores the generators it owns from ``state``
    (``generator``, ``env_generator``, ``np_rng``: see :func:`numpy_state`).
    """
    optimizer.load_state_dict(state["optimizer"])
    league.load_state(state, policy)
    env = league.env
    dropped, added = follow_league_setting(league, wanted_league, env.rules, env.device)
    if dropped or added:
        print(
            f"league changed on resume: left {', '.join(dropped) or 'none'}; "
            f"joined {', '.join(added) or 'none'}"
        )
    torch.set_rng_state(state["torch_rng"])
    if magnet is not None:
        if "magnet" in state:
            magnet.load_state_dict(state["magnet"])
        else:  # the run was started without an EMA magnet: it starts here
            magnet.load_state_dict(policy.state_dict())
            print("magnet: ema starts from the resumed policy (none was saved)")
    return Counters(
        update=int(state["update"]),
        global_step=int(state["global_step"]),
        best_win_rate=float(state["best_win_rate"]),
        exploiters=int(state["exploiters"]),
        history=json.loads(state["history"]),
        episode_returns=state["episode_returns"].tolist(),
    )


def numpy_state(state: dict[str, Any], key: str = "np_rng") -> dict[str, Any]:
    """A numpy generator's saved state (``bit_generator.state``) from ``state``."""
    return json.loads(state[key])


def follow_league_setting(
    league: League, wanted: list[str], rules: RuleSet, device: torch.device | str
) -> tuple[list[str], list[str]]:
    """After a resume, makes the fixed league what the ``league`` setting says now.

    Members still listed keep their saved statistics; members no longer listed leave;
    new ones join afresh. Snapshots and exploiters are kept as saved.

    Returns:
        The specs that left and those that joined.
    """
    fixed = ("bot", "checkpoint")
    saved = [m.spec for m in league.members if m.kind in fixed]
    dropped = [spec for spec in saved if spec not in wanted]
    added = [spec for spec in wanted if spec not in saved]
    for index in reversed(range(len(league.members))):
        member = league.members[index]
        if member.kind in fixed and member.spec in dropped:
            league.remove(index)
    for spec in added:
        league.add(member_from_spec(spec, rules, device))
    if dropped or added:
        league.assign(np.arange(league.env.num_envs))
    return dropped, added


def start_from(
    policy: PolicyNet, init: PolicyNet | None, args: Args, rules: RuleSet, resume: bool
) -> None:
    """Loads the weights a learner starts from into ``policy``.

    Args:
        policy: The fresh network of the run.
        init: A network to start from (an exploiter's main policy), or ``None``.
        args: The settings (``init_checkpoint``, ``init_other_rules``).
        rules: The run's rules.
        resume: Whether the run resumes (then ``init_checkpoint`` is ignored: the run's
            own checkpoint wins).

    Raises:
        ValueError: a missing ``init_checkpoint`` folder, or a network that does not fit.
        RulesMismatchError: an ``init_checkpoint`` of other rules without
            ``init_other_rules``.
    """
    device = next(policy.parameters()).device
    source = "init network"
    if init is None and args.init_checkpoint and not resume:
        if not Path(args.init_checkpoint).is_dir():  # checked here: --resume ignores it
            raise ValueError(
                f"init_checkpoint {args.init_checkpoint!r} is not a checkpoint folder "
                "(expected a folder with model.safetensors and meta.json)"
            )
        check = None if args.init_other_rules else rules
        try:
            init, _ = load_policy(args.init_checkpoint, check, device=device)
        except RulesMismatchError as exc:
            raise RulesMismatchError(
                f"init_checkpoint: {exc} (set init_other_rules: true to start from it "
                "anyway, if the network's shape fits)"
            ) from None
        source = f"init_checkpoint {args.init_checkpoint}"
    if init is not None and init.rules != rules:  # init_other_rules: transfer
        try:
            transfer_weights(init, policy)
        except ValueError as exc:
            raise ValueError(f"{source}: {exc}") from None
    elif init is not None:
        if init.shape != policy.shape:
            raise ValueError(
                f"{source}: network {init.shape} differs from the config {policy.shape}"
            )
        policy.load_state_dict(init.state_dict())


def clear_run_outputs(run_dir: Path) -> None:
    """Deletes what an earlier run left in ``run_dir`` (``overwrite``)."""
    shutil.rmtree(run_dir / "checkpoints", ignore_errors=True)
    shutil.rmtree(run_dir / "exploiters", ignore_errors=True)
    for pattern in ("events.out.tfevents.*", "metrics.csv", "final_eval.json"):
        for path in run_dir.glob(pattern):
            path.unlink()
    (run_dir / "learning_curve.png").unlink(missing_ok=True)


def step_checkpoints(ckpt_dir: Path) -> list[Path]:
    """The run's ``step_N`` folders, oldest first (N is zero-padded, so names sort)."""
    return sorted(p for p in Path(ckpt_dir).glob("step_*") if p.is_dir())


def save_run_checkpoint(
    ckpt_dir: Path,
    name: str | None,
    policy: PolicyNet,
    meta: dict[str, Any],
    state: dict[str, Any],
    keep: int,
) -> Path:
    """Writes ``ckpt_dir/name`` (default ``step_<meta step>``); keeps the newest ``keep`` steps.

    Returns:
        The checkpoint folder.
    """
    folder = Path(ckpt_dir) / (name or f"step_{int(meta['step']):010d}")
    path = write_checkpoint(folder, policy, meta, state)
    if name is None:
        for old in step_checkpoints(ckpt_dir)[:-keep]:
            shutil.rmtree(old, ignore_errors=True)
    return path


def load_run_checkpoint(
    ckpt_dir: Path, policy: PolicyNet, rules: RuleSet, device: torch.device | str = "cpu"
) -> tuple[Path, dict[str, Any]]:
    """Loads the newest ``step_N`` into ``policy``; returns its folder and trainer state.

    Raises:
        CheckpointError: no checkpoint, other rules or network shape, a corrupt file, or
            a checkpoint from before league training (it lacks the league).
    """
    steps = step_checkpoints(ckpt_dir)
    if not steps:
        raise CheckpointError(f"no checkpoint to resume in {ckpt_dir}")
    path = steps[-1]
    model, meta = load_policy(path, rules, device=device)
    if meta["network"] != dataclasses.asdict(policy.shape):
        raise CheckpointError(f"{path}: network {meta['network']} differs from the config")
    policy.load_state_dict(model.state_dict())
    state = load_trainer_state(path)
    if "league" not in state:
        raise CheckpointError(
            f"{path} was saved before league training and cannot be resumed by it"
        )
    return path, state
