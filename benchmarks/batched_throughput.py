"""Decisions per second of the batched engine vs OpenSpiel's ``liars_dice`` via pyspiel.

Each batched step samples one random legal action per game and steps every game;
observations and masks are produced every step (they are part of what is timed). The
actions come from ``BatchedEnv.sample_actions`` (look-ups in tables of each position's
legal actions; ``--sampler env``, the default) or from ``sample_legal`` over the
returned mask (``--sampler mask``, works on any mask); both draw the same actions for a
seed. The peer is OpenSpiel's C++ ``liars_dice`` (2 players, 5 dice) driven from Python
with ``pyspiel``, one game at a time, timed both bare (``legal_actions`` only) and with
``observation_tensor()`` every decision (the same work our engine does). Every figure is
the median of several interleaved repeats.

Run: ``python benchmarks/batched_throughput.py [--seconds 2] [--repeats 3] [--device cpu]
[--threads N] [--sampler env|mask] [--backends auto torch numba] [--busy]``.
``--threads`` sets the engine's threads (default: the engine's own default, one; 0:
torch's default); ``--backends`` the engine's backends to time (default: ``auto``, what
a user gets: the compiled numba loops on the CPU); ``--busy`` measures every
configuration twice, idle and with a separate process spinning on one core, and prints
both side by side.
"""

from __future__ import annotations

import argparse
import itertools
import random
import statistics
import time

import torch
from report import busy_core, print_idle_busy_table, print_ratio_table

from liars_env.batched import BACKENDS, BatchedEnv, resolve_backend, sample_legal
from liars_env.batched.threads import DEFAULT_THREADS


def batched_rate(
    players: int,
    batch: int,
    seconds: float,
    device: str,
    threads: int | None = DEFAULT_THREADS,
    sampler: str = "env",
    backend: str = "auto",
) -> float:
    """Decisions per second of random legal play at one batch size."""
    env = BatchedEnv(
        "perudo",
        num_envs=batch,
        num_players=players,
        device=device,
        seed=0,
        check_actions=False,
        threads=threads,
        backend=backend,
    )
    _, mask = env.reset()
    gen = torch.Generator(device=device).manual_seed(0)

    def actions() -> torch.Tensor:
        if sampler == "env":
            return env.sample_actions(gen)
        return sample_legal(mask, gen, threads=threads)

    for _ in range(5):  # warm-up
        _, mask, _, _, _ = env.step(actions())
    steps = 0
    if device.startswith("cuda"):
        torch.cuda.synchronize()
    start = time.perf_counter()
    while time.perf_counter() - start < seconds:
        _, mask, _, _, _ = env.step(actions())
        steps += 1
    if device.startswith("cuda"):
        torch.cuda.synchronize()
    return steps * batch / (time.perf_counter() - start)


def pyspiel_rate(seconds: float, observe: bool) -> float:
    """Decisions per second of OpenSpiel liars_dice (2 players, 5 dice) from Python."""
    import pyspiel

    game = pyspiel.load_game("liars_dice", {"numdice": 5, "players": 2})
    rng = random.Random(0)
    decisions = 0
    start = time.perf_counter()
    while time.perf_counter() - start < seconds:
        state = game.new_initial_state()
        while not state.is_terminal():
            if state.is_chance_node():
                outcomes = state.chance_outcomes()
                state.apply_action(outcomes[rng.randrange(len(outcomes))][0])
                continue
            if observe:
                state.observation_tensor()
            legal = state.legal_actions()
            state.apply_action(legal[rng.randrange(len(legal))])
            decisions += 1
    return decisions / (time.perf_counter() - start)


def main() -> None:
    """Runs the benchmark and prints medians and ratios to pyspiel (or idle vs busy)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=2.0)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--batches", type=int, nargs="+", default=[256, 4096, 16384])
    parser.add_argument("--players", type=int, nargs="+", default=[3, 6])
    parser.add_argument("--threads", type=int, default=DEFAULT_THREADS, help="0: torch's")
    parser.add_argument(
        "--sampler",
        choices=["env", "mask"],
        default="env",
        help="env.sample_actions or sample_legal",
    )
    parser.add_argument(
        "--backends",
        nargs="+",
        choices=BACKENDS,
        default=["auto"],
        help="BatchedEnv backends to time (auto: numba on the CPU where installed)",
    )
    parser.add_argument("--busy", action="store_true", help="also measure with a core busy")
    args = parser.parse_args()
    threads = args.threads or None
    # what each asked-for backend runs here, each once ("auto" is numba or torch)
    device = torch.device(args.device)
    backends = list(dict.fromkeys(resolve_backend(b, device) for b in args.backends))
    loads = [False, True] if args.busy else [False]
    runs: dict[bool, dict[str, list[float]]] = {load: {} for load in loads}
    for _ in range(args.repeats):
        for load in loads:
            with busy_core(load):
                for backend, players, batch in itertools.product(
                    backends, args.players, args.batches
                ):
                    key = f"batched perudo {players}p, batch {batch} ({args.device}, {backend})"
                    runs[load].setdefault(key, []).append(
                        batched_rate(
                            players,
                            batch,
                            args.seconds,
                            args.device,
                            threads,
                            args.sampler,
                            backend,
                        )
                    )
                try:
                    runs[load].setdefault("pyspiel liars_dice 2p (bare)", []).append(
                        pyspiel_rate(args.seconds, observe=False)
                    )
                    runs[load].setdefault("pyspiel liars_dice 2p (+observation)", []).append(
                        pyspiel_rate(args.seconds, observe=True)
                    )
                except ImportError as exc:  # pragma: no cover - optional peer
                    print(f"(skipping pyspiel: {exc})")
    print(f"threads: {threads or 'torch default'}, sampler: {args.sampler}")
    idle = print_ratio_table(runs[False], "pyspiel liars_dice 2p (bare)", "configuration")
    if args.busy:
        busy = {name: statistics.median(v) for name, v in runs[True].items()}
        print()
        print_idle_busy_table(idle, busy, "configuration")


if __name__ == "__main__":
    main()
