"""The allocator settings of :mod:`liars_env.memory`, each in a fresh process.

``mallopt`` is process-wide and cannot be undone, so every case runs in a subprocess
with the environment it needs.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from liars_env import memory

pytestmark = pytest.mark.skipif(memory._glibc() is None, reason="glibc's malloc only")

# Two 24 MiB blocks alive at once, then both freed, ten times over: with glibc's own
# thresholds the 48 MiB freed at the top of the heap passes its trim threshold (twice the
# largest block freed) and goes back to the system, so every round's writes fault again.
PROBE = """
import json, resource, sys, torch
from liars_env import memory
{setup}
def faults():
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt
n = 6 * 1024 * 1024
def round_trip():
    blocks = [torch.empty(n).fill_(1.0) for _ in range(2)]
    del blocks
for _ in range(3):
    round_trip()
before = faults()
for _ in range(10):
    round_trip()
print(json.dumps({{"applied": memory._applied, "faults": (faults() - before) / 10}}))
"""
PAGES_PER_ROUND = 2 * 6 * 1024 * 1024 * 4 // 4096


def probe(setup: str, **env: str) -> dict:
    """Runs :data:`PROBE` in a fresh interpreter; its applied flag and faults per round."""
    environ = {k: v for k, v in os.environ.items() if k != memory.OPT_OUT}
    environ.pop("GLIBC_TUNABLES", None)
    result = subprocess.run(
        [sys.executable, "-c", PROBE.format(setup=setup)],
        env={**environ, **env},
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    return json.loads(result.stdout.strip().splitlines()[-1])


def test_glibcs_own_thresholds_return_freed_blocks_as_page_faults():
    # the problem the module solves, so that the next test means something
    out = probe("")
    assert out["applied"] is None
    assert out["faults"] > 0.5 * PAGES_PER_ROUND


def test_a_batched_env_on_the_cpu_keeps_freed_blocks_for_reuse():
    out = probe("from liars_env.batched import BatchedEnv; BatchedEnv(num_envs=4)")
    assert out["applied"] is True
    assert out["faults"] < 0.01 * PAGES_PER_ROUND


@pytest.mark.parametrize(
    "env",
    [
        {memory.OPT_OUT: "0"},
        {"GLIBC_TUNABLES": "glibc.malloc.trim_threshold=1048576"},
        {"MALLOC_MMAP_THRESHOLD_": "1048576"},
    ],
    ids=["opt-out", "glibc-tunables", "malloc-env"],
)
def test_the_users_own_settings_win(env):
    out = probe("assert memory.retain_freed_memory() is False", **env)
    assert out["applied"] is False


def test_later_calls_repeat_the_first_answer():
    out = probe(
        "assert memory.retain_freed_memory() is True\nassert memory.retain_freed_memory() is True"
    )
    assert out["applied"] is True
