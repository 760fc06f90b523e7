"""Fixtures shared by the training tests."""

from __future__ import annotations

import contextlib
import os
import signal
import tempfile

import pytest
from helpers import TINY, processes_naming, start_ray_head

from liars_train import train as train_cli

RAY_MODULES = {
    "test_cluster",
    "test_determinism",
    "test_distributed",
    "test_ray_processes",
    "test_rllib",
    "test_roles",
}
"""Test modules that start Ray clusters: run one after another, in one xdist worker."""


def pytest_collection_modifyitems(config, items):
    """Puts the tests of :data:`RAY_MODULES` in one ``xdist_group`` (``--dist loadgroup``).

    The suite runs on every core (``pytest -n auto``); the tests that start Ray clusters
    of their own, each sized for the whole machine, take turns on one of them.
    """
    for item in items:
        if item.path.stem in RAY_MODULES:
            item.add_marker(pytest.mark.xdist_group("ray"))


@pytest.fixture(scope="session")
def tiny_run(tmp_path_factory):
    """A tiny run of ``liars-train`` (``helpers.TINY``), trained once per session."""
    runs = tmp_path_factory.mktemp("runs")
    code = train_cli.main(
        [
            "--set",
            f"runs_dir={runs}",
            "--set",
            "run_name=tiny",
            *[x for item in TINY for x in ("--set", item)],
        ]
    )
    assert code == 0
    return runs / "tiny"


@pytest.fixture(scope="session", autouse=True)
def another_ray_cluster():
    """With ``LIARS_TEST_OTHER_RAY=1``: the whole suite runs beside another Ray cluster.

    A head started with ``ray start`` in the session's Ray temp folder (``RAY_TMPDIR``,
    set for the whole session), as a user's own Ray would be: a bare ``ray.init()`` in
    the tests joins it; every Ray the project starts must start its own instead
    (``tests/test_ray_processes.py`` checks the same on its own, always). Stopped at the
    end by the ids of the processes that name that folder, never with ``ray stop``
    (which would end every Ray on the machine).
    """
    if os.environ.get("LIARS_TEST_OTHER_RAY") != "1":
        yield
        return
    folder = tempfile.mkdtemp(prefix="lo", dir="/tmp")
    os.environ["RAY_TMPDIR"] = folder
    start_ray_head(dict(os.environ))
    yield
    for pid in processes_naming(folder):
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)  # (Ray's servers outlast a SIGTERM)
