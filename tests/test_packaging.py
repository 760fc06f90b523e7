"""Packaging: project-named top-level modules only, working entry points, no import cycles."""

from __future__ import annotations

import ast
import importlib
import sys
from pathlib import Path

import pytest

tomllib = pytest.importorskip("tomllib")  # Python 3.11+

ROOT = Path(__file__).resolve().parents[1]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())


def test_only_project_named_top_level_packages():
    packages = PYPROJECT["tool"]["setuptools"]["packages"]
    tops = {name.split(".")[0] for name in packages}
    assert tops == {"liars_env", "liars_train"}, tops
    # Every sub-package on disk is listed, so nothing is silently left out of the wheel.
    package_dir = PYPROJECT["tool"]["setuptools"]["package-dir"]
    for top in tops:
        folder = ROOT / package_dir.get(top, top)
        for init in folder.rglob("__init__.py"):
            dotted = ".".join((top, *init.parent.relative_to(folder).parts))
            assert dotted in packages, f"{dotted} ({init.parent}) is not in the packaged list"


def test_training_folder_installs_as_liars_train():
    import liars_train

    assert Path(liars_train.__file__).parent == ROOT / "training"


@pytest.mark.parametrize("script", sorted(PYPROJECT["project"]["scripts"]))
def test_console_scripts_resolve(script):
    target = PYPROJECT["project"]["scripts"][script]
    module_name, _, attr = target.partition(":")
    assert module_name.split(".")[0] in {"liars_env", "liars_train"}
    if module_name.endswith("rllib_backend"):
        pytest.importorskip("ray")
    module = importlib.import_module(module_name)
    assert callable(getattr(module, attr))


def _imports_of(path: Path, package: str) -> set[str]:
    tree = ast.parse(path.read_text())
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            if node.module == package:
                found.update(f"{package}.{alias.name}" for alias in node.names)
            elif node.module.startswith(package + "."):
                found.add(node.module)
        elif isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.startswith(package + "."))
    return found


def _modules(package: str, folder: str) -> dict[str, Path]:
    modules = {}
    for path in (ROOT / folder).rglob("*.py"):
        rel = path.relative_to(ROOT / folder).with_suffix("")
        parts = [p for p in rel.parts if p != "__init__"]
        modules[".".join((package, *parts))] = path
    return modules


def _graph(package: str, folder: str) -> dict[str, set[str]]:
    """Module → the package's modules it imports (package ``__init__`` files left out:
    they re-export their own modules; only module-to-module edges count)."""
    modules = _modules(package, folder)
    plain = {name for name, path in modules.items() if path.name != "__init__.py"}
    return {name: (_imports_of(modules[name], package) & plain) - {name} for name in plain}


# The layers of liars_env (see its package docstring): the folder a module lives in, and
# the folders it may import from. The game (top-level modules) is numpy only.
ENV_LAYERS = {
    "game": {"game"},
    "batched": {"game", "batched"},
    "solver": {"game", "solver"},
    "text": {"game", "text"},
    "agents": {"game", "batched", "solver", "text", "agents"},
    "envs": {"game", "text", "agents", "envs"},
    "play": {"game", "batched", "solver", "text", "agents", "envs", "play"},
}
GAME_MAY_IMPORT = {"numpy"}  # besides the standard library and liars_env's game modules

# liars_train: each module's rank; a module imports only lower ranks or its own folder.
TRAIN_RANKS = {"config": 0, "stats": 0, "checkpoints": 0, "reports": 0, "league": 1}
TRAIN_RANKS |= {"evaluation": 2, "ppo": 3, "distributed": 3}
TRAIN_RANKS |= {"train": 4, "rllib": 4, "tools": 4, "pipeline": 4, "course": 4, "runner": 4}


def env_layer(module: str) -> str:
    """``liars_env.agents.policy`` → ``agents``; ``liars_env.rules`` → ``game``."""
    parts = module.split(".")
    return parts[1] if len(parts) > 2 else "game"


def train_rank(module: str) -> int:
    return TRAIN_RANKS[module.split(".")[1]]


def layer_violations(graph, layer_of, may_import) -> list[str]:
    """Edges ``a -> b`` of ``graph`` where ``may_import(layer_of(a), layer_of(b))`` fails."""
    return sorted(
        f"{a} ({layer_of(a)}) -> {b} ({layer_of(b)})"
        for a, deps in graph.items()
        for b in deps
        if not may_import(layer_of(a), layer_of(b))
    )


def _env_may_import(src: str, dst: str) -> bool:
    return dst in ENV_LAYERS[src]


def _train_may_import(src: int, dst: int) -> bool:
    return dst <= src


def test_liars_env_imports_run_one_way():
    graph = _graph("liars_env", "liars_env")
    assert {env_layer(m) for m in graph} == set(ENV_LAYERS)
    assert layer_violations(graph, env_layer, _env_may_import) == []


def test_liars_train_imports_run_one_way():
    graph = _graph("liars_train", "training")
    assert layer_violations(graph, train_rank, _train_may_import) == []


def test_the_layer_check_catches_an_upward_import():
    graph = _graph("liars_env", "liars_env")
    graph["liars_env.batched.kernels"] = {"liars_env.agents.probabilistic"}
    graph["liars_env.rules"] = {"liars_env.envs.aec"}
    assert layer_violations(graph, env_layer, _env_may_import) == [
        "liars_env.batched.kernels (batched) -> liars_env.agents.probabilistic (agents)",
        "liars_env.rules (game) -> liars_env.envs.aec (envs)",
    ]
    train = _graph("liars_train", "training")
    train["liars_train.league"] = {"liars_train.ppo"}
    assert layer_violations(train, train_rank, _train_may_import) == [
        "liars_train.league (1) -> liars_train.ppo (3)"
    ]


def _third_party_imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(a.name.split(".")[0] for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module.split(".")[0])
    return {n for n in names if n not in sys.stdlib_module_names and n != "liars_env"}


def test_the_game_layer_needs_only_numpy():
    game = [p for p in (ROOT / "liars_env").glob("*.py")]
    assert len(game) >= 6
    for path in game:
        assert _third_party_imports(path) <= GAME_MAY_IMPORT, path.name


@pytest.mark.parametrize(
    "old",
    [
        "liars_env.aec",
        "liars_env.gym_env",
        "liars_env.policy",
        "liars_env.belief",
        "liars_env.array_rules",
        "liars_env.threads",
        "liars_env.typed_moves",
        "liars_env.web.server",
        "liars_train.evaluate",
        "liars_train.exploit",
        "liars_train.train_cli",
        "liars_train.checkpoints",
    ],
)
def test_old_import_paths_still_work_with_a_warning(old):
    import liars_env.moved
    import liars_train

    table = {**liars_env.moved.MOVED, **liars_train.MOVED}
    new = liars_env.moved.new_path(old, table)
    target = importlib.import_module(new)
    sys.modules.pop(old, None)
    parent = old.rpartition(".")[0]
    if parent not in sys.modules:  # a moved package warns for itself first
        with pytest.warns(DeprecationWarning, match=f"{parent} moved to"):
            importlib.import_module(parent)
    with pytest.warns(DeprecationWarning, match=f"{old} moved to {new}"):
        module = importlib.import_module(old)
    assert module is target and module.__name__ == new and module.__spec__.name == new


def test_public_paths_keep_their_names():
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        import liars_env.liars_dice_v0
        from liars_env import liars_dice_v1
        from liars_env.agents import make_agent
        from liars_env.agents.policy import load_policy
        from liars_env.batched import BatchedEnv
        from liars_env.solver import exploit, solve
    assert liars_dice_v1.env is liars_env.env and liars_env.liars_dice_v0.env is liars_env.env
    assert all(callable(f) for f in (make_agent, load_policy, BatchedEnv, exploit, solve))


@pytest.mark.parametrize(
    ("package", "folder"), [("liars_train", "training"), ("liars_env", "liars_env")]
)
def test_no_import_cycles(package, folder):
    graph = _graph(package, folder)

    state: dict[str, int] = {}

    def visit(node, trail):
        if state.get(node) == 1:
            pytest.fail("import cycle: " + " -> ".join([*trail[trail.index(node) :], node]))
        if state.get(node) == 2:
            return
        state[node] = 1
        for dep in sorted(graph.get(node, ())):
            visit(dep, [*trail, node])
        state[node] = 2

    for name in sorted(graph):
        visit(name, [])
