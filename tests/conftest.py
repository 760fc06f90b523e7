"""Fixtures shared by the training tests."""

from __future__ import annotations

import pytest
from helpers import TINY

from liars_train import train as train_cli


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
