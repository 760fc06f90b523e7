"""``liars-train``: train a policy from a YAML config (our PPO, or Ray RLlib).

Examples::

    liars-train --config configs/perudo_3p.yaml --set total_steps=4000000
    liars-train --resume perudo_3p            # continue after a crash or a stop
    liars-train --config configs/rllib_perudo_3p.yaml --backend rllib
    liars-train --pipeline configs/models/perudo_2p.yaml   # rebuild a shipped model
"""

from __future__ import annotations

import argparse
import contextlib
import faulthandler
import signal
import sys
import threading
from collections.abc import Iterator

from liars_env.agents.policy import CheckpointError
from liars_train.config import load_run_settings, load_settings
from liars_train.ppo import Args
from liars_train.reports import print_final_table
from liars_train.runner import make_trainer


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
    parser.add_argument(
        "--pipeline",
        metavar="FILE",
        help="build a pipeline file's stages (liars_train.pipeline; run it again to resume)",
    )
    parser.add_argument("--out", metavar="DIR", help="with --pipeline: also write the result there")
    parser.add_argument(
        "--until", metavar="STAGE", help="with --pipeline: build only up to this stage"
    )
    parser.add_argument(
        "--plan",
        action="store_true",
        help="with --pipeline: list the stages and which are built; build nothing",
    )
    parser.add_argument(
        "--runs-dir",
        default="runs",
        help="with --pipeline: where its folder goes (default runs)",
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
    sets = list(args_ns.set)
    if args_ns.device:
        sets.append(f"device={args_ns.device}")
    if args_ns.threads is not None:
        sets.append(f"torch_threads={args_ns.threads}")
    pipeline_only = {"--out": args_ns.out, "--until": args_ns.until, "--plan": args_ns.plan}
    if args_ns.pipeline:
        if args_ns.config or args_ns.resume:
            print("liars-train: --pipeline takes no --config or --resume", file=sys.stderr)
            return 2
        return _main_pipeline(args_ns, sets)
    used = [name for name, value in pipeline_only.items() if value]
    if used:
        print(f"liars-train: {', '.join(used)} go with --pipeline", file=sys.stderr)
        return 2
    try:
        if args_ns.resume:
            args = load_run_settings(Args, args_ns.resume, sets)
            trainer = make_trainer(args, resume=True)
        else:
            _refuse_pipeline_as_config(args_ns.config)
            args = load_settings(Args, args_ns.config, sets)
            trainer = make_trainer(args)
    except (ValueError, CheckpointError) as exc:
        print(f"liars-train: {exc}", file=sys.stderr)
        return 2
    try:
        with _ctrl_c_stops_between_updates(trainer):
            table = trainer.train()
    except KeyboardInterrupt:  # the roles are stopped; the last checkpoint stands
        print(
            f"\nliars-train: stopped; continue with liars-train --resume {trainer.run_dir}",
            file=sys.stderr,
        )
        return 130
    if table["rows"]:
        print_final_table(table)
    curve = trainer.run_dir / "learning_curve.png"
    print(f"run folder: {trainer.run_dir} (TensorBoard: tensorboard --logdir {args.runs_dir})")
    if curve.exists():
        print(f"learning curve: {curve}")
    return 0


@contextlib.contextmanager
def _ctrl_c_stops_between_updates(trainer) -> Iterator[None]:
    """The first Ctrl-C stops the run before its next update; a second one stops it now.

    Stopping between updates never cuts a Ray call in half, so the actors and Ray are
    shut down cleanly. ``kill -USR1 <pid>`` prints where every thread of the run is (to
    stderr), for a run that seems stuck.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def on_ctrl_c(signum, frame):
        if trainer.stop_requested or trainer.update >= trainer.num_updates:
            raise KeyboardInterrupt  # again, or in the final evaluation: now
        trainer.request_stop()
        print(
            "\nliars-train: stopping after this update (Ctrl-C again to stop now)",
            file=sys.stderr,
            flush=True,
        )

    previous = signal.signal(signal.SIGINT, on_ctrl_c)
    with contextlib.suppress(AttributeError, ValueError, RuntimeError):
        faulthandler.register(signal.SIGUSR1, all_threads=True)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


def _refuse_pipeline_as_config(config: str | None) -> None:
    """A pipeline file given to ``--config`` is refused with the command that runs it."""
    from pathlib import Path

    from liars_train.config import load_yaml

    if config is None or not Path(config).is_file():
        return
    try:
        data = load_yaml(Path(config).read_text())
    except Exception:  # a malformed file: load_settings says what is wrong
        return
    if isinstance(data, dict) and "stages" in data and "pipeline" in data:
        raise ValueError(
            f"{config} is a pipeline, not a config: run it with liars-train --pipeline {config}"
        )


def _main_pipeline(args_ns: argparse.Namespace, sets: list[str]) -> int:
    """``liars-train --pipeline FILE``: see ``training/pipeline.py``."""
    from liars_train.pipeline import run_pipeline

    try:
        result = run_pipeline(
            args_ns.pipeline,
            runs_dir=args_ns.runs_dir,
            out=args_ns.out,
            sets=sets,
            until=args_ns.until,
            plan_only=args_ns.plan,
        )
    except (ValueError, CheckpointError) as exc:
        print(f"liars-train: {exc}", file=sys.stderr)
        return 2
    if result is not None:
        print(f"model: {result}")
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
