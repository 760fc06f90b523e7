"""The allocator settings of :mod:`liars_env.batched.memory`, each in a fresh process.

``mallopt`` is process-wide and cannot be undone, so every case runs in a subprocess
with the environment it needs.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from liars_env.batched import memory

pytestmark = pytest.mark.skipif(memory._glibc() is None, reason="glibc's malloc only")

# A block 64 KiB larger every round, written and freed. With glibc's own thresholds each
# one is above the mmap threshold (the largest block freed so far), so it comes as fresh
# pages and every page faults; kept blocks are reused and only the 64 KiB of growth does.
PROBE = """
import json, resource, sys, torch
from liars_env.batched import memory
torch.set_num_threads(1)  # the main thread's allocations alone, whatever the machine's load
{setup}
def faults():
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt
floats = 2 * 1024 * 1024
for k in range(3):
    torch.empty(floats + k * 16384).fill_(1.0)
before = faults()
for k in range(3, 23):
    torch.empty(floats + k * 16384).fill_(1.0)
print(json.dumps({{"applied": memory._applied, "faults": (faults() - before) / 20}}))
"""
PAGES_PER_ROUND = 8 * 1024 * 1024 // 4096


def probe(setup: str, **env: str) -> dict:
    """Runs :data:`PROBE` in a fresh interpreter; its applied flag and faults per round."""
    theirs = (memory.OPT_OUT, "GLIBC_TUNABLES", "MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_")
    environ = {k: v for k, v in os.environ.items() if k not in theirs}
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
    assert out["faults"] < 0.15 * PAGES_PER_ROUND  # (the growth alone: 16 pages a round)


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
    # an opt-out set after the first call changes nothing: the thresholds are set already
    out = probe(
        "import os\n"
        "assert memory.retain_freed_memory() is True\n"
        "os.environ[memory.OPT_OUT] = '0'\n"
        "assert memory.retain_freed_memory() is True"
    )
    assert out["applied"] is True
