"""Shared helpers for the tests: scripted games, preset/player grids, scripts as modules."""

from __future__ import annotations

import importlib.util
import os
import socket
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import numpy as np

from liars_env import PRESETS, LiarsDiceGame, RuleSet
from liars_env.rules import PRESET_PLAYERS


def preset_grid(players=range(2, 7)):
    """Every (preset name, num_players) pair the presets allow among ``players``."""
    grid = []
    for name in PRESETS:
        lo, hi = PRESET_PLAYERS.get(name, (2, 8))
        grid += [(name, n) for n in players if lo <= n <= hi]
    return grid


def scripted(rules: RuleSet, dice, *, first_player=0, dice_left=None, seed=0):
    """A game started with fixed first-round dice; returns ``(game, state, rng)``."""
    game = LiarsDiceGame(rules)
    rng = np.random.default_rng(seed)
    state = game.new_game(rng, dice=dice, dice_left=dice_left, first_player=first_player)
    return game, state, rng


def bid(game: LiarsDiceGame, quantity: int, face: int) -> int:
    """Action id of a bid."""
    return game.codec.encode_bid(quantity, face)


ROOT = Path(__file__).resolve().parents[1]


def load_script(path: str, name: str | None = None) -> ModuleType:
    """A script of the repository (``benchmarks/search.py``, ``scripts/zoo.py``) as a module.

    ``benchmarks/`` and ``scripts/`` are not packages, so a test loads the file itself, under
    ``name`` (default: the file's stem), without putting it in ``sys.modules``.

    Raises:
        FileNotFoundError: for a ``path`` (relative to the repository) that is not a file.
    """
    file = ROOT / path
    if not file.is_file():
        raise FileNotFoundError(f"no script {path!r} in {ROOT}")
    spec = importlib.util.spec_from_file_location(name or file.stem, file)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


TINY = [  # a tiny PPO run (the tiny_run fixture of conftest.py)
    "total_steps=2048",
    "num_envs=64",
    "num_steps=8",
    "num_minibatches=2",
    "update_epochs=1",
    "hidden_size=32",
    "eval_every=2",
    "eval_games=30",
    "checkpoint_every=2",
    "final_eval_games=12",
    "snapshot_every=1",
    "progress=false",
    "torch_threads=1",
]


def start_ray_head(env: dict[str, str], timeout: float = 300) -> int:
    """Starts a one-CPU Ray head on 127.0.0.1 with ``ray start`` (as a user's own Ray);
    returns its port. Its processes name the ``RAY_TMPDIR`` of ``env``
    (:func:`processes_naming` finds them; stop them by id, never with ``ray stop``)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    ray_cli = [sys.executable, "-c", "from ray.scripts.scripts import main; main()"]
    start = [*ray_cli, "start", "--head", "--node-ip-address=127.0.0.1", f"--port={port}"]
    start += ["--num-cpus=1", "--include-dashboard=false", "--disable-usage-stats"]
    env = {**env, "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0"}
    subprocess.run(start, env=env, check=True, capture_output=True, timeout=timeout)
    return port


def processes_naming(folder: str | Path) -> list[int]:
    """Ids of the live processes (not this one, no zombies) whose command line names
    ``folder``: the Ray processes of a Ray temp folder."""
    out = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit() or int(proc.name) == os.getpid():
            continue
        try:
            cmdline = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode()
            status = (proc / "status").read_text()
        except OSError:
            continue
        if str(folder) in cmdline and "State:\tZ" not in status:
            out.append(int(proc.name))
    return out
