"""Weight averaging of checkpoints of one network (model soups, SWA) into a new checkpoint.

A model fine-tuned from another (a second round of training, say) lies near it in weight
space, and the weights in between often play better than either end: a *model soup*
(Wortsman et al., 2022); the average of a run's last checkpoints is stochastic weight
averaging (Izmailov et al., 2018). This writes such an average as an ordinary checkpoint
that every tool loads. Evaluate it like any model before you ship it (docs/training.md,
"Weight averaging").

Run::

    python -m liars_train.tools.average runs/a/checkpoints/best runs/b/checkpoints/best
        --weights 0.7 0.3 --out runs/soup

Example:
    >>> normalized_weights([7, 3], 2)
    [0.7, 0.3]
    >>> normalized_weights(None, 4)
    [0.25, 0.25, 0.25, 0.25]
"""

from __future__ import annotations

import argparse
import math
import sys
from collections.abc import Sequence
from pathlib import Path

from liars_env.agents.policy import (
    CheckpointError,
    PolicyNet,
    build_meta,
    load_policy,
    write_checkpoint,
)
from liars_train.tools.export import portable_source


def normalized_weights(weights: Sequence[float] | None, count: int) -> list[float]:
    """``weights`` scaled to sum to 1 (``None``: equal weights for ``count`` models).

    Raises:
        ValueError: for a count that differs from ``count``, a negative or non-finite
            weight, or weights that sum to 0.
    """
    if weights is None:
        return [1.0 / count] * count
    if len(weights) != count:
        raise ValueError(f"--weights: {len(weights)} weights for {count} checkpoints")
    for w in weights:
        if not math.isfinite(w) or w < 0:
            raise ValueError(f"--weights must be finite and >= 0, got {w!r}")
    total = sum(weights)
    if total <= 0:
        raise ValueError(f"--weights must not all be 0, got {list(weights)}")
    return [w / total for w in weights]


def average_policies(
    sources: Sequence[str | Path], weights: Sequence[float] | None = None
) -> tuple[PolicyNet, dict]:
    """The weighted average of the networks of ``sources`` and the ``meta.json`` it gets.

    Every checkpoint must be of the same rules and network shape; the network's derived
    tables (bid features, beliefs) come from those rules, so only the learned
    parameters differ and are averaged.

    Raises:
        ValueError: for fewer than two checkpoints or bad weights.
        CheckpointError: for a checkpoint that does not load, or one of other rules or
            another network shape than the first.
    """
    if len(sources) < 2:
        raise ValueError(f"averaging needs at least two checkpoints, got {len(sources)}")
    weights = normalized_weights(weights, len(sources))
    first, _ = load_policy(sources[0])
    nets = [first]
    for source in sources[1:]:
        net, _ = load_policy(source, first.rules)  # other rules: RulesMismatchError
        if net.shape != first.shape:
            raise CheckpointError(
                f"checkpoint {source}: network {net.shape} differs from "
                f"{sources[0]}'s {first.shape}"
            )
        nets.append(net)
    states = [net.state_dict() for net in nets]
    averaged = {
        name: sum(w * state[name] for w, state in zip(weights, states, strict=True))
        if tensor.is_floating_point()
        else tensor
        for name, tensor in states[0].items()
    }
    model = PolicyNet(first.shape, first.rules)
    model.load_state_dict(averaged)
    model.eval()
    meta = build_meta(
        first.rules,
        first.shape,
        averaged_from=[
            {"source": portable_source(s), "weight": round(w, 6)}
            for s, w in zip(sources, weights, strict=True)
        ],
    )
    return model, meta


def main(argv: list[str] | None = None) -> int:
    """Entry point: ``python -m liars_train.tools.average SRC SRC [...] --out DEST``."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("sources", nargs="+", help="checkpoint folders of one network")
    parser.add_argument(
        "--weights",
        nargs="+",
        type=float,
        help="one weight per checkpoint, scaled to sum to 1 (default: equal)",
    )
    parser.add_argument(
        "--out", required=True, help="the checkpoint folder to write (a card.md there stays)"
    )
    args = parser.parse_args(argv)
    try:
        model, meta = average_policies(args.sources, args.weights)
    except (ValueError, CheckpointError) as exc:
        print(f"average: {exc}", file=sys.stderr)
        return 2
    write_checkpoint(args.out, model, meta, keep_other_files=True)
    parts = ", ".join(f"{e['weight']:g} × {e['source']}" for e in meta["averaged_from"])
    print(f"wrote {args.out}: {parts}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
