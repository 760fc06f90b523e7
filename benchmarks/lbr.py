r"""Local best response (LBR) against every 2-player agent, and the strength page.

Two parts, each a subcommand:

``small``: where the truth is known. On 1-die games and perudo 2×3, LBR's payoff
(:func:`liars_env.solver.local_best_response`) beside the exact exploitability
(:func:`liars_env.solver.exploit`) of the same agent: LBR's interval must not lie above
the exact figure::

    python benchmarks/lbr.py small --games perudo_1x4 perudo_1x5 perudo_1x6 \
        openspiel_1x6 perudo_2x3 --rounds 300 --out results/lbr_small.json

``table``: the game people play, 2 players with 5 dice each. LBR against every shipped
2-player model (``checkpoints/*`` whose ``meta.json`` says 2 players), every bot and the
search agent, beside what else is known of each (the RL best response and the head to head
figures of the models' ``eval.json``; bots against bots played here on the batched
engine), written as ``docs/strength.md``::

    python benchmarks/lbr.py table --rounds 300 --bot-rounds 100 --out results/lbr_table.json \
        --markdown docs/strength.md

``margin``: what an equilibrium wins. On games the solver solves, the exact result of
the equilibrium (the ``solver`` agent, or any ``--player``) against each agent
(:func:`liars_env.solver.head_to_head`, no sampling) beside that agent's exact
exploitability: how much of what a best response takes from an agent an equilibrium
takes too::

    python benchmarks/lbr.py margin --games perudo_2x4 --agents random \
        --extra perudo_2x4=checkpoint:RUN/checkpoints/STEP --out results/margin.json \
        --markdown results/margin.md

(left out, ``--games`` is perudo 1×6 and 2×3 and ``--agents`` every bot: a bot on 2×4,
asked view by view, takes 12–18 minutes).

``compare``: candidates side by side at 5 dice, with the table's own protocol: LBR
and the head to head games of each agent against each opponent (seats rotated, the
batched match), for a recipe before it replaces a shipped one::

    python benchmarks/lbr.py compare --agents blueprint:NEW blueprint:blueprints/perudo_2p \
        --opponents blueprint:blueprints/perudo_2p checkpoint:checkpoints/perudo_2p belief \
        --games 20000 --rounds 400 --out results/compare.json

Each row is written to ``--out`` as soon as it is measured, and a row already there with
the same settings is not measured again (so an interrupted table resumes).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import textwrap
import time
from collections import ChainMap
from pathlib import Path
from typing import Any

from liars_env.agents import make_agent
from liars_env.agents.probabilistic import BOT_PRESETS
from liars_env.rules import RuleSet
from liars_env.solver import exploit, head_to_head, round_states
from liars_env.solver.lbr import local_best_response

SMALL_GAMES: dict[str, tuple[str, dict[str, int]]] = {
    "perudo_1x4": ("perudo", {"dice_per_player": 1, "faces": 4}),
    "perudo_1x5": ("perudo", {"dice_per_player": 1, "faces": 5}),
    "perudo_1x6": ("perudo", {"dice_per_player": 1, "faces": 6}),
    "openspiel_1x4": ("openspiel_liars_dice", {"dice_per_player": 1, "faces": 4}),
    "openspiel_1x6": ("openspiel_liars_dice", {"dice_per_player": 1, "faces": 6}),
    "perudo_2x3": ("perudo", {"dice_per_player": 2, "faces": 3}),
    "openspiel_2x3": ("openspiel_liars_dice", {"dice_per_player": 2, "faces": 3}),
    "perudo_2x4": ("perudo", {"dice_per_player": 2, "faces": 4}),
}
"""Games where the exact exploitability is computed: name → (preset, overrides), 2 players."""

BOTS = ["random", *BOT_PRESETS]
"""Every bot of the project."""

SEARCH = "search:checkpoint:checkpoints/perudo_2p"
"""The search agent of the 5-dice table (the default search over the shipped model)."""

REFERENCE = "checkpoint:checkpoints/perudo_2p"
"""The head to head column's opponent."""


def reference_of(preset: str, root: Path = Path("checkpoints")) -> str | None:
    """The trained 2-player model a blueprint of ``preset`` is played against.

    :data:`REFERENCE` for ``perudo``; for other rules the shipped ``checkpoints/PRESET_2p``
    when there is one (a match needs one rule set), else ``None``.

    Example:
        >>> reference_of("perudo")
        'checkpoint:checkpoints/perudo_2p'
    """
    if preset == "perudo":
        return REFERENCE
    folder = root / f"{preset}_2p"
    return f"checkpoint:{folder}" if (folder / "meta.json").exists() else None


def default_opponents(preset: str) -> list[str]:
    """The opponents ``compare`` plays by default.

    The trained 2-player model of ``preset`` (:func:`reference_of`), if one ships, and
    every bot.

    Example:
        >>> default_opponents("jokers")[:2]
        ['checkpoint:checkpoints/jokers_2p', 'random']
    """
    return [o for o in (reference_of(preset), *BOTS) if o is not None]


def small_rules(name: str) -> RuleSet:
    """The rule set of a small game of :data:`SMALL_GAMES`."""
    if name not in SMALL_GAMES:
        raise ValueError(f"unknown game {name!r}; expected one of {', '.join(SMALL_GAMES)}")
    preset, overrides = SMALL_GAMES[name]
    return RuleSet.preset(preset, num_players=2, **overrides)


def two_player_models(root: Path = Path("checkpoints")) -> list[tuple[str, str]]:
    """``(checkpoint spec, preset)`` of every shipped model whose meta says 2 players."""
    out = []
    for meta_path in sorted(root.glob("*/meta.json")):
        meta = json.loads(meta_path.read_text())
        rules = meta.get("rules", {})
        if rules.get("num_players") == 2:
            card = meta_path.with_name("eval.json")
            preset = "perudo"
            if card.exists():
                preset = json.loads(card.read_text())["rules"]["preset"]
            out.append((f"checkpoint:{meta_path.parent}", preset))
    return out


def shipped_blueprints(root: Path = Path("blueprints")) -> list[tuple[str, str]]:
    """``(blueprint spec, preset)`` of every blueprint of the project (``blueprints/*/``).

    Its ``blueprint.npz`` ships where it fits 5 MiB, or is built by its pipeline
    (``configs/blueprints/NAME.yaml``); it is needed only where its row is measured again.
    """
    out = []
    for path in sorted(root.glob("*/eval.json")):
        out.append((f"blueprint:{path.parent}", json.loads(path.read_text())["rules"]))
    return out


def _load(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text()) if path.exists() else {}


def _save(data: dict[str, Any], path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(json.dumps(data, indent=2))
    os.replace(tmp, path)


def _lbr_row(spec: str, rules: RuleSet, rounds: int, seed: int, response: str) -> dict[str, Any]:
    """LBR against ``spec`` (a fresh agent) as a JSON-able dict."""
    agent = make_agent(spec, rules, seed=seed)
    result = local_best_response(agent, rules, rounds, seed=seed, response=response)
    row = result.to_dict()
    row["seconds_per_game"] = round(result.seconds / rounds, 3)
    return row


def run_small(ns: argparse.Namespace) -> int:
    """The ``small`` subcommand: LBR beside the exact exploitability."""
    out = Path(ns.out)
    data = _load(out)
    extras = _extras(ns.extra)
    for game in ns.games:
        rules = small_rules(game)
        for spec in [*ns.agents, *extras.get(game, [])]:
            key = f"{game} {spec} {ns.response} {ns.rounds} {ns.seed}"
            if key not in data:
                t0 = time.perf_counter()
                exact = exploit(make_agent(spec, rules, seed=ns.seed), rules)
                row = {
                    "game": game,
                    "agent": spec,
                    "exact": exact.exploitability,
                    "exact_seconds": round(time.perf_counter() - t0, 2),
                    "lbr": _lbr_row(spec, rules, ns.rounds, ns.seed, ns.response),
                }
                data[key] = row
                _save(data, out)
            row = data[key]
            lo, hi = row["lbr"]["ci95"]
            verdict = "ok" if lo <= row["exact"] + 1e-12 else "ABOVE EXACT"
            print(
                f"{game:14s} {spec:40s} exact {row['exact']:.3f}  LBR {row['lbr']['payoff']:+.3f} "
                f"[{lo:+.3f}, {hi:+.3f}] ({row['lbr']['games']} games, "
                f"{row['lbr']['seconds_per_game']:.2f} s/game)  {verdict}",
                flush=True,
            )
    if ns.markdown:
        Path(ns.markdown).write_text(small_markdown(data, ns) + "\n")
    return 0


def _extras(items: list[str]) -> dict[str, list[str]]:
    """``--extra GAME=SPEC`` items by game."""
    extras: dict[str, list[str]] = {}
    for item in items:
        game, sep, spec = item.partition("=")
        if not sep or game not in SMALL_GAMES:
            raise SystemExit(f"--extra must be GAME=SPEC with GAME in {', '.join(SMALL_GAMES)}")
        extras.setdefault(game, []).append(spec)
    return extras


def run_margin(ns: argparse.Namespace) -> int:
    """The ``margin`` subcommand: each player's exact result beside the exploitability."""
    out = Path(ns.out)
    data = _load(out)
    extras = _extras(ns.extra)
    for game in ns.games:
        rules = small_rules(game)
        _, trees = round_states(rules)
        players = {name: make_agent(name, rules, seed=ns.seed) for name in ns.player}
        player_reads: dict = {}  # each player is read once for the whole game
        for spec in [*ns.agents, *extras.get(game, [])]:
            keys = {name: f"{game} {name} {spec} {ns.seed}" for name in ns.player}
            if any(key not in data for key in keys.values()):
                agent = make_agent(spec, rules, seed=ns.seed)
                agent_reads: dict = {}  # the agent, once for every measure; freed after
                exact = exploit(agent, rules, trees=trees, reads=agent_reads)
                # tables read here are the players' (the agent's are in agent_reads):
                # ChainMap writes them to its first map, kept for the next agents
                reads = ChainMap(player_reads, agent_reads)
                for name, key in keys.items():
                    if key in data:
                        continue
                    result = head_to_head(players[name], agent, rules, trees=trees, reads=reads)
                    data[key] = {
                        "game": game,
                        "player": name,
                        "agent": spec,
                        "exact": exact.exploitability,
                        "payoff": result.mean,
                        "win_rate": result.win_rate,
                        "seconds": round(exact.seconds + result.seconds, 2),
                    }
                    _save(data, out)
            for name, key in keys.items():
                row = data[key]
                print(
                    f"{game:14s} {spec:40s} exploitability {row['exact']:.3f}  "
                    f"{name} wins {row['payoff']:+.4f} (win rate {row['win_rate']:.4f})",
                    flush=True,
                )
    if ns.markdown:
        tables = (margin_markdown(data, name) for name in ns.player)
        Path(ns.markdown).write_text("\n\n".join(tables) + "\n")
    return 0


def margin_markdown(data: dict[str, Any], player: str) -> str:
    """The ``margin`` rows of ``player`` as a markdown table.

    Example:
        >>> row = {"game": "perudo_2x3", "player": "solver", "agent": "bold", "exact": 0.831,
        ...        "payoff": 0.2293, "win_rate": 0.61465, "seconds": 40.0}
        >>> print(margin_markdown({"k": row}, "solver").splitlines()[-1])
        | perudo_2x3 | `bold` | 0.831 | +0.229 | 0.615 | 0.28 |
    """
    lines = [
        f"| game | agent | exact exploitability | `{player}`'s payoff against it "
        "| its win rate | payoff ÷ exploitability |",
        "|---|---|---|---|---|---|",
    ]
    for row in data.values():
        if row["player"] != player:
            continue
        share = f"{row['payoff'] / row['exact']:.2f}" if row["exact"] >= 0.05 else "—"
        lines.append(
            f"| {row['game']} | `{row['agent']}` | {row['exact']:.3f} | {row['payoff']:+.3f} "
            f"| {row['win_rate']:.3f} | {share} |"
        )
    return "\n".join(lines)


def small_markdown(data: dict[str, Any], ns: argparse.Namespace) -> str:
    """The ``small`` rows as a markdown table."""
    lines = [
        "| game | agent | exact exploitability | LBR payoff [95% CI] | games | LBR ÷ exact "
        "| bound holds |",
        "|---|---|---|---|---|---|---|",
    ]
    for row in data.values():
        if row["lbr"]["response"] != ns.response:
            continue
        lo, hi = row["lbr"]["ci95"]
        # a ratio to an exact figure near 0 says nothing
        ratio = f"{row['lbr']['payoff'] / row['exact']:.2f}" if row["exact"] >= 0.05 else "—"
        holds = "yes" if lo <= row["exact"] + 1e-12 else "**no**"
        lines.append(
            f"| {row['game']} | `{row['agent']}` | {row['exact']:.3f} | "
            f"{row['lbr']['payoff']:+.3f} [{lo:+.3f}, {hi:+.3f}] | {row['lbr']['games']} | "
            f"{ratio} | {holds} |"
        )
    return "\n".join(lines)


def _h2h(player: str, opponent: str, rules: RuleSet, games: int, seed: int) -> dict[str, Any]:
    """``player``'s win rate against ``opponent``, seats rotated (the batched match)."""
    from liars_train.league import member_from_spec, play_match  # torch, only when asked

    result = play_match(
        member_from_spec(player, rules, "cpu"),
        member_from_spec(opponent, rules, "cpu"),
        rules,
        games,
        seed=seed,
    )
    return {"win_rate": result["win_rate"], "ci95": list(result["ci95"]), "games": result["games"]}


def run_table(ns: argparse.Namespace) -> int:
    """The ``table`` subcommand: the 5-dice rows, measured or read, and the page."""
    out = Path(ns.out)
    data = _load(out)
    rows = [(spec, p, ns.rounds, ns.response) for spec, p in two_player_models()]
    rows += [(bot, "perudo", ns.bot_rounds, ns.bot_response) for bot in BOTS]
    rows.append((SEARCH, "perudo", ns.search_rounds, ns.search_response))
    rows += [(spec, p, ns.rounds, ns.response) for spec, p in shipped_blueprints()]
    for spec, preset, rounds, response in rows:
        rules = RuleSet.preset(preset, num_players=2)
        key = f"{spec} {preset}"
        row = data.get(key, {"agent": spec, "preset": preset})
        want = f"{response} {rounds} {ns.seed}"
        if rounds > 0 and row.get("lbr_settings") != want:
            print(f"LBR vs {spec} ({preset}, {rounds} games)...", flush=True)
            row["lbr"] = _lbr_row(spec, rules, rounds, ns.seed, response)
            row["lbr_settings"] = want
            data[key] = row
            _save(data, out)
        if spec != SEARCH and ns.h2h_games > 0:  # what no card holds: played here
            card = _eval_card(spec).get("bots", {}).get("results", [])
            carded = {r["opponent"] for r in card if r["win_rate"] is not None}
            h2h = row.setdefault("h2h", {})
            reference = reference_of(preset) if spec.startswith("blueprint:") else None
            others = BOTS + ([reference] if reference else [])
            for other in others:
                games = ns.reference_games if other == reference else ns.h2h_games
                if other not in carded and other != spec and f"{other} {games}" not in h2h:
                    for stale in [k for k in h2h if k.split()[0] == other]:
                        del h2h[stale]  # played with another number of games
                    h2h[f"{other} {games}"] = _h2h(spec, other, rules, games, ns.seed)
                    data[key] = row
                    _save(data, out)
        data[key] = row
        if "lbr" in row:
            lbr = row["lbr"]
            print(
                f"{spec:45s} {preset:16s} LBR {_payoff(lbr)} "
                f"({lbr['games']} games, {lbr['seconds_per_game']} s/game)",
                flush=True,
            )
    _save(data, out)
    if ns.markdown:
        Path(ns.markdown).write_text(strength_markdown(data, ns))
        print(f"wrote {ns.markdown}")
    return 0


def _cell(win_rate: float | None, ci95: list[float] | None, games: int | None) -> str:
    if win_rate is None:
        return "not measured"
    return f"{win_rate:.3f} [{ci95[0]:.3f}, {ci95[1]:.3f}] ({games})"


def _payoff(lbr: dict[str, Any], bold: bool = False) -> str:
    """An LBR row's payoff and interval, e.g. ``+0.180 [-0.016, +0.363]``.

    With ``bold`` the payoff is in markdown bold (the strength page's cell).
    """
    payoff = f"**{lbr['payoff']:+.3f}**" if bold else f"{lbr['payoff']:+.3f}"
    return f"{payoff} [{lbr['ci95'][0]:+.3f}, {lbr['ci95'][1]:+.3f}]"


def _eval_card(spec: str) -> dict[str, Any]:
    """The ``eval.json`` beside a shipped checkpoint, or ``{}``.

    A blueprint's (``blueprints/NAME/eval.json``) gives its best responses only: its head
    to head figures are played here.
    """
    if spec.startswith("blueprint:"):
        card = _load(Path(spec.partition(":")[2]) / "eval.json")
        return {"exploit": card["exploit"]} if "exploit" in card else {}
    if not spec.startswith("checkpoint:"):
        return {}
    return _load(Path(spec.partition(":")[2]) / "eval.json")


def _is_recipe(card: dict[str, Any]) -> bool:
    """Whether a blueprint's card is of the shipped recipe (``blueprint`` with no path)."""
    from liars_env.solver.cache import RECIPE

    settings = {key: card.get(key) for key in RECIPE}
    return bool(card) and settings == RECIPE


def strength_markdown(data: dict[str, Any], ns: argparse.Namespace) -> str:
    """``docs/strength.md``: every 2-player agent's strength figures in one table."""
    ref_card = _eval_card(REFERENCE)
    ref_vs_bots = {r["opponent"]: r for r in ref_card.get("bots", {}).get("results", [])}
    header = ["agent (rules)", "exact exploitability", "LBR payoff [95% CI] (games)",
              "RL best response: gain over parity", f"vs `{REFERENCE.partition(':')[2]}`",
              *[f"vs `{b}`" for b in BOTS]]  # fmt: skip
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    small = _load(Path(ns.small)) if ns.small else {}
    recipes = [r["exact"] for r in small.values() if r["agent"] == "blueprint"]
    recipe_exact = max(recipes) if recipes else None
    for row in data.values():
        spec, preset = row["agent"], row["preset"]
        h2h = {k.split()[0]: v for k, v in row.get("h2h", {}).items()}  # by opponent
        cells = [f"`{spec}` ({preset})", "none at 5 dice (¹)"]
        folder = spec.partition(":")[2] if spec.startswith("blueprint:") else None
        if recipe_exact is not None and folder and _is_recipe(_load(Path(folder) / "eval.json")):
            cells[1] += f"; its recipe at most {recipe_exact:.3f} on the small games (⁷)"
        lbr = row.get("lbr")
        cells.append(
            f"{_payoff(lbr, bold=True)} ({lbr['games']}, `{lbr['response']}`)"
            if lbr
            else "not measured (²)"
        )
        card = _eval_card(spec)
        rl = card.get("exploit", {}).get("headline")
        cells.append(
            f"{rl['gain']:+.3f} (win rate; {rl['steps'] / 1e6:g}M decisions, seeds "
            f"{'/'.join(map(str, rl['seeds']))}) (³)"
            if rl
            else "not measured (⁴)"
        )
        # head to head against the reference model
        if spec == REFERENCE:
            cells.append("0.5 (itself)")
        elif preset != "perudo":
            own = reference_of(preset)
            if own in h2h:  # a blueprint of other rules, against the model of its rules
                name = own.partition(":")[2].rpartition("/")[2]
                cells.append(f"{_cell(**h2h[own])} against `{name}` (⁵)")
            else:
                cells.append("other rules (⁵)")
        elif spec in ref_vs_bots and ref_vs_bots[spec]["win_rate"] is not None:
            r = ref_vs_bots[spec]
            cells.append(
                _cell(1 - r["win_rate"], [1 - r["ci95"][1], 1 - r["ci95"][0]], r["games"]) + " (³)"
            )
        elif spec == SEARCH:
            cells.append("0.722 [0.705, 0.737] (3009) (⁶)")
        elif REFERENCE in h2h:
            cells.append(_cell(**h2h[REFERENCE]))
        else:
            cells.append("not measured")
        bots = {r["opponent"]: r for r in card.get("bots", {}).get("results", [])}
        for bot in BOTS:
            if bot == spec:
                cells.append("0.5 (itself)")
            elif bot in bots and bots[bot]["win_rate"] is not None:
                r = bots[bot]
                cells.append(_cell(r["win_rate"], r["ci95"], r["games"]) + " (³)")
            elif bot in h2h:
                cells.append(_cell(**h2h[bot]))
            elif spec == SEARCH and bot in SEARCH_QUOTED:
                cells.append(SEARCH_QUOTED[bot] + " (⁶)")
            else:
                cells.append("not measured")
        lines.append("| " + " | ".join(cells) + " |")
    small_ns = argparse.Namespace(response=ns.response)
    margin = _load(Path(ns.margin)) if ns.margin else {}
    return PAGE.format(
        table="\n".join(lines),
        small=small_markdown(small, small_ns)
        if small
        else "Not measured: no `--small` file given.",
        margin=margin_markdown(margin, "solver")
        if margin
        else "Not measured: no `--margin` file given.",
        five_dice=five_dice_margin(data),
        rounds=ns.rounds,
        bot_rounds=ns.bot_rounds,
        search_rounds=ns.search_rounds,
        h2h_games=ns.h2h_games,
        reference_games=ns.reference_games,
        response=ns.response,
        bot_response=ns.bot_response,
        search_response=ns.search_response,
        seed=ns.seed,
    )


def five_dice_margin(data: dict[str, Any]) -> str:
    """What the blueprint takes from ``perudo_2p`` beside what LBR takes, as a sentence.

    From the ``table`` rows: the blueprint's head to head win rate against
    :data:`REFERENCE` (a payoff of ``2 × win rate − 1``) and LBR's payoff against the
    reference, whose interval's lower end bounds its exploitability from below.

    Example:
        >>> rows = {
        ...     "a": {"agent": "blueprint:blueprints/perudo_2p", "h2h": {
        ...         f"{REFERENCE} 20000": {"win_rate": 0.532, "ci95": [0.525, 0.539]}}},
        ...     "b": {"agent": REFERENCE, "lbr": {"payoff": 0.86, "ci95": [0.725, 0.931]}},
        ... }
        >>> print(five_dice_margin(rows))  # doctest: +NORMALIZE_WHITESPACE
        At 5 dice, `blueprint:blueprints/perudo_2p` wins 0.532 against `perudo_2p`, a payoff
        of +0.064, where LBR takes +0.860 [+0.725, +0.931]: at most 0.09 of what a best
        response takes (whose gain is at least +0.725). A win rate of 0.60 is a payoff of
        +0.200: 0.20 of the most any strategy can take (+1), 0.28 of LBR's lower end.
    """
    blueprint = next(
        (r for r in data.values() if r.get("agent") == "blueprint:blueprints/perudo_2p"), {}
    )
    cell = next((v for k, v in blueprint.get("h2h", {}).items() if k.startswith(REFERENCE)), None)
    lbr = next((r.get("lbr") for r in data.values() if r.get("agent") == REFERENCE), None)
    if cell is None or lbr is None:
        return "At 5 dice: not measured (the table has no blueprint head to head or LBR row)."
    payoff = 2 * cell["win_rate"] - 1
    low, high = lbr["ci95"]
    if low <= 0:
        return "At 5 dice: LBR's interval against `perudo_2p` reaches 0, so it bounds nothing."
    return textwrap.fill(
        f"At 5 dice, `blueprint:blueprints/perudo_2p` wins {cell['win_rate']:.3f} against "
        f"`perudo_2p`, a payoff of {payoff:+.3f}, where LBR takes {lbr['payoff']:+.3f} "
        f"[{low:+.3f}, {high:+.3f}]: at most {payoff / low:.2f} of what a best response "
        f"takes (whose gain is at least {low:+.3f}). A win rate of 0.60 is a payoff of "
        f"+0.200: 0.20 of the most any strategy can take (+1), {0.2 / low:.2f} of LBR's "
        "lower end.",
        width=88,
    )


SEARCH_QUOTED = {
    "probabilistic": "0.963 [0.936, 0.979] (300)",
    "cautious": "0.964 [0.936, 0.980] (302)",
    "bold": "0.930 [0.895, 0.954] (300)",
    "bayes": "0.983 [0.969, 0.991] (601)",
    "belief": "0.982 [0.966, 0.991] (503)",
}
"""The search agent's cells of docs/search.md's strength table (its command is there)."""


PAGE = """# Strength of the 2-player agents

Every 2-player agent of the project in one table, at the game people play: Perudo with 5
dice each (`perudo_calza` and `perudo_palifico` for their own models). Generated by

```sh
python benchmarks/lbr.py table --rounds {rounds} --bot-rounds {bot_rounds} \\
    --search-rounds {search_rounds} --h2h-games {h2h_games} \\
    --reference-games {reference_games} --response {response} \\
    --bot-response {bot_response} --search-response {search_response} --seed {seed} \\
    --out results/lbr_table.json --small results/lbr_small.json \\
    --margin results/margin.json --markdown docs/strength.md
```

after the small games' runs (`python benchmarks/lbr.py small ...` and `... margin ...`, below).

Columns (win rates are of the row's agent, seats rotated, 95% Wilson intervals, games in
parentheses):

- **exact exploitability**: what a best response gains, exactly
  ({{func}}`liars_env.solver.exploit`, NashConv / 2 in game payoff units: +1 a win, −1 a
  loss). Known only where the solver's round trees fit (1 die each, or 2 dice of up to 4
  faces): see [the solver](solver.md) and the small games below.
- **LBR**: the mean payoff of the local best response against the agent, over both seats
  ([Local best response](lbr.md)); in the same units, a lower bound on the exact
  exploitability (a payoff below 0 bounds nothing: the exploitability is at least 0).
  LBR's continuation assumption is in each cell: `{response}` for the models,
  `{bot_response}` for the bots (cheaper: a bot is asked hand by hand), `{search_response}`
  for the search (each query is a search).
- **RL best response**: `liars-exploit`'s learner (PPO from scratch) against the frozen
  agent: its win rate minus parity (0.5), the headline of the model's card (mean over the
  seeds named). In payoff units it is twice that. Also a lower bound, much looser.
- **vs `perudo_2p`** and **vs each bot**: head to head win rates.

Rows: every shipped 2-player model, every bot, the search over `perudo_2p`, and every
shipped blueprint (`blueprint:blueprints/NAME`: CFR+ on every round with each player
remembering part of the round's bids, [the blueprint](blueprint.md)), whose head to
head cells are played here ({reference_games} games against `perudo_2p`, or the trained
model of its rules, {h2h_games} against each bot, seed {seed}).

{table}

Reading it: the exploitability of an agent is at least the lower end of its LBR interval
(LBR is one strategy; a best response does at least as well); its largest possible value
is 1, a best response winning every game. The RL best response's gain is a win rate above
0.5, half of a payoff: on the same scale as LBR it is twice the figure shown. Head to head
win rates measure strength against one opponent, not how exploitable an agent is: an agent
can beat every bot and still lose nearly every game to LBR.

1. A 5-dice round has 60 bids and about 2⁶⁰ bid sequences; the exact solver stops at
   400,000 (docs/solver.md).
2. LBR asks the agent at every position for all 252 hands; the rollout search takes
   about 17 ms per position at 5 dice: 26–52 s of one core per game with `call`, about 4
   minutes with `policy`. Hence few games, or none ("not measured").
3. From the model's `checkpoints/NAME/eval.json` (its card; ladder seed 1, `liars-exploit`
   with 2M learner decisions and the seeds named), with the commands of its card; a
   blueprint's best responses from `blueprints/NAME/eval.json`, the same protocol. A
   bot's row against `perudo_2p` is the card's cell seen from the bot's side.
4. Not measured: the RL best response trains 2M learner decisions per agent and seed
   (about 4 minutes of this 2-core machine against a blueprint, more against a network,
   far more against a search); not run for this table.
5. `perudo_2p` plays Perudo without calza or palifico; a match needs one rule set. A
   blueprint of other rules plays the trained model of its rules instead, as many
   games, named in its cell.
6. Quoted from [search](search.md#strength) (the ladder's cells, its command there); not
   regenerated by this script.
7. The blueprint's recipe (`blueprint` with no path: the same settings, solved for each
   game) on the small games below, where the exact exploitability is known: the largest
   of its rows there (Perudo's and OpenSpiel's rules; on jokers 1×4 and palifico 2×3 it
   is at 0.0012 and 0.0029, [the blueprint](blueprint.md)). At 5 dice it remembers fewer
   bids in the first rounds, so this is what the method reaches, not a bound on the
   5-dice table.

## Where the truth is known

On games the solver solves, the exact exploitability and LBR side by side (LBR with
`{response}`, seats rotated, seed 0; the 95% interval must reach down to the exact
figure, and does in every row):

```sh
CK=checkpoint:runs/small/exploitability_perudo_1x6_tuned_0/checkpoints/step_0000299008
python benchmarks/lbr.py small --games perudo_1x4 perudo_1x5 perudo_1x6 openspiel_1x6 \\
    perudo_2x3 openspiel_2x3 --rounds 300 --out results/lbr_small.json \\
    --markdown results/lbr_small.md --extra perudo_1x6=$CK \\
    --extra "perudo_1x4=search:belief?method=resolve" --extra perudo_1x4=search:belief \\
    --extra perudo_1x4=blueprint --extra perudo_1x5=blueprint --extra perudo_1x6=blueprint \\
    --extra openspiel_1x6=blueprint --extra perudo_2x3=blueprint --extra openspiel_2x3=blueprint
```

(the checkpoint is the `tuned` recipe of `benchmarks/exploitability.py`, 300,000 learner
decisions on perudo 1×6, seed 0: `python benchmarks/exploitability.py --games perudo_1x6
--recipes tuned --seeds 0 --steps 300000 --no-solver --runs-dir runs/small`. `blueprint`
is the recipe of `blueprints/perudo_2p`, solved for each small game: the method that
plays 5 dice, where its exploitability is known.)

{small}

## What an equilibrium wins

Why the agents nearest equilibrium above win little against `perudo_2p`, though LBR
takes most of a game from it: an equilibrium does not look for its opponent's mistakes.
It profits only where the opponent strays from what does well against the equilibrium
itself, and a best response profits from every mistake. On the games the solver
solves, the exact result of the equilibrium (the `solver` agent) against each agent
({{func}}`liars_env.solver.head_to_head`: both read at every information state, no
sampling), beside what a best response takes from it:

```sh
liars-train --config configs/solvable/perudo_2x4_league.yaml
liars-train --config configs/solvable/perudo_2x4_league.yaml --set total_steps=400000 \\
    --set run_name=league_perudo_2x4_short
python benchmarks/lbr.py margin --games perudo_1x6 perudo_2x3 \\
    --out results/margin.json --markdown results/margin.md
python benchmarks/lbr.py margin --games perudo_2x4 \\
    --agents random belief probabilistic cautious bold \\
    --extra perudo_2x4=checkpoint:runs/league_perudo_2x4_short/checkpoints/step_0000163840 \\
    --extra perudo_2x4=checkpoint:runs/league_perudo_2x4_short/checkpoints/step_0000393216 \\
    --extra perudo_2x4=checkpoint:runs/league_perudo_2x4/checkpoints/step_0002998272 \\
    --out results/margin.json --markdown results/margin.md
```

(the checkpoints: `perudo_2p`'s league recipe, its first stage, trained on perudo 2×4
for 164k, 393k and 3M decisions: [its
config](../configs/solvable/perudo_2x4_league.yaml). Each agent is read at every
information state, once for both measures. Read twice, as when the rows of 2026-12-07
were measured, a bot, asked view by view, took 20–45 s on perudo 1×6 and 2×3 and 12–18
minutes on 2×4 (`probabilistic`, `belief`), a checkpoint, asked a depth at a time, about
3.5 minutes on 2×4. `cautious` and `bold` on 2×4 (2026-12-08), read once by the faster
probability bots, took about 100 s each. `bayes`, whose reads follow the bids, is not
measured on 2×4.)

{margin}

Reading it: the exploitability is what a best response takes from the agent; the
equilibrium takes its payoff column, at least 0 (with seats rotated nobody beats it)
and at most the exploitability. The last column is the share of an agent's weakness
that an equilibrium turns into wins.

{five_dice}
"""


def run_compare(ns: argparse.Namespace) -> int:
    """The ``compare`` subcommand: each agent's LBR and its games against each opponent."""
    out = Path(ns.out)
    data = _load(out)
    rules = RuleSet.preset(ns.rules, num_players=2)
    if ns.games == 0:
        ns.opponents = []
    elif ns.opponents is None:
        ns.opponents = default_opponents(ns.rules)
    for spec in ns.agents:
        row = data.setdefault(spec, {})
        if ns.rounds > 0 and f"lbr {ns.rounds} {ns.response} {ns.seed}" not in row:
            print(f"LBR vs {spec} ({ns.rounds} games)...", flush=True)
            row[f"lbr {ns.rounds} {ns.response} {ns.seed}"] = _lbr_row(
                spec, rules, ns.rounds, ns.seed, ns.response
            )
            _save(data, out)
        for other in ns.opponents:
            key = f"{other} {ns.games} {ns.seed}"
            if other != spec and key not in row:
                row[key] = _h2h(spec, other, rules, ns.games, ns.seed)
                _save(data, out)
    head = ["agent", *([f"LBR ({ns.rounds}, `{ns.response}`)"] if ns.rounds > 0 else [])]
    head += [f"vs `{o}`" for o in ns.opponents]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for spec in ns.agents:
        row = data[spec]
        cells = [f"`{spec}`"]
        if ns.rounds > 0:
            lbr = row[f"lbr {ns.rounds} {ns.response} {ns.seed}"]
            cells.append(_payoff(lbr))
        for other in ns.opponents:
            cell = row.get(f"{other} {ns.games} {ns.seed}")
            cells.append(_cell(**cell) if cell else "—")
        lines.append("| " + " | ".join(cells) + " |")
    print("\n".join(lines))
    return 0


def build_parser() -> argparse.ArgumentParser:
    """The benchmark's argument parser."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    small = sub.add_parser("small", help="LBR beside the exact exploitability")
    small.add_argument("--games", nargs="+", default=list(SMALL_GAMES), choices=list(SMALL_GAMES))
    small.add_argument("--agents", nargs="+", default=BOTS)
    small.add_argument("--rounds", type=int, default=400, help="LBR games per cell")
    small.add_argument("--markdown", help="also write the rows as a markdown table here")
    margin = sub.add_parser("margin", help="the equilibrium's exact result against each agent")
    margin.add_argument(
        "--games",
        nargs="+",
        default=["perudo_1x6", "perudo_2x3"],
        choices=list(SMALL_GAMES),
    )
    margin.add_argument(
        "--agents", nargs="*", default=BOTS, help="agents on every game (none: only --extra)"
    )
    margin.add_argument(
        "--player",
        nargs="+",
        default=["solver"],
        help="whose results are measured, each agent read once for all of them (default: "
        "the equilibrium, solver)",
    )
    margin.add_argument("--markdown", help="also write the rows as a markdown table here")
    table = sub.add_parser("table", help="the 5-dice table and docs/strength.md")
    table.add_argument("--rounds", type=int, default=300, help="LBR games per model")
    table.add_argument("--bot-rounds", type=int, default=100, help="LBR games per bot")
    table.add_argument(
        "--search-rounds", type=int, default=0, help="LBR games against the search (0: skip)"
    )
    table.add_argument(
        "--h2h-games", type=int, default=1000, help="games per bot-vs-bot cell (0: skip)"
    )
    table.add_argument(
        "--reference-games",
        type=int,
        default=2000,
        help="games of a blueprint against checkpoints/perudo_2p (or the model of its rules)",
    )
    table.add_argument("--markdown", help="write the strength page here")
    table.add_argument(
        "--small", help="the JSON of a `small` run, shown on the page as the small games' table"
    )
    table.add_argument(
        "--margin", help="the JSON of a `margin` run, shown on the page as what an equilibrium wins"
    )
    table.add_argument(
        "--bot-response",
        default="call",
        choices=["call", "policy"],
        help="LBR's assumption for bots",
    )
    table.add_argument(
        "--search-response",
        default="call",
        choices=["call", "policy"],
        help="LBR's assumption against the search (each query is a search)",
    )
    compare = sub.add_parser("compare", help="candidates side by side (LBR, head to head)")
    compare.add_argument("--agents", nargs="+", required=True, help="the candidates' specs")
    compare.add_argument(
        "--opponents",
        nargs="+",
        help="default: the trained 2-player model of --rules, if one ships, and every bot",
    )
    compare.add_argument("--games", type=int, default=2000, help="games per pair (0: skip)")
    compare.add_argument("--rounds", type=int, default=100, help="LBR games (0: skip)")
    compare.add_argument("--rules", default="perudo", help="a 2-player preset")
    for p in (small, table, compare):
        p.add_argument("--response", default="policy", choices=["call", "policy"])
    for p in (small, margin):
        p.add_argument(
            "--extra",
            action="append",
            default=[],
            metavar="GAME=SPEC",
            help="an agent measured on one game only (a checkpoint of that game, a search)",
        )
    for p in (small, margin, table, compare):
        p.add_argument("--seed", type=int, default=0)
        p.add_argument("--out", required=True, help="JSON file of the rows (resumed)")
    return parser


def main(argv: list[str] | None = None) -> int:
    """Entry point."""
    ns = build_parser().parse_args(argv)
    import torch

    torch.set_num_threads(1)
    commands = {"small": run_small, "margin": run_margin, "table": run_table}
    return {**commands, "compare": run_compare}[ns.command](ns)


if __name__ == "__main__":
    sys.exit(main())
