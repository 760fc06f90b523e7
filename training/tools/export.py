"""Copies a training checkpoint's policy (weights and meta, no trainer state) to ship it.

Run: ``python -m liars_train.tools.export runs/perudo_3p/checkpoints/best checkpoints/perudo_3p``
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from liars_env.agents.policy import CheckpointError, load_policy, write_checkpoint


def portable_source(source: str | Path) -> str:
    """How ``meta.json`` names the checkpoint a model was exported from.

    Relative to the working directory when it lies below it (and that is not the
    filesystem's root); otherwise the runs folder, run, ``checkpoints`` and tag (the
    last four parts) or just the folder's name, so that no machine's absolute path ends
    up in a shipped model.

    Example:
        >>> portable_source("/scratch/me/runs/perudo_3p/checkpoints/best")
        'runs/perudo_3p/checkpoints/best'
        >>> portable_source("/ckpt/checkpoints/best")
        'ckpt/checkpoints/best'
    """
    path = Path(source).resolve()
    cwd = Path.cwd().resolve()
    if cwd != Path(cwd.anchor) and path != cwd and path.is_relative_to(cwd):
        return path.relative_to(cwd).as_posix()
    parts = path.parts[1:]  # without the root
    keep = 4 if path.parent.name == "checkpoints" else 1
    return "/".join(parts[-keep:]) or path.name


def export(source: str, dest: str) -> None:
    """Loads ``source`` (checking it) and writes its policy to ``dest`` atomically.

    Files already in ``dest`` other than a checkpoint's own (a model card, say) stay;
    a trainer state there goes (a shipped model has none).
    """
    model, meta = load_policy(source)
    meta = {**meta, "exported_from": portable_source(source)}
    write_checkpoint(dest, model, meta, keep_other_files=True)


def main(argv: list[str] | None = None) -> int:
    """Entry point: ``python -m liars_train.tools.export SOURCE DEST``."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("source", help="a checkpoint folder, e.g. runs/NAME/checkpoints/best")
    parser.add_argument("dest", help="where to write the shipped checkpoint folder")
    args = parser.parse_args(argv)
    try:
        export(args.source, args.dest)
    except CheckpointError as exc:
        print(f"export: {exc}", file=sys.stderr)
        return 2
    print(f"wrote {args.dest}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
