"""docs/layout.md against the code: a row per folder, every module named, the layers agree.

The "may import" and "rank" columns must say what ``tests/test_packaging.py`` enforces on
the import graph (its ``ENV_LAYERS`` and ``TRAIN_RANKS``: the one table of the layers).
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest
from test_packaging import ENV_LAYERS, TRAIN_RANKS

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "layout.md"
ROW = re.compile(r"^\| (.+?) \| (.+) \| (.+?) \|$")


def table(title: str) -> list[tuple[str, str, str]]:
    """The rows of the first table after the heading ``title``."""
    text = PAGE.read_text().split(f"## {title}", 1)[1]
    rows = []
    for line in text.split("\n\n", 2)[1].splitlines()[2:]:
        match = ROW.match(line)
        if match is None:
            raise ValueError(f"docs/layout.md: not a table row under {title!r}: {line!r}")
        rows.append(match.groups())
    return rows


def named(text: str) -> set[str]:
    """The file and folder names in backticks (``engine.py``, ``web/``)."""
    return {
        n.rsplit("/", 2)[-1] if n.endswith(".py") else n
        for n in re.findall(r"`([\w/]+(?:\.py|/))`", text)
    }


def env_rows() -> dict[str, tuple[str, str]]:
    """Layer → (what lives there, may import) of the liars_env table."""
    rows = {}
    for folder, what, may in table("`liars_env` (the environment)"):
        folder = folder.strip("`")
        if folder == "liars_env/__init__.py":
            layer = "root"
        elif folder == "liars_env/":
            layer = "game"
        else:
            layer = folder.removeprefix("liars_env/").strip("/")
        assert layer not in rows, f"two rows for {folder}"
        rows[layer] = (what, may)
    return rows


def test_every_layer_of_liars_env_has_one_row():
    assert set(env_rows()) == set(ENV_LAYERS)
    folders = {p.name for p in (ROOT / "liars_env").iterdir() if (p / "__init__.py").exists()}
    assert folders <= set(env_rows())


@pytest.mark.parametrize("layer", sorted(ENV_LAYERS))
def test_the_may_import_column_is_the_packaging_tests_layers(layer):
    may = env_rows()[layer][1]
    said = set() if may == "numpy" else {w.removeprefix("the ") for w in may.split(", ")}
    assert said == ENV_LAYERS[layer] - {layer}, f"docs/layout.md row {layer}: {may!r}"


@pytest.mark.parametrize("layer", sorted(set(ENV_LAYERS) - {"root"}))
def test_each_row_names_exactly_the_modules_of_its_folder(layer):
    folder = ROOT / "liars_env" / ("" if layer == "game" else layer)
    modules = {p.name for p in folder.glob("*.py") if p.name != "__init__.py"}
    modules |= {p.name + "/" for p in folder.iterdir() if (p / "__init__.py").exists()}
    if layer == "game":
        modules -= {f"{name}/" for name in ENV_LAYERS}
    assert named(env_rows()[layer][0]) == modules


def train_rows() -> dict[str, tuple[str, int]]:
    """Top-level module or folder of liars_train → (its row's text, rank)."""
    rows = {}
    for names, what, rank in table("`liars_train` (training, in the `training/` folder)"):
        for name in re.findall(r"`([\w]+)(?:\.py|/)`", names):
            assert name not in rows, f"two rows for {name}"
            rows[name] = (what, int(rank))
    return rows


def test_every_module_of_liars_train_has_a_row_with_its_rank():
    top = {p.stem for p in (ROOT / "training").glob("*.py") if p.name != "__init__.py"}
    top |= {p.name for p in (ROOT / "training").iterdir() if (p / "__init__.py").exists()}
    rows = train_rows()
    assert set(rows) == top == set(TRAIN_RANKS) - {""}
    assert {name: rank for name, (_, rank) in rows.items()} == {n: TRAIN_RANKS[n] for n in top}


@pytest.mark.parametrize("folder", ["ppo", "distributed", "evaluation", "tools", "course"])
def test_each_training_folder_row_names_its_modules(folder):
    modules = {p.name for p in (ROOT / "training" / folder).glob("*.py") if p.name != "__init__.py"}
    assert modules <= named(train_rows()[folder][0])


def test_the_checks_fail_on_a_wrong_row(monkeypatch, tmp_path):
    page = tmp_path / "layout.md"
    page.write_text(PAGE.read_text().replace("| the game, text, agents |", "| the game, agents |"))
    monkeypatch.setattr(sys.modules[__name__], "PAGE", page)
    with pytest.raises(AssertionError, match="row envs"):
        test_the_may_import_column_is_the_packaging_tests_layers("envs")
