"""The shipped models: each loads for its own rules, plays, stays small, has a model card."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from liars_env import LiarsDiceGame, ObservationLayout, RuleSet
from liars_env.agents import make_agent, view_of

SHIPPED = sorted(p for p in (Path(__file__).parents[1] / "checkpoints").iterdir() if p.is_dir())


def test_something_is_shipped():
    assert {p.name for p in SHIPPED} >= {"perudo_2p", "perudo_3p"}


@pytest.mark.parametrize("folder", SHIPPED, ids=lambda p: p.name)
def test_a_shipped_model_loads_plays_and_has_its_card(folder):
    size = sum(f.stat().st_size for f in folder.rglob("*") if f.is_file())
    # small enough to ship in the repository: a 6-player model's first layer alone is
    # ~1,700 inputs × 256 floats (1.7 MB)
    assert size < 3 * 1024 * 1024, f"{folder.name} is {size} bytes"
    card = (folder / "card.md").read_text()
    for section in ("## How to use", "## Training", "## Evaluation", "## Limitations"):
        assert f"\n{section}\n" in card, section
    assert "liars-exploit" in card
    assert (folder / "eval.json").is_file()
    rules = RuleSet.from_dict(json.loads((folder / "meta.json").read_text())["rules"])
    assert_plays_legal_moves(folder, rules)


def assert_plays_legal_moves(
    folder: Path, rules: RuleSet, moves: int = 30, kind: str = "checkpoint"
) -> None:
    """The ``kind`` agent (a checkpoint, a blueprint) of ``folder``, loaded for ``rules``,
    plays ``moves`` legal moves for every seat."""
    agent = make_agent(f"{kind}:{folder}", rules, seed=0)
    game, layout = LiarsDiceGame(rules), ObservationLayout(rules)
    rng = np.random.default_rng(0)
    state = game.new_game(rng)
    for _ in range(moves):
        if state.is_over:
            break
        action = agent.act(view_of(game, layout, state))
        assert game.is_legal(state, action)
        game.apply(state, action, rng)


def test_a_shipped_model_serves_every_preset_with_its_rules():
    """Presets are compared by their rules, not their names: the model trained for
    ``sanford_flexible`` plays ``ones_not_wild`` (the same rule set), and no other."""
    ones_not_wild = RuleSet.preset("ones_not_wild", num_players=3)
    assert ones_not_wild == RuleSet.preset("sanford_flexible", num_players=3)
    folder = Path(__file__).parents[1] / "checkpoints" / "sanford_flexible_3p"
    assert_plays_legal_moves(folder, ones_not_wild)
    with pytest.raises(ValueError, match="other rules"):  # sanford: another raise rule
        make_agent(f"checkpoint:{folder}", RuleSet.preset("sanford", num_players=3), seed=0)


SHIPPED_TABLES = sorted(
    path.parent.name
    for path in (Path(__file__).parents[1] / "blueprints").glob("*/eval.json")
    if json.loads(path.read_text()).get("shipped")
)
"""The blueprints whose ``eval.json`` says their table ships."""


def test_the_tracked_tables_are_the_ones_that_ship():
    """``.gitignore`` lets in exactly the tables whose cards say they ship: the others
    are built by their pipelines."""
    root = Path(__file__).parents[1]
    ignore = (root / ".gitignore").read_text().splitlines()
    tracked = sorted(line.split("/")[1] for line in ignore if line.startswith("!blueprints/"))
    assert tracked == SHIPPED_TABLES
    assert SHIPPED_TABLES == ["jokers_2p", "perudo_2p", "perudo_calza_2p", "perudo_palifico_2p"]


@pytest.mark.parametrize("name", SHIPPED_TABLES)
def test_the_shipped_blueprint_table_is_its_pipelines_and_plays(name):
    """A blueprint that ships its table: under the 5 MiB a tracked file may take, solved
    with its pipeline's settings, written with its pipeline's share of light cells
    coarsened, and it plays for its rules."""
    import yaml

    from liars_train.pipeline import blueprint_settings

    folder = Path(__file__).parents[1] / "blueprints" / name
    table = folder / "blueprint.npz"
    assert table.stat().st_size < 5 * 1024 * 1024
    with np.load(table, allow_pickle=False) as data:
        meta = json.loads(str(data["meta"]))
    spec = yaml.safe_load((Path(__file__).parents[1] / meta_pipeline(folder)).read_text())
    (stage,) = spec["stages"].values()
    recipe = stage["blueprint"]
    rules = RuleSet.preset(recipe["rules"], num_players=recipe["players"])
    assert RuleSet.from_dict(meta["rules"]) == rules
    settings = blueprint_settings(recipe)  # with the defaults where the pipeline is silent
    for setting in ("memory", "faces", "max_memory", "max_bytes", "iterations"):
        assert meta[setting] == settings[setting], setting
    assert meta["format"] == "xz" and meta["light"]["mass"] > 0
    assert meta["light"]["mass"] == settings["light_mass"]
    card = (folder / "card.md").read_text()
    assert "ships with the project" in card
    assert_plays_legal_moves(folder, rules, kind="blueprint")


def meta_pipeline(folder: Path) -> str:
    """The pipeline file a blueprint's ``eval.json`` names."""
    return json.loads((folder / "eval.json").read_text())["pipeline"]
