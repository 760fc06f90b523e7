"""Your own agents in make_agent and liars-eval: import paths and entry points."""

from __future__ import annotations

import json
import multiprocessing
import os
import subprocess
import sys
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np
import pytest

from liars_env import LiarsDiceGame, ObservationLayout, RuleSet
from liars_env.agents import Agent, make_agent, view_of
from liars_env.agents.registry import ENTRY_POINT_GROUP

BOTS = """
class Lowest:
    '''Always the lowest legal action; records how it was built.'''

    def __init__(self, rules, seed=None):
        self.rules, self.seed = rules, seed

    def reset(self, seed=None):
        self.seed = seed

    def act(self, view):
        return int(view.legal_actions[0])


class Named(Lowest):
    name = "named-bot"


def factory():
    bot = Lowest(None)
    bot.made_by = "factory"
    return bot


def seeded(*, seed, **kwargs):
    bot = Lowest(kwargs["rules"], seed)
    bot.kwargs = sorted(kwargs)
    return bot


class Holder:
    make = staticmethod(factory)


NOT_CALLABLE = 3


def not_an_agent():
    return object()


def needs_more(rules, colour):
    return Lowest(rules)
"""

BROKEN = "import a_module_that_does_not_exist\n"


@pytest.fixture
def bots_dir(tmp_path, monkeypatch):
    """A package ``tests_pkg`` (bots in ``tests_pkg.mod``) on ``sys.path``."""
    pkg = tmp_path / "tests_pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "mod.py").write_text(BOTS)
    (pkg / "broken.py").write_text(BROKEN)
    monkeypatch.syspath_prepend(str(tmp_path))
    yield tmp_path
    for name in [m for m in sys.modules if m == "tests_pkg" or m.startswith("tests_pkg.")]:
        del sys.modules[name]


RULES = RuleSet.preset("perudo")


def play_one_game(agent: Agent, rules: RuleSet = RULES) -> int:
    """Plays ``agent`` against itself; returns the number of decisions (all legal)."""
    game, layout = LiarsDiceGame(rules), ObservationLayout(rules)
    rng = np.random.default_rng(0)
    state = game.new_game(rng)
    moves = 0
    while not state.is_over:
        action = agent.act(view_of(game, layout, state))
        assert game.is_legal(state, action)
        game.apply(state, action, rng)
        moves += 1
    return moves


def test_class_path_gets_rules_and_seed(bots_dir):
    agent = make_agent("tests_pkg.mod:Lowest", RULES, seed=7)
    assert type(agent).__name__ == "Lowest"
    assert agent.rules == RULES and agent.seed == 7
    assert agent.name == "tests_pkg.mod:Lowest"  # no name of its own: the spec
    assert isinstance(agent, Agent)
    assert play_one_game(agent) > 0


def test_own_name_is_kept(bots_dir):
    assert make_agent("tests_pkg.mod:Named", RULES).name == "named-bot"


def test_factory_paths(bots_dir):
    assert make_agent("tests_pkg.mod:factory", RULES).made_by == "factory"
    assert make_agent("tests_pkg.mod:Holder.make", RULES).made_by == "factory"
    agent = make_agent("tests_pkg.mod:seeded", RULES, seed=3)  # **kwargs: gets both
    assert agent.seed == 3 and agent.kwargs == ["rules"] and agent.rules == RULES


def test_builtin_library_class_by_path():
    agent = make_agent("liars_env.agents.base:RandomAgent", RULES, seed=1)
    assert type(agent).__name__ == "RandomAgent"
    assert play_one_game(agent) > 0


@pytest.mark.parametrize(
    "spec, message",
    [
        ("no_such_module_xyz.bots:Bot", "no module named 'no_such_module_xyz'"),
        ("tests_pkg.nothere:Bot", "no module named 'tests_pkg.nothere'"),
        ("tests_pkg.broken:Bot", "importing module 'tests_pkg.broken' failed"),
        ("tests_pkg.mod:Missing", "tests_pkg.mod has no attribute 'Missing'"),
        ("tests_pkg.mod:Holder.nope", "tests_pkg.mod.Holder has no attribute 'nope'"),
        ("tests_pkg.mod:NOT_CALLABLE", "is 3, not callable"),
        ("tests_pkg.mod:not_an_agent", "which is not an agent: it lacks act\\(\\) and reset"),
        ("tests_pkg.mod:needs_more", "calling tests_pkg.mod:needs_more\\(rules=...\\) failed"),
        ("tests_pkg.mod:", "not a built-in spec nor an import path MODULE:ATTR"),
        ("bad module:Bot", "not a built-in spec nor an import path MODULE:ATTR"),
        ("random:Random", "unknown agent spec 'random:Random'"),  # built-in name: no import
        ("nosuchbot", "unknown agent spec 'nosuchbot'.*entry point"),
    ],
)
def test_bad_custom_specs(bots_dir, spec, message):
    with pytest.raises(ValueError, match=message) as info:
        make_agent(spec, RULES)
    assert repr(spec) in str(info.value)


def test_builtin_specs_with_colons_keep_their_meaning(bots_dir):
    assert make_agent("probabilistic:bluff_rate=0.1", RULES).params.bluff_rate == 0.1
    agent = make_agent("checkpoint:checkpoints/perudo_3p", RULES)
    assert type(agent).__name__ == "CheckpointAgent"


def test_module_in_the_current_directory_is_found(tmp_path, monkeypatch):
    (tmp_path / "cwd_bots_mod.py").write_text(BOTS)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", [p for p in sys.path if p not in ("", os.getcwd())])
    try:
        assert type(make_agent("cwd_bots_mod:Lowest", RULES)).__name__ == "Lowest"
        assert str(tmp_path) in sys.path
    finally:
        sys.modules.pop("cwd_bots_mod", None)


def _name_in_worker(spec: str) -> str:
    return type(make_agent(spec, RULES)).__name__


def test_spawned_worker_resolves_the_spec(tmp_path, monkeypatch):
    """A fresh interpreter (spawn, as on macOS/Windows) re-resolves the spec string."""
    (tmp_path / "spawn_bots_mod.py").write_text(BOTS)
    monkeypatch.chdir(tmp_path)  # only the cwd makes it importable: no PYTHONPATH
    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(1, mp_context=context) as pool:
        assert pool.submit(_name_in_worker, "spawn_bots_mod:Lowest").result() == "Lowest"


# ------------------------------------------------------------------ entry points
def write_distribution(root: Path, entries: dict[str, str]) -> None:
    """A fake installed distribution under ``root`` with ``liars_dice.agents`` entries."""
    info = root / "fake_liars_bots-1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: fake-liars-bots\nVersion: 1.0\n")
    lines = "\n".join(f"{name} = {value}" for name, value in entries.items())
    (info / "entry_points.txt").write_text(f"[{ENTRY_POINT_GROUP}]\n{lines}\n")


def test_entry_points(bots_dir):
    write_distribution(
        bots_dir,
        {
            "lowbot": "tests_pkg.mod:Lowest",
            "made": "tests_pkg.mod:factory",
            "random": "tests_pkg.mod:factory",  # shadows a built-in: ignored
            "brokenbot": "tests_pkg.broken:Bot",
            "junkbot": "tests_pkg.mod:not_an_agent",
        },
    )
    agent = make_agent("lowbot", RULES, seed=5)
    assert type(agent).__name__ == "Lowest" and agent.seed == 5 and agent.name == "lowbot"
    assert make_agent("made", RULES).made_by == "factory"
    assert type(make_agent("random", RULES)).__name__ == "RandomAgent"  # built-ins win
    with pytest.raises(ValueError, match="entry point brokenbot = tests_pkg.broken:Bot"):
        make_agent("brokenbot", RULES)
    with pytest.raises(ValueError, match="'junkbot'.*not an agent"):
        make_agent("junkbot", RULES)
    with pytest.raises(ValueError, match="installed: brokenbot, junkbot, lowbot, made"):
        make_agent("nosuchbot", RULES)


# ------------------------------------------------------------------ liars-eval
LIARS_EVAL = Path(sys.executable).parent / "liars-eval"
needs_script = pytest.mark.skipif(
    not LIARS_EVAL.exists(), reason="liars-eval is not installed (pip install -e .)"
)


def run_eval(args: list[str], cwd: Path, pythonpath: Path | None) -> subprocess.CompletedProcess:
    """Runs the installed ``liars-eval`` script (whose sys.path does not hold the cwd)."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    if pythonpath is not None:
        env["PYTHONPATH"] = str(pythonpath)
    return subprocess.run(
        [str(LIARS_EVAL), *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=120
    )


def eval_args(agents: list[str], out: Path, workers: int) -> list[str]:
    return [
        *("--agents", *agents, "--games", "48", "--seed", "1", "--workers", str(workers)),
        *("--no-progress", "--out", str(out), "--plot", str(out.with_suffix(".png"))),
    ]


@needs_script
def test_liars_eval_with_import_paths_and_entry_points(bots_dir, tmp_path_factory):
    write_distribution(bots_dir, {"lowbot": "tests_pkg.mod:Lowest"})
    out = bots_dir / "results.json"
    agents = ["tests_pkg.mod:Lowest", "lowbot", "random"]
    elsewhere = tmp_path_factory.mktemp("elsewhere")
    result = run_eval(eval_args(agents, out, 2), cwd=elsewhere, pythonpath=bots_dir)
    assert result.returncode == 0, result.stdout + result.stderr
    data = json.loads(out.read_text())
    assert [a["spec"] for a in data["agents"]] == agents
    assert data["games"] == 48 and sum(a["wins"] for a in data["agents"]) == 48
    # found through the current directory, without PYTHONPATH
    out = bots_dir / "results_cwd.json"
    result = run_eval(eval_args(agents[::2], out, 1), cwd=bots_dir, pythonpath=None)
    assert result.returncode == 0, result.stdout + result.stderr
    assert [a["spec"] for a in json.loads(out.read_text())["agents"]] == agents[::2]


@needs_script
def test_liars_eval_reports_a_bad_path(tmp_path):
    result = run_eval(["--agents", "nowhere_mod:Bot", "random", "--games", "2"], tmp_path, None)
    assert result.returncode == 2
    message = " ".join(result.stderr.split())  # errors go to stderr, results to stdout
    assert "agent spec 'nowhere_mod:Bot': no module named 'nowhere_mod'" in message
