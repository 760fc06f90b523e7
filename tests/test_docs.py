"""Every code block of the docs runs: Python blocks in order in one namespace per page,
shell blocks as commands (from a temporary folder holding a copy of configs/)."""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from liars_env.batched.threads import using_threads

ROOT = Path(__file__).resolve().parents[1]
DOCS = sorted((ROOT / "docs").glob("*.md"))
COMPAT_MODULES = {
    "stable_baselines3",
    "sb3_contrib",
    "torchrl",
    "tensordict",
    "tianshou",
    "ray",
    "pyspiel",
    "starlette",
    "uvicorn",
    "openai",
    "textarena",
}
"""Client libraries of the ``compat``/``rllib``/``llm`` extras: a page needing an absent one
skips."""
BLOCK = re.compile(r"```(python|bash)\n(.*?)```", re.S)


def blocks(page: Path):
    return BLOCK.findall(page.read_text())


@pytest.mark.parametrize("page", DOCS, ids=lambda p: p.name)
def test_every_code_block_runs(page, tmp_path, monkeypatch):
    shutil.copytree(ROOT / "configs", tmp_path / "configs")
    shutil.copytree(ROOT / "checkpoints", tmp_path / "checkpoints")
    monkeypatch.chdir(tmp_path)
    namespace: dict = {"__name__": f"docs_{page.stem}"}
    bindir = Path(sys.executable).parent
    env = {**os.environ, "PATH": f"{bindir}{os.pathsep}{os.environ.get('PATH', '')}"}
    with using_threads(1):  # the pages' tiny trainings: one thread is fastest here
        run_page(page, namespace, env)


def run_page(page: Path, namespace: dict, env: dict) -> None:
    """Runs the code blocks of ``page`` in order."""
    for kind, code in blocks(page):
        if kind == "python":
            try:
                exec(compile(code, f"{page.name}", "exec"), namespace)  # noqa: S102
            except ModuleNotFoundError as exc:
                if exc.name and exc.name.split(".")[0] in COMPAT_MODULES:
                    pytest.skip(f"{page.name} needs {exc.name}: pip install -e '.[compat]'")
                raise
            continue
        for line in code.strip().splitlines():
            result = subprocess.run(
                shlex.split(line), env=env, capture_output=True, text=True, timeout=300
            )
            assert result.returncode == 0, f"{line}\n{result.stdout}\n{result.stderr}"


def test_readme_python_example_runs():
    (code,) = [c for kind, c in blocks(ROOT / "README.md") if kind == "python"]
    exec(compile(code, "README.md", "exec"), {"__name__": "readme"})  # noqa: S102


def test_the_docs_site_builds_with_every_reference_resolved(tmp_path):
    """``sphinx-build -W``: a broken link or cross reference, a page left out of the
    table of contents or a docstring that does not parse fails the build."""
    result = subprocess.run(
        [sys.executable, "-m", "sphinx", "-E", "-W", "--keep-going", "-q", "-b", "html"]
        + [str(ROOT / "docs"), str(tmp_path / "site")],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stderr[-4000:]
    assert (tmp_path / "site" / "api" / "solver.html").stat().st_size > 20_000


def test_the_docs_site_build_fails_on_a_broken_reference(tmp_path):
    """The site's own configuration turns a broken link or cross reference into a failure
    (built on a one-page site: the configuration is what is tested, not the pages)."""
    docs = tmp_path / "docs"
    docs.mkdir()
    shutil.copy(ROOT / "docs" / "conf.py", docs / "conf.py")
    (docs / "index.md").write_text(
        "# Index\n\nSee [the missing page](missing.md) and {py:func}`liars_env.no_such`.\n"
    )
    result = subprocess.run(
        [sys.executable, "-m", "sphinx", "-W", "-q", "-b", "html", str(docs), str(tmp_path / "o")],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode != 0 and "missing.md" in result.stderr, result.stderr


def test_a_tutorial_that_raises_fails_the_docs_build(tmp_path):
    """The tutorials run when the site builds (sphinx-gallery): one that raises fails it
    (built on a one-tutorial site)."""
    docs = tmp_path / "docs"
    (docs / "tutorials").mkdir(parents=True)
    shutil.copy(ROOT / "docs" / "conf.py", docs / "conf.py")
    shutil.copy(ROOT / "docs" / "tutorials" / "README.txt", docs / "tutorials" / "README.txt")
    (docs / "tutorials" / "plot_broken.py").write_text(
        '"""\nBroken\n======\n\nA tutorial that raises.\n"""\n\n'
        'raise RuntimeError("tutorial broke")\n'
    )
    (docs / "index.md").write_text(
        "# Index\n\n```{toctree}\n_generated/tutorials/plot_broken\n```\n"
    )
    result = subprocess.run(
        [sys.executable, "-m", "sphinx", "-W", "-q", "-b", "html", str(docs), str(tmp_path / "o")],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode != 0 and "tutorial broke" in result.stderr, result.stderr[-3000:]
