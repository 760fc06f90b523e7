"""Packaging: project-named top-level modules only, working entry points, no import cycles."""

from __future__ import annotations

import ast
import importlib
import subprocess
import sys
import textwrap
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


def _runtime_nodes(tree: ast.AST):
    """The nodes of ``tree`` that run: ``if TYPE_CHECKING:`` blocks left out."""
    todo = [tree]
    while todo:
        node = todo.pop()
        yield node
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and "TYPE_CHECKING" in ast.unparse(child.test):
                todo.extend(child.orelse)
            else:
                todo.append(child)


def _imports_of(path: Path, name: str, package: str, modules: set[str]) -> set[str]:
    """The modules of ``package`` that module ``name`` (at ``path``) imports when it runs.

    ``from pkg import x`` is an edge to ``pkg.x`` where that is a module, else to ``pkg``
    itself (its ``__init__``: ``from liars_env.batched import BatchedEnv`` runs
    ``liars_env/batched/__init__.py``); relative imports are resolved. Function-level
    imports count (they run when the function does); ``if TYPE_CHECKING:`` ones do not.
    """
    is_package = path.name == "__init__.py"
    found = set()
    for node in _runtime_nodes(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = name.split(".")
                anchor = anchor[: len(anchor) - node.level + (1 if is_package else 0)]
                base = ".".join([*anchor, *([base] if base else [])])
            if base != package and not base.startswith(package + "."):
                continue
            for alias in node.names:
                sub = f"{base}.{alias.name}"
                found.add(sub if sub in modules else base)
        elif isinstance(node, ast.Import):
            found.update(
                a.name for a in node.names if a.name == package or a.name.startswith(package + ".")
            )
    return found & modules


def _modules(package: str, folder: str) -> dict[str, Path]:
    """Module name → file, packages by their ``__init__.py`` (``liars_env.batched``)."""
    modules = {}
    for path in (ROOT / folder).rglob("*.py"):
        rel = path.relative_to(ROOT / folder).with_suffix("")
        parts = [p for p in rel.parts if p != "__init__"]
        modules[".".join((package, *parts))] = path
    return modules


def _graph(package: str, folder: str) -> dict[str, set[str]]:
    """Module → the package's modules it imports, package ``__init__`` files included."""
    modules = _modules(package, folder)
    names = set(modules)
    return {
        name: _imports_of(path, name, package, names) - {name} for name, path in modules.items()
    }


def import_loops(graph: dict[str, set[str]]) -> list[tuple[str, ...]]:
    """The import loops of ``graph``: each strongly connected set of modules, sorted.

    A set of two or more modules that reach each other (or one that imports itself) is
    a loop; each is given as a sorted tuple of its modules, the loops in sorted order.

    Example:
        >>> import_loops({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}})
        [('a', 'b', 'c')]
        >>> import_loops({"a": {"b"}, "b": set()})
        []
    """
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    loops = []

    def connect(node: str) -> None:  # Tarjan's algorithm
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for dep in sorted(graph.get(node, ())):
            if dep not in index:
                connect(dep)
                low[node] = min(low[node], low[dep])
            elif dep in on_stack:
                low[node] = min(low[node], index[dep])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == node:
                    break
            if len(component) > 1 or node in graph.get(node, ()):
                loops.append(tuple(sorted(component)))

    for name in sorted(graph):
        if name not in index:
            connect(name)
    return sorted(loops)


def loop_path(graph: dict[str, set[str]], loop: tuple[str, ...]) -> str:
    """One cycle through the first module of ``loop``, as ``a -> b -> ... -> a``."""
    start, members = loop[0], set(loop)
    paths = {start: [start]}
    todo = [start]
    while todo:  # breadth first, inside the loop
        node = todo.pop(0)
        for dep in sorted(graph[node] & members):
            if dep == start:
                return " -> ".join([*paths[node], start])
            if dep not in paths:
                paths[dep] = [*paths[node], dep]
                todo.append(dep)
    raise ValueError(f"{loop} is not a loop of the graph")


# The layers of liars_env (see its package docstring and docs/layout.md, whose "may
# import" column test_the_layout_page_agrees_with_the_layers checks against this table):
# the folder a module lives in, and the folders it may import from. The game (top-level
# modules) is numpy only; "root" is liars_env/__init__.py, the front door, which names
# the environments but loads them only when asked (a module __getattr__).
ENV_LAYERS = {
    "root": {"game", "envs"},
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
TRAIN_RANKS = {"": 0, "config": 0, "stats": 0, "reports": 0, "league": 1}
TRAIN_RANKS |= {"evaluation": 2, "ppo": 3, "distributed": 3}
TRAIN_RANKS |= {"train": 4, "rllib": 4, "tools": 4, "pipeline": 4, "course": 4, "runner": 4}


def env_layer(module: str) -> str:
    """``liars_env.agents.policy`` and ``liars_env.agents`` → ``agents``;
    ``liars_env.rules`` → ``game``; ``liars_env`` → ``root``."""
    parts = module.split(".")
    if len(parts) == 1:
        return "root"
    if len(parts) > 2 or (ROOT / "liars_env" / parts[1]).is_dir():
        return parts[1]
    return "game"


def train_rank(module: str) -> int:
    """The rank of the first folder or module under ``liars_train`` (its root: 0)."""
    return TRAIN_RANKS[(module.split(".") + [""])[1]]


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
        "liars_env.play.moves",
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
    if parent not in sys.modules and liars_env.moved.new_path(parent, table):
        with pytest.warns(DeprecationWarning, match=f"{parent} moved to"):
            importlib.import_module(parent)  # a moved package warns for itself first
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


# Import loops tolerated while they are being removed: each entry is one loop as
# import_loops gives it. None is left. The test fails on any other loop, and on an entry
# that is no longer a loop (so the list cannot go stale).
KNOWN_LOOPS: list[tuple[str, ...]] = []


@pytest.mark.parametrize(
    ("package", "folder"), [("liars_train", "training"), ("liars_env", "liars_env")]
)
def test_no_import_loops(package, folder):
    graph = _graph(package, folder)
    loops = import_loops(graph)
    unknown = [loop_path(graph, loop) for loop in loops if loop not in KNOWN_LOOPS]
    assert unknown == [], "import loops:\n" + "\n".join(unknown)
    known = {loop for loop in KNOWN_LOOPS if loop[0].split(".")[0] == package}
    stale = known - set(loops)
    assert not stale, f"not a loop any more, delete it from KNOWN_LOOPS: {stale}"


def test_the_graph_sees_imports_of_package_inits():
    graph = _graph("liars_env", "liars_env")
    # ``from liars_env.batched import BatchedEnv`` runs batched/__init__.py
    assert "liars_env.batched" in graph["liars_env.agents.batched"]
    assert "liars_env.batched.engine" in graph["liars_env.batched"]
    train = _graph("liars_train", "training")
    # ``from liars_train.ppo import Args`` runs ppo/__init__.py
    assert "liars_train.ppo" in train["liars_train.train"]
    # ... and no module of the loop sees Ray's roles (the runner chooses them)
    assert "liars_train.distributed" not in train["liars_train.ppo.trainer"]


def test_the_loop_check_finds_a_loop_through_a_package_init(tmp_path, monkeypatch):
    pkg = tmp_path / "loopy"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "sub" / "__init__.py").write_text("from loopy.sub.a import A\n")
    (pkg / "sub" / "a.py").write_text("def f():\n    from loopy.b import B\n")
    (pkg / "b.py").write_text("from loopy.sub import A\n")
    (pkg / "c.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from loopy import b\n"
    )
    (pkg / "d.py").write_text("from . import c\nfrom .sub import a\n")
    monkeypatch.setattr(sys.modules[__name__], "ROOT", tmp_path)
    graph = _graph("loopy", "loopy")
    assert graph["loopy.b"] == {"loopy.sub"}
    assert graph["loopy.c"] == set()  # TYPE_CHECKING imports do not run
    assert graph["loopy.d"] == {"loopy.c", "loopy.sub.a"}  # relative imports resolved
    assert import_loops(graph) == [("loopy.b", "loopy.sub", "loopy.sub.a")]
    assert loop_path(graph, ("loopy.b", "loopy.sub", "loopy.sub.a")) == (
        "loopy.b -> loopy.sub -> loopy.sub.a -> loopy.b"
    )
    graph["loopy.c"] = {"loopy.c"}  # a module importing itself is a loop too
    assert ("loopy.c",) in import_loops(graph)


# What a user of the bare engine has not installed: the import blocker of the subprocess
# below raises ImportError for these, as a venv without them would.
HEAVY = ("gymnasium", "pettingzoo", "torch", "numba", "scipy")

_BLOCKER = """
import importlib.abc, sys

class Blocker(importlib.abc.MetaPathFinder):
    def find_spec(self, fullname, path=None, target=None):
        if fullname.split(".")[0] in {blocked!r}:
            raise ImportError(f"No module named {{fullname!r}} (blocked by the test)")
        return None

sys.meta_path.insert(0, Blocker())
"""


def _run_without_heavy(code: str) -> subprocess.CompletedProcess:
    script = _BLOCKER.format(blocked=set(HEAVY)) + textwrap.dedent(code)
    return subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, cwd=ROOT, timeout=120
    )


def test_the_game_layer_imports_and_plays_with_numpy_alone():
    out = _run_without_heavy(
        """
        import sys
        import numpy as np
        import liars_env
        import liars_env.actions, liars_env.engine, liars_env.errors, liars_env.observation
        import liars_env.probability, liars_env.rules
        from liars_env import LiarsDiceGame, ObservationLayout, RuleSet

        rules = RuleSet.preset("perudo")
        game = LiarsDiceGame(rules)
        rng = np.random.default_rng(0)
        state = game.new_game(rng)
        while not state.is_over:
            game.apply(state, game.legal_actions(state)[0], rng)
        assert ObservationLayout(rules).size > 0
        print(sorted(m.split(".")[0] for m in sys.modules if m.split(".")[0] in {blocked!r}))
        print(sorted(m for m in sys.modules if m.startswith("liars_env.envs")))
        """.replace("{blocked!r}", repr(set(HEAVY)))
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.split("\n")[:2] == ["[]", "[]"], out.stdout


def test_asking_for_an_environment_without_its_dependencies_names_them():
    out = _run_without_heavy(
        """
        import liars_env
        try:
            liars_env.env("perudo")
        except ImportError as exc:
            print(exc)
        """
    )
    assert out.returncode == 0, out.stderr
    assert "blocked by the test" in out.stdout and any(n in out.stdout for n in HEAVY)


def test_import_liars_env_loads_no_environment():
    code = (
        "import sys, liars_env; "
        "print(sorted(m for m in sys.modules if m.startswith('liars_env.envs')), "
        "'gymnasium' in sys.modules, 'torch' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[] False False"


def test_environments_load_when_asked_for():
    code = """
import sys
import liars_env
assert "liars_env.envs.aec" not in sys.modules
e = liars_env.env("perudo", num_players=3)
assert "liars_env.envs.aec" in sys.modules and liars_env.raw_env.__module__ == "liars_env.envs.aec"
from liars_env import liars_dice_v1
import gymnasium
g = gymnasium.make("LiarsDice-v0", num_players=2)  # registered once gymnasium loaded
print(type(g.unwrapped).__name__, liars_dice_v1.env is liars_env.env)
try:
    liars_env.no_such_env
except AttributeError as exc:
    print(exc)
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split("\n")[:2] == [
        "LiarsDiceEnv True",
        "module 'liars_env' has no attribute 'no_such_env'",
    ]


@pytest.mark.parametrize(
    ("package", "folder"), [("liars_env", "liars_env"), ("liars_train", "training")]
)
def test_every_module_says_its_job_in_its_first_docstring_line(package, folder):
    unsaid = []
    for name, path in sorted(_modules(package, folder).items()):
        doc = ast.get_docstring(ast.parse(path.read_text())) or ""
        first = doc.split("\n", 1)[0]
        if not first.endswith(".") or len(first) < 20:
            unsaid.append(f"{name}: {first!r}")
    assert unsaid == [], "modules without a one-line job:\n" + "\n".join(unsaid)
