"""Packaging: project-named top-level modules only, working entry points, no import cycles."""

from __future__ import annotations

import ast
import importlib
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


@pytest.mark.parametrize(
    ("package", "folder"), [("liars_train", "training"), ("liars_env", "liars_env")]
)
def test_no_import_cycles(package, folder):
    modules = {}
    for path in (ROOT / folder).rglob("*.py"):
        rel = path.relative_to(ROOT / folder).with_suffix("")
        parts = [p for p in rel.parts if p != "__init__"]
        modules[".".join((package, *parts))] = path
    # Package __init__ files re-export their modules; only module-to-module edges count.
    plain = {name for name, path in modules.items() if path.name != "__init__.py"}
    graph = {name: (_imports_of(modules[name], package) & plain) - {name} for name in plain}

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
