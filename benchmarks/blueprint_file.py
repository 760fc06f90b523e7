r"""What a blueprint's file costs: its size, and the exact exploitability of coarser encodings.

A blueprint file (:meth:`liars_env.solver.last_bid.Blueprint.save`) keeps each
probability in steps of 1/255 and the lightest cells in steps of 1/5
(:func:`liars_env.solver.blueprint_file.coarsened`), leaves out the cells a player's own
play never reaches and packs the rest with xz. This measures what other encodings would
save and cost:

* ``--table FILE``: the size of that blueprint's file under each encoding (each is saved
  to a temporary file, about 30 s at 5 dice). Give it a table in steps of 1/255 (a
  pipeline with ``light_mass: 0``): a coarsened file stays coarse under every encoding;
* ``--games ...``: the shipped recipe (:data:`liars_env.solver.cache.RECIPE`) solved on
  each small game, then its exact exploitability (:func:`liars_env.solver.exploit`) as
  read back from a file of each encoding.

::

    python benchmarks/blueprint_file.py --table OLD.npz \
        --games perudo_1x6 perudo_2x3 openspiel_1x6 openspiel_2x3 \
        --out results/blueprint_file.json

Encodings: ``1/255`` (every reached cell in steps of 1/255: ``save(light_mass=0)``),
``1/255, lightest 2% in 1/5`` (what ``save`` writes by default) and ``lightest 5%``,
``1/127`` and ``1/63`` (coarser steps everywhere, each node's probabilities renormalized
first), and ``1/255, min 1%`` / ``min 2%`` (probabilities under 1% or 2% of a node set
to 0, the likeliest action kept, the rest renormalized: thresholding).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
import tempfile
from pathlib import Path

import numpy as np

from liars_env.rules import RuleSet
from liars_env.solver import exploit
from liars_env.solver.agent import BlueprintAgent
from liars_env.solver.blueprint_file import LIGHT_MASS, node_normalized
from liars_env.solver.cache import RECIPE
from liars_env.solver.last_bid import Blueprint, solve_blueprint

GAMES: dict[str, tuple[str, int, int]] = {
    "perudo_1x6": ("perudo", 1, 6),
    "perudo_2x3": ("perudo", 2, 3),
    "perudo_2x4": ("perudo", 2, 4),
    "openspiel_1x6": ("openspiel_liars_dice", 1, 6),
    "openspiel_2x3": ("openspiel_liars_dice", 2, 3),
}
"""Small 2-player games: name → (preset, dice per player, faces)."""

DEFAULT = f"1/255, lightest {LIGHT_MASS:.0%} in 1/5"
"""The encoding ``save`` writes by default."""

ENCODINGS: dict[str, tuple[int, float, float]] = {
    "1/255": (255, 0.0, 0.0),
    DEFAULT: (255, 0.0, LIGHT_MASS),
    "1/255, lightest 5% in 1/5": (255, 0.0, 0.05),
    "1/127": (127, 0.0, 0.0),
    "1/63": (63, 0.0, 0.0),
    "1/255, min 1%": (255, 0.01, 0.0),
    "1/255, min 2%": (255, 0.02, 0.0),
}
"""Encoding → (steps of a probability, the smallest probability kept, ``light_mass``)."""


def encoded(blueprint: Blueprint, steps: int, floor: float) -> Blueprint:
    """``blueprint`` with each probability in steps of ``1/steps`` (``uint8``).

    Each node's probabilities for a hand are normalized, those under ``floor`` set to 0
    (the likeliest kept) and renormalized, then rounded to the nearest step. Steps of
    1/255 and no floor return ``blueprint`` itself: what ``save`` rounds it to.
    """
    if steps == 255 and not floor:
        return blueprint
    rounds = {}
    for key, plays in blueprint.rounds.items():
        new = []
        for play in plays:
            node = np.repeat(np.arange(len(play.first) - 1), np.diff(play.first))
            p = node_normalized(play.probs, node, len(play.first) - 1)
            if floor:
                top = np.zeros((len(play.first) - 1, p.shape[1]))
                np.maximum.at(top, node, p)
                kept = np.where((p >= floor) | (p >= top[node]), p, 0.0)
                p = node_normalized(kept, node, len(play.first) - 1)
            probs = np.round(p * steps).astype(np.uint8)
            new.append(dataclasses.replace(play, probs=probs, _index={}))
        rounds[key] = new
    return dataclasses.replace(blueprint, rounds=rounds, _hands={}, _face_of=None)


def saved(blueprint: Blueprint, light_mass: float) -> tuple[Blueprint, int]:
    """``blueprint`` written (with ``light_mass``) and read back, and its file's size."""
    with tempfile.TemporaryDirectory() as folder:
        path = blueprint.save(Path(folder) / "blueprint.npz", light_mass=light_mass)
        return Blueprint.load(path), path.stat().st_size


def main(argv: list[str] | None = None) -> int:
    """Entry point."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--table", help="a blueprint file: its size under each encoding")
    parser.add_argument("--games", nargs="*", default=[], choices=list(GAMES))
    parser.add_argument("--encodings", nargs="+", default=list(ENCODINGS), choices=list(ENCODINGS))
    parser.add_argument("--out", required=True, help="JSON of the figures")
    ns = parser.parse_args(argv)
    if not ns.table and not ns.games:
        parser.error("nothing to measure: give --table FILE, --games GAME ..., or both")
    data: dict = {"encodings": {e: list(ENCODINGS[e]) for e in ns.encodings}, "recipe": RECIPE}
    if ns.table:
        try:
            table = Blueprint.load(ns.table)
        except ValueError as err:
            parser.error(str(err))
        data["table"] = {"file": ns.table, "bytes": {}}
        for name in ns.encodings:
            steps, floor, light = ENCODINGS[name]
            _, size = saved(encoded(table, steps, floor), light)
            data["table"]["bytes"][name] = size
            print(f"{ns.table} {name}: {size / 1e6:.2f} MB", flush=True)
    data["games"] = {}
    for game in ns.games:
        preset, dice, faces = GAMES[game]
        rules = RuleSet.preset(preset, num_players=2, dice_per_player=dice, faces=faces)
        solved = solve_blueprint(rules, **RECIPE)
        row = data["games"][game] = {
            "in memory": exploit(BlueprintAgent(solved), rules).exploitability
        }
        for name in ns.encodings:
            steps, floor, light = ENCODINGS[name]
            read, _ = saved(encoded(solved, steps, floor), light)
            row[name] = exploit(BlueprintAgent(read), rules).exploitability
        print(game, "  ".join(f"{k}: {v:.4f}" for k, v in row.items()), flush=True)
    out = Path(ns.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_suffix(".tmp")
    tmp.write_text(json.dumps(data, indent=1) + "\n")
    os.replace(tmp, out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
