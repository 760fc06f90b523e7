"""Ray as processes see it: another cluster on the machine, stops, kills, and what is left.

Each test runs ``liars-train`` (or a script) in a process of its own with a Ray temp
folder of its own (``RAY_TMPDIR``), so every Ray process it starts names that folder on
its command line and can be found afterwards; none may be left.

- Another Ray cluster running on the machine (``ray start --head``, found by a plain
  ``ray.init()``) is never joined: the trainer and the RLlib backend start their own.
- ``RAY_ADDRESS`` naming a head nobody answers is a one-line error.
- Ctrl-C stops a run with workers cleanly: exit status 130, the resume command, no
  Ray process left, and ``--resume`` finishes the run.
- A killed driver (``kill -9``) leaves a run that ``--resume`` finishes with workers.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
from helpers import processes_naming, start_ray_head

pytest.importorskip("ray")

RUN = [
    "total_steps=1048576",
    "num_envs=32",
    "num_steps=8",
    "num_minibatches=2",
    "update_epochs=1",
    "hidden_size=16",
    "hidden_layers=1",
    "torch_threads=1",
    "league=[probabilistic]",
    "eval_every=0",
    "checkpoint_every=2",
    "final_eval_games=0",
    "progress=false",
    "workers=1",
]


@pytest.fixture
def ray_tmp():
    """A short Ray temp folder of the test's own (unix socket paths are short)."""
    folder = Path(tempfile.mkdtemp(prefix="lr", dir="/tmp"))
    yield folder
    _stop(processes_naming(folder))


def _stop(pids: list[int]) -> None:
    for pid in pids:
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)


def _none_left(folder: Path, within: float = 20.0) -> list[int]:
    """Waits up to ``within`` seconds for every Ray process of ``folder`` to end."""
    end = time.monotonic() + within
    while (left := processes_naming(folder)) and time.monotonic() < end:
        time.sleep(0.5)
    return left


def _env(folder: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}
    return {**env, "RAY_TMPDIR": str(folder), "RAY_USAGE_STATS_ENABLED": "0", **extra}


def _train(folder: Path, *args: str) -> subprocess.Popen:
    command = [sys.executable, "-m", "liars_train.train", *args]
    return subprocess.Popen(
        command, env=_env(folder), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )


def _sets(*items: str) -> list[str]:
    return [x for item in items for x in ("--set", item)]


def _first_checkpoint(run: Path, proc: subprocess.Popen, within: float = 240.0) -> None:
    end = time.monotonic() + within
    while not list((run / "checkpoints").glob("step_*")):
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < end, "no checkpoint in time"
        time.sleep(0.2)
    time.sleep(1.0)  # (the rename is atomic; let one more update start)


def _communicate_or_dump(proc: subprocess.Popen, within: float) -> tuple[str, str]:
    """The run's output once it ends; if it is still running after ``within`` seconds,
    fails with where each of its threads is (``liars-train`` dumps them on SIGUSR1)."""
    try:
        return proc.communicate(timeout=within)
    except subprocess.TimeoutExpired:
        proc.send_signal(signal.SIGUSR1)
        time.sleep(2.0)
        proc.kill()
        out, err = proc.communicate()
        pytest.fail(f"the run did not end within {within} s; its threads:\n{err[-6000:]}")


def _resume_to_the_end(folder: Path, run: Path) -> None:
    steps = sorted((run / "checkpoints").glob("step_*"))
    step = int(steps[-1].name.removeprefix("step_"))
    resumed = _train(folder, "--resume", str(run), *_sets(f"total_steps={step + 512}"))
    out, err = resumed.communicate(timeout=300)
    assert resumed.returncode == 0, err
    assert f"resumed {steps[-1]}" in out
    last = sorted((run / "checkpoints").glob("step_*"))[-1]
    assert json.loads((last / "meta.json").read_text())["step"] == step + 512
    assert _none_left(folder) == []


def test_ctrl_c_stops_cleanly_and_leaves_a_resumable_run(tmp_path, ray_tmp):
    run = tmp_path / "stop"
    proc = _train(ray_tmp, *_sets(f"runs_dir={tmp_path}", "run_name=stop", *RUN))
    _first_checkpoint(run, proc)
    assert processes_naming(ray_tmp), "the run should have started a Ray of its own"
    proc.send_signal(signal.SIGINT)
    out, err = _communicate_or_dump(proc, within=120)
    assert proc.returncode == 130, err
    assert "stopping after this update" in err
    assert f"stopped; continue with liars-train --resume {run}" in err
    assert _none_left(ray_tmp) == []  # no Ray process outlives the run
    _resume_to_the_end(ray_tmp, run)


def test_a_killed_driver_leaves_a_run_that_resumes_with_workers(tmp_path, ray_tmp):
    run = tmp_path / "killed"
    sets = _sets(f"runs_dir={tmp_path}", "run_name=killed", *RUN, "workers=2")
    proc = _train(ray_tmp, *sets)
    _first_checkpoint(run, proc)
    proc.kill()
    proc.communicate(timeout=60)
    _none_left(ray_tmp)  # Ray's processes share the driver's fate (or are ended here)
    _stop(processes_naming(ray_tmp))
    _resume_to_the_end(ray_tmp, run)


def test_an_unreachable_head_is_a_one_line_error(tmp_path):
    command = [sys.executable, "-m", "liars_train.train", *_sets(f"runs_dir={tmp_path}", *RUN)]
    env = {**os.environ, "RAY_ADDRESS": "127.0.0.1:9"}  # the discard port: nobody listens
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "RAY_ADDRESS '127.0.0.1:9' is unreachable" in lines[0], lines
    assert not (tmp_path / "ppo").exists()


FOREIGN_PROBE = """
import json, ray
ray.init(log_to_driver=False)  # a plain init joins the cluster ray start began
plain = ray.get_runtime_context().gcs_address
ray.shutdown()
from liars_train.distributed.cluster import connect
connect(1)
trainer = ray.get_runtime_context().gcs_address
ray.shutdown()
try:
    from liars_train import rllib
except ImportError:
    rllib_address = None
else:
    rllib.start_ray()
    rllib_address = ray.get_runtime_context().gcs_address
    ray.shutdown()
print(json.dumps({"plain": plain, "trainer": trainer, "rllib": rllib_address}))
"""


def test_another_ray_cluster_on_the_machine_is_never_joined(ray_tmp):
    env = _env(ray_tmp)
    port = start_ray_head(env, timeout=180)
    try:
        probe = subprocess.run(
            [sys.executable, "-c", FOREIGN_PROBE],
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert probe.returncode == 0, probe.stderr
        seen = json.loads(probe.stdout.strip().splitlines()[-1])
    finally:
        _stop(processes_naming(ray_tmp))
    foreign = f"127.0.0.1:{port}"
    assert seen["plain"] == foreign  # the check can fail: a bare ray.init joins it
    assert seen["trainer"] != foreign
    assert seen["rllib"] != foreign  # (None: no RLlib installed)
