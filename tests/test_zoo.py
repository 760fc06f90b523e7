"""The model zoo: each ``eval.json`` agrees with its checkpoint, and the pages generated
from them (``docs/models.md``, the README's table, the cards) agree with the files."""

from __future__ import annotations

import json
import math
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import load_script
from safetensors import safe_open

from liars_env import RuleSet

ROOT = Path(__file__).resolve().parents[1]
SHIPPED = sorted(p for p in (ROOT / "checkpoints").iterdir() if p.is_dir())


def load_zoo():
    """``scripts/zoo.py`` as a module (scripts/ is not a package)."""
    return load_script("scripts/zoo.py")


zoo = load_zoo()


def copy_zoo(dest: Path) -> Path:
    """The files ``scripts/zoo.py`` reads and writes, copied under ``dest``."""
    for folder in SHIPPED:
        (dest / "checkpoints" / folder.name).mkdir(parents=True)
        for name in ("eval.json", "card.md"):
            shutil.copy(folder / name, dest / "checkpoints" / folder.name / name)
    for folder in sorted((ROOT / "blueprints").glob("*/")):
        (dest / "blueprints" / folder.name).mkdir(parents=True)
        for name in ("eval.json", "card.md"):
            shutil.copy(folder / name, dest / "blueprints" / folder.name / name)
    (dest / "docs").mkdir()
    shutil.copy(ROOT / "docs" / "models.md", dest / "docs" / "models.md")
    shutil.copy(ROOT / "README.md", dest / "README.md")
    return dest


def test_every_shipped_model_has_an_eval_json():
    assert [p.name for p in SHIPPED] == sorted(ev["name"] for ev in zoo.load(ROOT))


def test_the_pages_agree_with_eval_json():
    """Fails when a card, docs/models.md or the README's table was edited by hand, or an
    eval.json changed without ``python scripts/zoo.py``."""
    assert zoo.stale(ROOT) == []
    readme = (ROOT / "README.md").read_text()
    assert readme.count(zoo.BEGIN) == readme.count(zoo.END) == 1


def test_check_reports_an_edited_number(tmp_path):
    root = copy_zoo(tmp_path)
    check = [sys.executable, str(ROOT / "scripts" / "zoo.py"), "--check", "--root", str(root)]
    assert subprocess.run(check, capture_output=True).returncode == 0
    path = root / "checkpoints" / "perudo_3p" / "eval.json"
    data = json.loads(path.read_text())
    (belief,) = [r for r in data["bots"]["results"] if r["opponent"] == "belief"]
    belief["win_rate"] += 0.001
    path.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n")
    result = subprocess.run(check, capture_output=True, text=True)
    assert result.returncode == 1
    for stale in ("docs/models.md", "README.md", "checkpoints/perudo_3p/card.md"):
        assert f"{stale} differs" in result.stderr
    assert "perudo_2p" not in result.stderr
    assert zoo.main(["--root", str(root)]) == 0  # regenerated, the pages agree again
    assert zoo.main(["--check", "--root", str(root)]) == 0
    assert "0.701" in (root / "checkpoints" / "perudo_3p" / "card.md").read_text()


def test_a_blueprints_figures_come_from_its_eval_json(tmp_path):
    root = copy_zoo(tmp_path)
    path = root / "blueprints" / "perudo_2p" / "eval.json"
    data = json.loads(path.read_text())
    data["reference"]["win_rate"] = 0.654321
    path.write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n")
    assert zoo.main(["--check", "--root", str(root)]) == 1
    assert zoo.main(["--root", str(root)]) == 0
    assert "0.654" in (root / "blueprints" / "perudo_2p" / "card.md").read_text()
    assert "0.654" in (root / "docs" / "models.md").read_text()


def test_a_blueprint_card_says_how_its_light_cells_are_kept(tmp_path):
    """A pipeline's own ``light_mass`` (in ``eval.json``) is on the card; the default
    (``Blueprint.save``'s) is not repeated."""
    assert zoo.light_note({"name": "x"}) == ""
    assert zoo.light_note({"light_mass": 0.05}).startswith("; the lightest 5% of each round")
    root = copy_zoo(tmp_path)
    path = root / "blueprints" / "jokers_2p" / "eval.json"
    data = json.loads(path.read_text())
    data["light_mass"] = 0.1
    path.write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n")
    assert zoo.main(["--root", str(root)]) == 0
    assert "the lightest 10% of each round" in (path.parent / "card.md").read_text()
    assert "perturbed game" not in (path.parent / "card.md").read_text()
    data["tremble"] = 0.02  # a blueprint solved with trembles says so
    path.write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n")
    assert zoo.main(["--root", str(root)]) == 0
    assert (
        "random action with probability 0.02 at each node" in (path.parent / "card.md").read_text()
    )


def test_a_hand_edited_card_is_reported(tmp_path):
    root = copy_zoo(tmp_path)
    card = root / "checkpoints" / "sanford_3p" / "card.md"
    card.write_text(card.read_text().replace("0.531", "0.631"))
    assert zoo.stale(root) == [card]


def test_the_readme_block_goes_after_the_environment_section_when_missing():
    readme = "# x\n\n## The environment\n\ntext\n\n## Bots and evaluation\n\nmore\n"
    out = zoo.with_block(readme, f"{zoo.BEGIN}\ntable\n{zoo.END}")
    assert out == (
        f"# x\n\n## The environment\n\ntext\n\n{zoo.BEGIN}\ntable\n{zoo.END}\n\n"
        "## Bots and evaluation\n\nmore\n"
    )
    assert zoo.with_block(out, f"{zoo.BEGIN}\nnew\n{zoo.END}").count("table") == 0


def test_every_card_fits_the_template():
    for folder in SHIPPED:
        card = (folder / "card.md").read_text()
        assert len(card.splitlines()) <= 60, folder.name
        headings = [line for line in card.splitlines() if line.startswith("#")]
        assert headings == [
            f"# {folder.name}",
            "## How to use",
            "## Training",
            "## Evaluation",
            "## Limitations",
        ]


def parameters(folder: Path) -> int:
    with safe_open(str(folder / "model.safetensors"), "pt") as f:
        return sum(math.prod(f.get_slice(k).get_shape()) for k in f.keys())  # noqa: SIM118 (not iterable)


def config_at(commit: str, path: str) -> bool | None:
    """Whether ``path`` exists at ``commit`` (``None`` where git or the commit is absent,
    e.g. in a shallow clone)."""
    try:
        known = subprocess.run(
            ["git", "-C", str(ROOT), "cat-file", "-e", f"{commit}^{{commit}}"],
            capture_output=True,
        )
    except FileNotFoundError:
        return None
    if known.returncode != 0:
        return None
    found = subprocess.run(
        ["git", "-C", str(ROOT), "cat-file", "-e", f"{commit}:{path}"], capture_output=True
    )
    return found.returncode == 0


@pytest.mark.parametrize("folder", SHIPPED, ids=lambda p: p.name)
def test_eval_json_agrees_with_the_checkpoint(folder):
    ev = json.loads((folder / "eval.json").read_text())
    meta = json.loads((folder / "meta.json").read_text())
    assert ev["name"] == folder.name
    for name in ("model.safetensors", "meta.json", "card.md"):
        assert (folder / name).is_file(), name

    # the same rules: the preset (and any other it plays) at that table is the meta's
    rules = RuleSet.from_dict(meta["rules"])
    r = ev["rules"]
    for preset in (r["preset"], *r["also_plays"]):
        assert RuleSet.preset(preset, num_players=r["players"]) == rules, preset
    assert (r["players"], r["dice"], r["faces"]) == (
        rules.num_players,
        rules.dice_per_player,
        rules.faces,
    )

    # the network: meta's design, the parameters counted from the weights
    net = ev["network"]
    for key in ("hidden_layers", "hidden_size", "bid_features", "belief_features"):
        assert net[key] == meta["network"][key], key
    assert net["parameters"] == parameters(folder)

    # training: files that exist (the pipeline's agreement with meta: test_pipeline.py)
    t = ev["training"]
    assert t["pipeline"] == f"configs/models/{folder.name}.yaml"
    assert (ROOT / t["pipeline"]).is_file()
    if t["recipe_config"]:
        assert (ROOT / t["recipe_config"]).is_file()
    for stage in t["stages"]:
        if stage["config"] is not None:
            assert config_at(t["configs_commit"], stage["config"]) in (True, None), stage
        assert stage["learner_decisions"] is None or stage["learner_decisions"] > 0
        assert stage["stage"].startswith("`"), stage


@pytest.mark.parametrize("folder", SHIPPED, ids=lambda p: p.name)
def test_eval_json_figures_are_consistent(folder):
    ev = json.loads((folder / "eval.json").read_text())
    parity = 1 / ev["rules"]["players"]
    rows = {row["opponent"]: row for row in ev["bots"]["results"]}
    assert list(rows) == zoo.BOTS
    for bot in zoo.ZOO_BOTS:  # the zoo table's one protocol
        assert rows[bot]["games"] == zoo.ZOO_GAMES, bot
    assert ev["bots"]["seed"] == zoo.ZOO_SEED
    for row in rows.values():
        if row["win_rate"] is None:
            assert row["ci95"] is None and row["games"] is None
            continue
        lo, hi = row["ci95"]
        assert lo <= row["win_rate"] <= hi and row["games"] in (1000, 3000), row

    runs = ev["exploit"]["runs"]
    for run in runs:
        lo, hi = run["ci95"]
        assert lo <= run["win_rate"] <= hi
        assert abs(run["gain"] - (run["win_rate"] - parity)) <= 0.0011, run
    head = ev["exploit"]["headline"]
    assert (head["init"], head["steps"], tuple(head["seeds"])) in zoo.EXPLOIT_PROTOCOLS
    chosen = [
        r["gain"]
        for r in runs
        if r["init"] == head["init"] and r["steps"] == head["steps"] and r["seed"] in head["seeds"]
    ]
    assert len(chosen) == len(head["seeds"])
    assert round(sum(chosen) / len(chosen), 3) == pytest.approx(head["gain"])
