"""The blueprint's file: one byte a probability, packed with xz, in a plain ``.npz``.

:meth:`Blueprint.save <liars_env.solver.last_bid.Blueprint.save>` and
:meth:`Blueprint.load <liars_env.solver.last_bid.Blueprint.load>` decide what goes in
(the strategies, with the cells a player's own play never reaches set to 0:
:func:`~liars_env.solver.last_bid.unreached_cells`); this module writes and reads it.
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
