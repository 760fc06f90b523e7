"""A training run's checkpoints: ``step_N`` folders (the newest few kept) and ``best``.

Each folder is written atomically by :func:`liars_env.agents.policy.write_checkpoint` (the
network as safetensors, the trainer state loaded back with ``weights_only=True``).
"""

from __future__ import annotations

import dataclasses
import shutil
from pathlib import Path
from typing import Any

import torch

from liars_env.agents.policy import (
    CheckpointError,
    PolicyNet,
    load_policy,
    load_trainer_state,
    write_checkpoint,
)
from liars_env.rules import RuleSet


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
