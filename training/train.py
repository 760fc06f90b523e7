"""``liars-train``: train a policy from a YAML config (our PPO, or Ray RLlib).

Examples::

    liars-train --config configs/perudo_3p.yaml --set total_steps=4000000
    liars-train --resume perudo_3p            # continue after a crash or a stop
    liars-train --config configs/rllib_perudo_3p.yaml --backend rllib
"""

from __future__ import annotations

import argparse
import sys

from liars_env.agents.policy import CheckpointError
from liars_train.config import load_run_settings, load_settings
from liars_train.ppo import Args, Trainer
from liars_train.reports import print_final_table


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
        "default 1: see liars_env.batched.threads)",
    )
    parser.add_argument(
        "--backend",
        choices=["ours", "rllib"],
        default="ours",
        help="our batched PPO (default) or Ray RLlib (pip install -e '.[rllib]')",
    )
    return parser


def main(argv: list[str] | None = None) -> int:
    """Entry point of ``liars-train``; returns the exit status (2: bad input)."""
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
            args = load_run_settings(Args, args_ns.resume, sets)
            trainer = Trainer(args, resume=True)
        else:
            args = load_settings(Args, args_ns.config, sets)
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
    """``liars-train --backend rllib``: see ``training/rllib.py``."""
    try:
        from liars_train import rllib
    except ImportError as exc:
        print(
            f"liars-train: the rllib backend needs Ray RLlib: pip install -e '.[rllib]' ({exc})",
            file=sys.stderr,
        )
        return 2
    try:
        if args_ns.resume:
            raise ValueError("--resume is not supported with --backend rllib")
        args = load_settings(rllib.RLlibArgs, args_ns.config, args_ns.set)
    except ValueError as exc:
        print(f"liars-train: {exc}", file=sys.stderr)
        return 2
    out = rllib.train(args)
    print(f"RLlib checkpoint: {out['rllib_checkpoint']}")
    print(f"exported policy: {out['exported']} (use checkpoint:{out['exported']} in liars-eval)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
