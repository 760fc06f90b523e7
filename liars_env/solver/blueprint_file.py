"""The blueprint's file: one byte a probability, packed with xz, in a plain ``.npz``.

:meth:`Blueprint.save <liars_env.solver.last_bid.Blueprint.save>` and
:meth:`Blueprint.load <liars_env.solver.last_bid.Blueprint.load>` decide what goes in
(the strategies, with the cells a player's own play never reaches set to 0:
:func:`~liars_env.solver.recall_graph.unreached_cells`, and the lightest in coarse steps:
:func:`coarsened`); this module writes and reads it.
A file is an ``.npz`` read with ``allow_pickle=False``: a JSON ``meta`` entry (rules,
settings, round values) and, per round and role, its nodes' remembered bids, edges,
actions and probabilities (``docs/blueprint.md``, "Its file").
"""

from __future__ import annotations

import json
import zipfile
from pathlib import Path
from typing import Any

import numpy as np

from liars_env.rules import RuleSet
from liars_env.solver.packed import pack, unpack
from liars_env.solver.solution import write_npz

FILE_FORMATS = ("npz", "xz")
"""How a blueprint file stores its arrays (its ``format``; files before it have none and
are ``npz``): ``npz``, zip's deflate, each probability ``[edge, hand]``, every cell;
``xz`` (:mod:`~liars_env.solver.packed`, what :func:`write_blueprint_file` writes),
each probability ``[hand, edge]``, the unreached cells 0: half the size, the same play."""

PARTS = ("keys", "first", "action", "probs")
"""The arrays of each round's role, named ``{round}_{role}_{part}``."""


def one_byte(probs: np.ndarray) -> np.ndarray:
    """Probabilities in steps of 1/255 (``uint8``); a hand's likeliest action (>= 1/61) stays."""
    if probs.dtype == np.uint8:
        return probs.copy()
    return np.round(np.clip(probs, 0.0, 1.0) * 255).astype(np.uint8)


def node_normalized(probs: np.ndarray, edge_node: np.ndarray, nodes: int) -> np.ndarray:
    """``probs[edge, hand]`` divided, per hand, by the sum over its node's edges (0 stays 0).

    Args:
        probs: Probabilities of any scale (``uint8`` steps or floats).
        edge_node: Each edge's node.
        nodes: How many nodes there are.
    """
    p = probs.astype(np.float64)
    total = np.zeros((nodes, p.shape[1]))
    np.add.at(total, edge_node, p)
    return p / np.where(total > 0, total, 1.0)[edge_node]


LIGHT_MASS = 0.02
"""What :meth:`Blueprint.save <liars_env.solver.last_bid.Blueprint.save>` coarsens by
default: the lightest cells holding this share of a round's weight (:func:`coarsened`)."""

LIGHT_STEPS = 5
"""The steps of a probability in the lightest cells: multiples of 1/5 (51/255)."""


def check_light_mass(light_mass: float) -> None:
    """Raises ``ValueError`` unless ``light_mass`` is a number in [0, 1)."""
    if type(light_mass) not in (int, float) or not 0 <= light_mass < 1:
        raise ValueError(
            f"light_mass must be in [0, 1), got {light_mass!r} (the share of each round's "
            "weight whose cells the file keeps in steps of 1/5)"
        )


def coarsened(
    probs: np.ndarray, weight: np.ndarray, edge_node: np.ndarray, mass: float = LIGHT_MASS
) -> np.ndarray:
    """``probs`` (``uint8``, ``[edge, hand]``) with the lightest cells in steps of 1/5.

    A cell's weight says how much play passes through it: the player's own reach of
    the node with the hand times the hand's chance. The lightest node-hands, whose
    cells together hold ``mass`` of the sum of ``weight`` over every cell, get their
    distribution rounded to multiples of 1/:data:`LIGHT_STEPS` (in one byte: of 51/255),
    the likeliest action kept where every action would round to 0. Coarse steps pack
    into far fewer bytes, and cost little where little play goes: on the small games,
    coarsening 2% of the weight (with the reach capped at 1, as ``save`` does) moves
    the exact exploitability by 0.0001 at most (``benchmarks/blueprint_file.py``).
    Every other cell is returned as it is.

    Args:
        probs: One role's probabilities in steps of 1/255.
        weight: Each cell's weight, ``[edge, hand]`` (a node's edges share one).
        edge_node: Each edge's node, in order (a node's edges are together).
        mass: The share of the weight to coarsen, in [0, 1).

    Example:
        >>> probs = np.array([[255, 170], [0, 85]], dtype=np.uint8)  # one node, 2 hands
        >>> coarsened(probs, np.array([[1.0, 0.001]] * 2), np.zeros(2, int), 0.01).tolist()
        [[255, 153], [0, 102]]
    """
    nodes = int(edge_node.max()) + 1 if len(edge_node) else 0
    first = np.searchsorted(edge_node, np.arange(nodes))  # edges sorted by node
    cell = weight[first]  # each node-hand's weight, held by each of its edges' cells
    held = cell * np.bincount(edge_node, minlength=nodes)[:, None]
    order = np.argsort(cell.ravel(), kind="stable")
    share = np.cumsum(held.ravel()[order])
    light = np.zeros(held.size, dtype=bool)
    if len(share) and share[-1] > 0:
        light[order[share <= mass * share[-1]]] = True
    light = light.reshape(held.shape)[edge_node]
    p = node_normalized(probs, edge_node, nodes)
    step = 255 // LIGHT_STEPS
    coarse = np.round(p * LIGHT_STEPS) * step
    total = np.zeros((nodes, p.shape[1]))
    np.add.at(total, edge_node, coarse)
    top = np.full((nodes, p.shape[1]), -1.0)
    np.maximum.at(top, edge_node, p)
    coarse[(total[edge_node] == 0) & (p == top[edge_node]) & (p > 0)] = step
    return np.where(light, coarse, probs).astype(np.uint8)


def write_blueprint_file(path: str | Path, meta: dict[str, Any], arrays: dict) -> Path:
    """Writes ``meta`` and ``arrays`` in the ``xz`` format, atomically (temp file, rename).

    ``arrays`` are named ``{round}_{role}_{part}`` (:data:`PARTS`), the probabilities
    ``uint8`` and ``[edge, hand]``.
    """
    path = Path(path)
    laid = {n: a.T if n.endswith("_probs") else a for n, a in arrays.items()}  # hand by hand
    write_npz(path, {"meta": np.array(json.dumps(meta | {"format": "xz"}))} | pack(laid))
    return path


def read_blueprint_file(
    path: str | Path, version: int, rules: RuleSet | None = None
) -> tuple[dict[str, Any], dict]:
    """``(meta, arrays)`` of a blueprint file of either format, probabilities ``[edge, hand]``.

    Raises:
        ValueError: for a file that is not a blueprint, of another ``version``, format
            or ``rules``, or with an array missing or damaged.
    """
    try:
        data = np.load(path, allow_pickle=False)
        meta = json.loads(str(data["meta"]))
    except (OSError, KeyError, ValueError, zipfile.BadZipFile) as err:
        raise ValueError(f"{path} is not a readable blueprint file: {err}") from err
    with data:
        if meta.get("version") != version:
            raise ValueError(
                f"{path}: blueprint version {meta.get('version')!r}, expected "
                f"{version} (solve it again)"
            )
        saved = RuleSet.from_dict(meta["rules"])
        if rules is not None and saved != rules:
            raise ValueError(f"{path} is a blueprint of {saved}, not of {rules}")
        form = meta.get("format", "npz")
        if form not in FILE_FORMATS:
            raise ValueError(f"{path}: format {form!r}, expected one of {FILE_FORMATS}")
        if form == "npz":
            arrays = {name: data[name] for name in data.files if name != "meta"}
        else:
            try:
                arrays = unpack(data)
            except ValueError as err:
                raise ValueError(f"{path} is not a readable blueprint file: {err}") from err
            for name in [n for n in arrays if n.endswith("_probs")]:
                arrays[name] = np.ascontiguousarray(arrays[name].T)
    rounds = range(len(meta["keys"]))
    names = [f"{i}_{r}_{part}" for i in rounds for r in (0, 1) for part in PARTS]
    missing = [name for name in names if name not in arrays]
    if missing:
        raise ValueError(
            f"{path} is not a readable blueprint file: no {missing[0]!r} "
            f"({len(missing)} of its {len(names)} arrays missing)"
        )
    return meta, arrays
