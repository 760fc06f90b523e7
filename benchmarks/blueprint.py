r"""The blueprint where the truth is known: exact exploitability by what a player remembers.

For each small 2-player game and each setting ``MEMORY:FACES`` (bids remembered, faces
of the bids before them remembered), ``MEMORY:FACES:MAX_MEMORY`` (up to ``MAX_MEMORY``
bids in the rounds within the default budget) or ``MEMORY:FACES:MAX_MEMORY:MAX_BYTES``
(within that budget), CFR+ on every round's graph
(:func:`liars_env.solver.last_bid.solve_blueprint`), then the exact exploitability of
the blueprint agent in the real game (:func:`liars_env.solver.exploit`)::

    python benchmarks/blueprint.py --games perudo_1x4 perudo_1x5 perudo_1x6 perudo_2x3 \
        openspiel_1x6 openspiel_2x3 perudo_2x4 --settings 1:0 1:1 2:0 2:1 3:0 4:0 2:0:4 \
        --iterations 400 --out results/blueprint_small.json --markdown results/blueprint_small.md

``--recipe PIPELINE`` adds the setting of a blueprint pipeline (its ``memory``,
``faces``, ``max_memory`` and ``max_bytes``) and, unless ``--iterations`` is given, its
iterations: the shipped 5-dice recipe where the truth is known (``python
benchmarks/blueprint.py --recipe configs/blueprints/perudo_2p.yaml --out
results/blueprint_recipe.json``).

``--latency SPEC`` instead times one agent's decisions (``act``) over games against
itself at 5 dice each (``python benchmarks/blueprint.py --latency
blueprint:blueprints/perudo_2p --out results/blueprint_latency.json``).

Each cell is written to ``--out`` as soon as it is measured; a cell already there with
the same iterations is not measured again. Beside each game: ReBeL's figure where the
paper gives one (CFR-D re-solving with a value network, Brown et al. 2020, as quoted in
issue #56) and safe re-solving to the round's end (docs/search.md).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

from liars_env.rules import RuleSet
from liars_env.solver import exploit
from liars_env.solver.agent import BlueprintAgent
from liars_env.solver.last_bid import solve_blueprint
from liars_env.solver.recall_graph import MAX_BYTES, round_graphs

GAMES: dict[str, tuple[str, int, int]] = {
    "perudo_1x4": ("perudo", 1, 4),
    "perudo_1x5": ("perudo", 1, 5),
    "perudo_1x6": ("perudo", 1, 6),
    "perudo_2x3": ("perudo", 2, 3),
    "perudo_2x4": ("perudo", 2, 4),
    "openspiel_1x4": ("openspiel_liars_dice", 1, 4),
    "openspiel_1x6": ("openspiel_liars_dice", 1, 6),
    "openspiel_2x3": ("openspiel_liars_dice", 2, 3),
    "calza_1x4": ("perudo_calza", 1, 4),
    "palifico_2x3": ("perudo_palifico", 2, 3),
    "jokers_1x4": ("jokers", 1, 4),
}
"""Small games: name → (preset, dice per player, faces), 2 players."""

REBEL = {"perudo_1x4": None, "openspiel_1x4": 0.017, "openspiel_1x6": 0.024,
         "openspiel_2x3": 0.017}  # fmt: skip
"""ReBeL's exploitability where the paper reports the game (OpenSpiel's rules)."""

FULL_DEPTH = {"perudo_1x4": 0.0019, "perudo_1x6": 0.0013, "perudo_2x3": 0.0044}
"""Safe re-solving to the round's end, from docs/search.md's depth table."""


Setting = tuple[int, int, int | None, int | None]
"""Bids remembered, faces remembered, the most bids in a small round (or ``None``), and
the budget of such a round in bytes (``None``: the default)."""


def _setting(text: str) -> Setting:
    parts = text.split(":")
    try:
        if not 1 <= len(parts) <= 4:
            raise ValueError
        memory, faces = int(parts[0]), int(parts[1]) if len(parts) > 1 else 0
        most = int(parts[2]) if len(parts) > 2 else None
        budget = int(parts[3]) if len(parts) > 3 else None
        if memory < 1 or faces < 0 or (most is not None and most < memory):
            raise ValueError
        if budget is not None and budget < 1:
            raise ValueError
        return memory, faces, most, budget
    except ValueError:
        raise argparse.ArgumentTypeError(
            "a setting is MEMORY:FACES, MEMORY:FACES:MAX_MEMORY or "
            f"MEMORY:FACES:MAX_MEMORY:MAX_BYTES (MEMORY >= 1, MAX_MEMORY >= MEMORY, "
            f"MAX_BYTES >= 1), got {text!r}"
        ) from None


def recipe(path: str) -> tuple[Setting, int]:
    """The setting and iterations of the result stage of blueprint pipeline ``path``.

    Raises:
        ValueError: The file is no valid pipeline, or its result is not a blueprint.
    """
    from liars_train.pipeline import load_pipeline

    built = load_pipeline(path)
    result = built.stage(built.result)
    if result.kind != "blueprint":
        raise ValueError(f"{path}: its result stage is a {result.kind!r}, not a 'blueprint'")
    b = result.spec
    setting = (b.get("memory", 1), b.get("faces", 0), b.get("max_memory"), b.get("max_bytes"))
    return setting, b.get("iterations", 400)


def setting_key(setting: Setting) -> str:
    """The setting's key in the JSON.

    ``2:0``, ``2:0:4`` with a longest memory, ``2:0:4:500000000`` with a budget of its own.
    """
    return ":".join(str(part) for part in setting if part is not None)


def setting_label(setting: Setting) -> str:
    """The setting's column head."""
    memory, faces, most, budget = setting
    if most is None:
        held = f"memory {memory}"
    elif budget is None:
        held = f"memory {memory}-{most} (budget)"
    else:
        held = f"memory {memory}-{most} (budget {budget / 1e9:g} GB)"
    return f"{held}, faces {faces}"


def measure(game: str, setting: Setting, iterations: int) -> dict[str, Any]:
    """One cell: the blueprint's exact exploitability, its size and its solve's time."""
    memory, faces, most, budget = setting
    preset, dice, num_faces = GAMES[game]
    rules = RuleSet.preset(preset, num_players=2, dice_per_player=dice, faces=num_faces)
    size = {"max_memory": most, "max_bytes": MAX_BYTES if budget is None else budget}
    blueprint = solve_blueprint(rules, iterations, memory=memory, faces=faces, **size)
    began = time.perf_counter()
    result = exploit(BlueprintAgent(blueprint), rules)
    _, graphs = round_graphs(rules, memory, faces, **size)
    return {
        "exploitability": result.exploitability,
        "nodes": int(sum(len(g.actor) for g in graphs.values())),
        "solve_seconds": round(blueprint.seconds, 2),
        "exploit_seconds": round(time.perf_counter() - began, 2),
        "iterations": iterations,
    }


def markdown(data: dict[str, Any], settings: list[Setting]) -> str:
    """The table: a row per game, a column per setting (exploitability, nodes)."""
    head = ["game", *map(setting_label, settings), "full-depth re-solving", "ReBeL"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for game in data:
        cells = [game.replace("_", " ")]
        for setting in settings:
            cell = data[game].get(setting_key(setting))
            cells.append(f"{cell['exploitability']:.4f} ({cell['nodes']:,} nodes)" if cell else "—")
        cells.append(f"{FULL_DEPTH[game]:.4f}" if game in FULL_DEPTH else "—")
        cells.append(f"{REBEL[game]:.3f}" if REBEL.get(game) is not None else "—")
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def latency(spec: str, games: int, seed: int) -> dict[str, Any]:
    """Median and largest seconds per decision of ``spec`` playing itself, 2 × 5 dice."""
    import numpy as np

    from liars_env.agents import make_agent
    from liars_env.engine import LiarsDiceGame
    from liars_env.observation import ObservationLayout, view_of

    rules = RuleSet.preset("perudo", num_players=2)
    game, layout = LiarsDiceGame(rules), ObservationLayout(rules)
    agents = [make_agent(spec, rules, seed=seed + s) for s in (0, 1)]
    rng = np.random.default_rng(seed)
    times = []
    for _ in range(games):
        state = game.new_game(rng)
        for agent in agents:
            agent.reset()
        while state.winner is None:
            view = view_of(game, layout, state)
            began = time.perf_counter()
            action = agents[state.current_player].act(view)
            times.append(time.perf_counter() - began)
            game.apply(state, action, rng)
    return {
        "agent": spec,
        "decisions": len(times),
        "median_seconds": float(np.median(times)),
        "max_seconds": float(np.max(times)),
    }


def main(argv: list[str] | None = None) -> int:
    """Entry point."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--games", nargs="+", default=list(GAMES), choices=list(GAMES))
    parser.add_argument(
        "--settings", nargs="+", type=_setting, default=None, help="default: 1:0 1:1"
    )
    parser.add_argument(
        "--recipe", metavar="PIPELINE", help="add this blueprint pipeline's setting"
    )
    parser.add_argument("--iterations", type=int, help="CFR+ iterations a round (400)")
    parser.add_argument("--out", required=True, help="JSON of the cells (resumed)")
    parser.add_argument("--markdown", help="also write the table here")
    parser.add_argument("--latency", metavar="SPEC", help="time this agent's decisions instead")
    parser.add_argument("--latency-games", type=int, default=50)
    ns = parser.parse_args(argv)
    out = Path(ns.out)
    if ns.latency:
        result = latency(ns.latency, ns.latency_games, 0)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(result, indent=1) + "\n")
        print(json.dumps(result))
        return 0
    settings, iterations = ns.settings, ns.iterations
    if ns.recipe:
        try:
            setting, iterations_of_recipe = recipe(ns.recipe)
        except (OSError, ValueError) as err:
            parser.error(str(err))
        settings = [*(settings or []), setting]
        iterations = iterations or iterations_of_recipe
    settings = settings or [(1, 0, None, None), (1, 1, None, None)]
    iterations = iterations or 400
    data = json.loads(out.read_text()) if out.exists() else {}
    for game in ns.games:
        for setting in settings:
            row, key = data.setdefault(game, {}), setting_key(setting)
            cell = row.get(key)
            if cell is None or cell["iterations"] != iterations:
                row[key] = cell = measure(game, setting, iterations)
                out.parent.mkdir(parents=True, exist_ok=True)
                tmp = out.with_suffix(".tmp")
                tmp.write_text(json.dumps(data, indent=1) + "\n")
                os.replace(tmp, out)
            print(
                f"{game:14s} {setting_label(setting)}: exploitability "
                f"{cell['exploitability']:.4f} ({cell['nodes']:,} nodes, solve "
                f"{cell['solve_seconds']} s)",
                flush=True,
            )
    table = markdown({g: data[g] for g in ns.games if g in data}, settings)
    print(table)
    if ns.markdown:
        Path(ns.markdown).write_text(table)
    return 0


if __name__ == "__main__":
    sys.exit(main())
