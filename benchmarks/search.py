"""Search at play time: latency per decision, strength against budget, exploitability.

Strength against other players is the ladder's (``python -m liars_train.evaluation.ladder
--rows search:... ...``, see ``docs/search.md``); this script measures the rest:

* ``latency``: seconds per decision of ``search:SPEC`` at its settings on one torch
  thread, median and 95th percentile, at 2, 3 and 6 players with 5 dice (the searcher
  in one seat of games its base plays in every other)::

      python benchmarks/search.py latency --players 2 3 6 --decisions 200

* ``budget``: for each budget (playouts per decision), the latency and the win rate of
  ``search:checkpoint:checkpoints/perudo_{P}p?budget=B`` in one seat against its base in
  every other (batched, :func:`liars_train.league.play_match`)::

      python benchmarks/search.py budget --players 2 --budgets 40 160 320 640 --games 300

* ``oracle``: where the search loses strength: the win rate of
  ``search:checkpoint:checkpoints/perudo_{P}p`` (with ``--settings``) in one seat (rotated)
  against ``--opponent`` in every other, scalar games, once sampling the hidden dice and
  once seeing them (the test-only ``oracle``): the gap is what the belief over hands costs::

      python benchmarks/search.py oracle --players 2 --opponent belief --games 100 \
          --settings prior=0.5,temperature=0.02

* ``types``: how fast ``belief=mixed`` tells who is bidding: scalar 2-player games of
  the base in seat 0 against ``--opponent``; at each of seat 0's decisions, the posterior
  that the opponent is the base (:meth:`~liars_env.agents.search.SearchAgent.typed_posteriors`),
  by the number of its bids this round (median, and how often it is above ½)::

      python benchmarks/search.py types --opponent bayes --games 30

* ``exploit``: the exact exploitability (:func:`liars_env.solver.exploit`) of each base
  and of ``search:`` over it at each ``--settings`` on each of the small 2-player
  ``--games`` (names of ``benchmarks/exploitability.py``'s suite; default perudo_1x6),
  with ``--latency-games`` the seconds per decision against the base, in one table::

      python benchmarks/search.py exploit --bases belief checkpoint:PATH \
          --games perudo_1x6 openspiel_1x6 --settings "" method=resolve --latency-games 10

Every run uses one torch thread (``torch.set_num_threads(1)``) and prints a Markdown
table; ``--out`` writes the rows as JSON.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np
import torch

from liars_env import LiarsDiceGame, ObservationLayout, RuleSet
from liars_env.agents import make_agent, view_of
from liars_env.solver import exploit

sys.path.insert(0, str(Path(__file__).resolve().parent))


def with_settings(spec: str, settings: str) -> str:
    """``spec`` with ``settings`` added after its ``?`` (or a new one)."""
    if not settings:
        return spec
    return f"{spec}{',' if '?' in spec else '?'}{settings}"


def play_out(game, layout, state, rng, seat: int, act, other, until=lambda: False) -> None:
    """Plays ``state`` on until the game ends, ``seat`` is out, or ``until()``.

    ``act(view)`` moves for ``seat`` and ``other`` for every other seat.
    """
    while not state.is_over and state.dice_left[seat] > 0 and not until():
        view = view_of(game, layout, state)
        game.apply(state, act(view) if state.current_player == seat else other.act(view), rng)


def latency(players: int, spec: str, decisions: int, seed: int = 0) -> dict:
    """Seconds per decision of ``spec`` in seat 0 of 5-dice perudo games."""
    rules = RuleSet.preset("perudo", num_players=players)
    game, layout = LiarsDiceGame(rules), ObservationLayout(rules)
    agent = make_agent(spec, rules, seed=seed)
    base = make_agent(spec.partition(":")[2].rpartition("?")[0] or spec.partition(":")[2], rules)
    times: list[float] = []

    def timed(view):
        t0 = time.perf_counter()
        action = agent.act(view)
        times.append(time.perf_counter() - t0)
        return action

    g = 0
    while len(times) < decisions:
        rng = np.random.default_rng([seed, g])
        g += 1
        play_out(
            game, layout, game.new_game(rng), rng, 0, timed, base, lambda: len(times) >= decisions
        )
    return {
        "players": players,
        "spec": spec,
        "decisions": len(times),
        "median_s": float(np.median(times)),
        "p95_s": float(np.percentile(times, 95)),
    }


def budget_row(players: int, budget: int, games: int, seed: int, settings: str) -> dict:
    """Latency and win rate against the base of ``search`` at one budget."""
    from liars_train.league import member_from_spec, play_match

    rules = RuleSet.preset("perudo", num_players=players)
    base = f"checkpoint:checkpoints/perudo_{players}p"
    spec = with_settings(f"search:{base}?budget={budget}", settings)
    timing = latency(players, spec, 60, seed)
    t0 = time.perf_counter()
    match = play_match(
        member_from_spec(spec, rules, "cpu"),
        member_from_spec(base, rules, "cpu"),
        rules,
        games,
        seed,
    )
    return {
        **timing,
        "budget": budget,
        "games": match["games"],
        "win_rate": match["win_rate"],
        "ci95": match["ci95"],
        "match_seconds": time.perf_counter() - t0,
    }


def oracle_row(players: int, settings: str, opponent: str, games: int, oracle: bool) -> dict:
    """Win rate of the search in one seat (rotated) against ``opponent`` in the others."""
    from liars_train.stats import wilson_interval

    rules = RuleSet.preset("perudo", num_players=players)
    game, layout = LiarsDiceGame(rules), ObservationLayout(rules)
    spec = with_settings(f"search:checkpoint:checkpoints/perudo_{players}p", settings)
    search, other = make_agent(spec, rules, seed=0), make_agent(opponent, rules, seed=1)
    state = None
    if oracle:
        search.oracle = lambda view: [list(d) for d in state.dice]  # the game in play
    wins, t0 = 0, time.perf_counter()
    for g in range(games):
        rng, seat = np.random.default_rng([7, g]), g % players
        state = game.new_game(rng)
        play_out(game, layout, state, rng, seat, search.act, other)
        wins += state.dice_left[seat] > 0
    lo, hi = wilson_interval(wins, games)
    return {
        "spec": spec,
        "opponent": opponent,
        "oracle": oracle,
        "games": games,
        "win_rate": wins / games,
        "ci95": [lo, hi],
        "seconds": time.perf_counter() - t0,
    }


def types_rows(opponent: str, games: int, seed: int, settings: str) -> list[dict]:
    """P(the opponent is the base | its bids this round), by its number of bids."""
    rules = RuleSet.preset("perudo", num_players=2)
    game, layout = LiarsDiceGame(rules), ObservationLayout(rules)
    spec = with_settings("search:checkpoint:checkpoints/perudo_2p?belief=mixed", settings)
    search, other = make_agent(spec, rules), make_agent(opponent, rules, seed=1)
    seen: dict[int, list[float]] = {}

    def act(view):
        if any(seat == 1 for seat, _, _ in view.bids):
            joint = search.typed_posteriors([view])[0][1][1]
            made = sum(seat == 1 for seat, _, _ in view.bids)
            seen.setdefault(min(made, 3), []).append(float(joint[0].sum()))
        return search.base_agent.act(view)

    for g in range(games):
        rng = np.random.default_rng([seed, g])
        play_out(game, layout, game.new_game(rng), rng, 0, act, other)
    return [
        {
            "opponent": opponent,
            "bids": k,
            "decisions": len(p),
            "median": float(np.median(p)),
            "above_half": float(np.mean(np.array(p) > 0.5)),
        }
        for k, p in sorted(seen.items())
    ]


def exploit_rows(
    bases: list[str], rules: RuleSet, settings: list[str], game: str = "", latency_games: int = 0
) -> list[dict]:
    """Exact exploitability of each base and of ``search:`` over it at each of ``settings``.

    With ``latency_games``, each search agent also plays that many games against its base
    (a fresh agent each game, seats alternating) and its seconds per decision are timed.
    """
    from liars_env.solver import round_states

    _, trees = round_states(rules)
    rows = []
    for base in bases:
        specs = [base] + [with_settings(f"search:{base}", s) for s in settings]
        for spec in specs:
            t0 = time.perf_counter()
            agent = make_agent(spec, rules, seed=0)
            built = time.perf_counter() - t0
            result = exploit(agent, rules, trees=trees, seats=(0,))  # views are seat-relative
            row = {
                "game": game,
                "spec": spec,
                "exploitability": result.exploitability,
                "queries": result.queries,
                "seconds": result.seconds,
                "build_s": built,
            }
            if latency_games and spec != base:
                row |= decision_seconds(spec, base, rules, latency_games)
            rows.append(row)
            print(rows[-1], flush=True)
    return rows


def decision_seconds(spec: str, base: str, rules: RuleSet, games: int) -> dict:
    """Median and largest seconds per decision of ``spec`` against ``base``, fresh agents."""
    game, layout = LiarsDiceGame(rules), ObservationLayout(rules)
    other = make_agent(base, rules, seed=1)
    first, later = [], []
    for g in range(games):
        agent = make_agent(spec, rules, seed=g)
        rng = np.random.default_rng([7, g])
        state = game.new_game(rng)
        seat = g % 2
        while not state.is_over:
            view = view_of(game, layout, state)
            if state.current_player != seat:
                game.apply(state, other.act(view), rng)
                continue
            t0 = time.perf_counter()
            action = agent.act(view)
            (later if view.bids else first).append(time.perf_counter() - t0)
            game.apply(state, action, rng)
    times = first + later
    return {
        "latency_games": games,
        "decisions": len(times),
        "median_s": float(np.median(times)),
        "max_s": float(np.max(times)),
        "first_bid_median_s": float(np.median(first)) if first else float("nan"),
        "later_median_s": float(np.median(later)) if later else float("nan"),
    }


def exploit_table(rows: list[dict]) -> str:
    """The exploit rows as one Markdown table."""
    lines = [
        "| game | agent | exact exploitability | s per decision, median (max) | seconds |",
        "|---|---|---|---|---|",
    ]
    for r in rows:
        lat = f"{r['median_s']:.3f} ({r['max_s']:.2f})" if "median_s" in r else ""
        lines.append(
            f"| {r['game']} | `{r['spec']}` | {r['exploitability']:.4f} | {lat} | "
            f"{r['seconds']:.0f} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """Entry point: ``python benchmarks/search.py {latency,budget,oracle,exploit,types} ...``."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="what", required=True)
    lat = sub.add_parser("latency")
    lat.add_argument("--players", type=int, nargs="+", default=[2, 3, 6])
    lat.add_argument("--decisions", type=int, default=200)
    lat.add_argument("--settings", default="", help="search settings, key=value,...")
    bud = sub.add_parser("budget")
    bud.add_argument("--players", type=int, default=2)
    bud.add_argument("--budgets", type=int, nargs="+", default=[40, 160, 320, 640])
    bud.add_argument("--games", type=int, default=300)
    bud.add_argument("--settings", default="")
    ora = sub.add_parser("oracle")
    ora.add_argument("--players", type=int, default=2)
    ora.add_argument("--opponent", default="belief")
    ora.add_argument("--games", type=int, default=100)
    ora.add_argument("--settings", default="")
    exp = sub.add_parser("exploit")
    exp.add_argument("--bases", nargs="+", default=["belief"])
    exp.add_argument(
        "--games",
        nargs="+",
        default=["perudo_1x6"],
        help="solvable games: names of benchmarks/exploitability.py's GAMES, or PRESET_DxF",
    )
    exp.add_argument(
        "--settings",
        nargs="+",
        default=[""],
        help="one search row per settings string (key=value,...; '' is the default)",
    )
    exp.add_argument("--latency-games", type=int, default=0, help="games per search agent to time")
    typ = sub.add_parser("types")
    typ.add_argument("--opponent", default="bayes")
    typ.add_argument("--games", type=int, default=30)
    typ.add_argument("--settings", default="")
    for p in (lat, bud, ora, exp, typ):
        p.add_argument("--seed", type=int, default=0)
        p.add_argument("--out")
    ns = parser.parse_args(argv)
    torch.set_num_threads(1)
    if ns.what == "latency":
        rows = [
            latency(
                p,
                with_settings(f"search:checkpoint:checkpoints/perudo_{p}p", ns.settings),
                ns.decisions,
                ns.seed,
            )
            for p in ns.players
        ]
        print("| players | decisions | median s | 95th percentile s |\n|---|---|---|---|")
        for r in rows:
            print(f"| {r['players']} | {r['decisions']} | {r['median_s']:.3f} | {r['p95_s']:.3f} |")
    elif ns.what == "budget":
        rows = []
        for b in ns.budgets:
            rows.append(budget_row(ns.players, b, ns.games, ns.seed, ns.settings))
            print(rows[-1], flush=True)
        print("| budget | median s | 95th pct s | games | win rate vs base [95% CI] |")
        print("|---|---|---|---|---|")
        for r in rows:
            print(
                f"| {r['budget']} | {r['median_s']:.3f} | {r['p95_s']:.3f} | {r['games']} | "
                f"{r['win_rate']:.3f} [{r['ci95'][0]:.3f}, {r['ci95'][1]:.3f}] |"
            )
    elif ns.what == "oracle":
        rows = []
        for seeing in (False, True):
            rows.append(oracle_row(ns.players, ns.settings, ns.opponent, ns.games, seeing))
            print(rows[-1], flush=True)
        print(f"| search against {ns.opponent} | games | win rate [95% CI] |\n|---|---|---|")
        for r in rows:
            label = "sees the hidden dice" if r["oracle"] else "samples the hidden dice"
            print(
                f"| {label} | {r['games']} | "
                f"{r['win_rate']:.3f} [{r['ci95'][0]:.3f}, {r['ci95'][1]:.3f}] |"
            )
    elif ns.what == "types":
        rows = types_rows(ns.opponent, ns.games, ns.seed, ns.settings)
        print(f"| bids of `{ns.opponent}` this round | decisions | P(base), median | above ½ |")
        print("|---|---|---|---|")
        for r in rows:
            bids = "3 or more" if r["bids"] == 3 else r["bids"]
            print(f"| {bids} | {r['decisions']} | {r['median']:.3f} | {r['above_half']:.2f} |")
    else:
        from exploitability import game_rules  # the solvable games' suite, beside this file

        rows = []
        for name in ns.games:
            rules = game_rules(name)
            rows += exploit_rows(ns.bases, rules, ns.settings, name, ns.latency_games)
        print(exploit_table(rows))
    if ns.out:
        Path(ns.out).write_text(json.dumps(rows, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
