"""The trainer writes the same weights, bit for bit, as it did before it was split by role.

An extra beside ``tests/test_determinism.py`` (which compares runs on the machine itself
and so runs everywhere): hashes recorded on a few machines, checked where they exist.

A seeded tiny run with every role at work (the league with bots and snapshots, a teacher
kickstarting the policy, the EMA magnet and the KL term, dice shaping, one exploiter,
periodic evaluations) writes its checkpoints; the sha256 of every tensor they hold
(weights, optimizer, league snapshots, generators) was recorded on the one-file trainer
(``training/ppo.py`` at commit ``8e44871``, before it became ``training/ppo/``) and is
checked here.

The hashes depend on the machine as well as on the code: torch's CPU kernels round
differently on another processor, and other versions of torch, numpy or numba may too
(the first recorded set and this machine's differ on the same kind of CPU). A run passes
if it writes one of the recorded sets; on a machine with a set of its own
(:func:`machine_signature`) any other result fails; elsewhere the test is skipped, saying
how to record that machine's hashes on the old code (never on the new)::

    git archive 8e44871 | tar -x -C /tmp/old && ln -s training /tmp/old/liars_train
    cd tests && PYTHONPATH=/tmp/old python test_trainer_golden.py
"""

from __future__ import annotations

import hashlib
import io
import platform
import re
import sys
import tempfile
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

from liars_env.agents.policy import load_trainer_state
from liars_train import ppo
from liars_train.runner import make_trainer

GOLDEN = [
    "total_steps=1024",
    "num_envs=32",
    "num_steps=8",
    "num_minibatches=2",
    "update_epochs=1",
    "hidden_size=16",
    "hidden_layers=1",
    "progress=false",
    "torch_threads=1",
    "self_play=0.3",
    "league=[probabilistic]",
    "pool_size=2",
    "snapshot_every=1",
    "teacher=probabilistic",
    "teacher_steps=1024",
    "magnet=ema",
    "magnet_coef=0.1",
    "kl_coef=0.1",
    "dice_shaping=0.5",
    "exploiter_every=1",
    "exploiter_steps=128",
    "exploiter_eval_games=8",
    "exploiter_margin=0.0",
    "eval_every=2",
    "eval_games=8",
    "eval_opponents=[probabilistic]",
    "checkpoint_every=2",
    "final_eval_games=0",
]


def _tensors(value, prefix: str = ""):
    """Every tensor in a nested state (dicts, lists), with a path naming it."""
    if isinstance(value, torch.Tensor):
        yield prefix, value
    elif isinstance(value, dict):
        for key in sorted(value, key=str):
            yield from _tensors(value[key], f"{prefix}/{key}")
    elif isinstance(value, (list, tuple)):
        for i, item in enumerate(value):
            yield from _tensors(item, f"{prefix}/{i}")


def _digest(tensors) -> str:
    h = hashlib.sha256()
    for name, tensor in tensors:
        buffer = io.BytesIO()
        buffer.write(name.encode())
        buffer.write(str(tensor.dtype).encode())
        buffer.write(tensor.detach().cpu().contiguous().numpy().tobytes())
        h.update(buffer.getvalue())
    return h.hexdigest()


def checkpoint_hashes(run_dir: Path) -> dict[str, str]:
    """``{checkpoint folder: sha256 of its weights, of its trainer state}`` under a run."""
    out = {}
    for model in sorted(run_dir.rglob("model.safetensors")):
        folder = model.parent
        name = folder.relative_to(run_dir).as_posix().replace("checkpoints/", "")
        name = re.sub("step_0*", "step_", name.replace("exploiters/", "x"))  # x0/step_256
        out[f"{name}:model"] = _digest(_tensors(load_file(model)))
        state = load_trainer_state(folder)
        kept = {k: v for k, v in state.items() if k not in ("episode_returns", "workers")}
        out[f"{name}:state"] = _digest(_tensors(kept))
    return out


def golden_run(tmp_path: Path, *sets: str) -> Path:
    args = ppo.load_args(None, [f"runs_dir={tmp_path}", "run_name=golden", *GOLDEN, *sets])
    make_trainer(args).train()
    return tmp_path / "golden"


def machine_signature() -> str:
    """The processor and the numeric libraries: what the hashes depend on besides the code.

    The processor as torch's kernels see it (vendor, family, model, vector extension) and
    the versions of torch, numpy and numba (the batched engine's compiled loops).
    """
    import numba
    import numpy

    cpu = platform.processor() or platform.machine()
    try:
        info = Path("/proc/cpuinfo").read_text().splitlines()
        fields = dict(line.split(":", 1) for line in info if ":" in line)
        fields = {key.strip(): value.strip() for key, value in fields.items()}
        cpu = " ".join(fields.get(k, "?") for k in ("vendor_id", "cpu family", "model"))
    except OSError:
        pass
    versions = f"torch {torch.__version__} numpy {numpy.__version__} numba {numba.__version__}"
    return f"{cpu} {torch.backends.cpu.get_cpu_capability()} {versions}"


RECORDED: dict[str, dict[str, str]] = {
    # first recorded on 2026-12-04 (the same kind of CPU; the library versions not noted)
    "first": {
        "best:model": "45e5f263d6626ab6af71d417690f2d353c42dcee30afa27d94739ee7da98187e",
        "best:state": "1bbbea21397e47b66493c1e64995adc18ae5ebea3021b2dd489264c01da0edc1",
        "step_512:model": "45e5f263d6626ab6af71d417690f2d353c42dcee30afa27d94739ee7da98187e",
        "step_512:state": "1bbbea21397e47b66493c1e64995adc18ae5ebea3021b2dd489264c01da0edc1",
        "step_1024:model": "564c205aa12a6284c988347d7962ae7b54488f1e3e65238595ba4f6fc86383de",
        "step_1024:state": "8349e38e35411f54a661001d9cba20422eb7655cbcdd4f247a24231b5303700d",
        "x0/step_256:model": "a54a135c49a3da6be9a78ea360dba2515d003fd0ba191d4b7aca765227c53a23",
        "x0/step_256:state": "89440d5eabaf939609762a5eb33a66a138a9665ffb84a50ff23fa22e090c7c84",
        "x1/step_256:model": "5ead46fd05053abbee36c5e3e1ded5a72841a6caa5cbe196b4b13ec22567cb7c",
        "x1/step_256:state": "b63781e0d107b180ab7940a308bd751a3cc7efc4b891e9ad7552291679d5a64f",
        "x2/step_256:model": "4d7aa3359cc38328fd9aecee0ecdb8cf7fc10fe3335eb970727a135e3c05f80c",
        "x2/step_256:state": "c55fe7d15e2d1c7bc19ec9cecc6721883ed827caef9597a7464350fdf0f3f7c1",
        "x3/step_256:model": "433a0f930c3ac243ed7d90c82f3dc3923eeb651c682bf801b5224dac427f9e59",
        "x3/step_256:state": "e39de28e26274cd378ba828bd7c0c5edf3c94265cc31af1e9bc118814c8c1cc4",
    },
    "AuthenticAMD 25 17 AVX512 torch 2.13.0+cpu numpy 2.4.6 numba 0.68.1": {
        "best:model": "68ea3d70e154c1bb2524e0e399e17b53bdd3cc85301dcd5a759858d221617610",
        "best:state": "970f4b716c99de651d6d8d4928264dd9767be993ec56082369327d18cacbaaa6",
        "step_1024:model": "13ca881ee6d12244305fd227f5f77b463256050281ec727b8c8759864618f822",
        "step_1024:state": "912cea267b97d2f22b1accf4dda576bc3d50730154a239b98280ff5b19cd2357",
        "step_512:model": "68ea3d70e154c1bb2524e0e399e17b53bdd3cc85301dcd5a759858d221617610",
        "step_512:state": "970f4b716c99de651d6d8d4928264dd9767be993ec56082369327d18cacbaaa6",
        "x0/step_256:model": "5c7034a84bff150417f7a2180aefbd34ccb8c6c7972c87d290e2ec68c6213642",
        "x0/step_256:state": "c6747d980975544e16ff9b5192779db585012c6b1e3d01c8c19f7a115ea5f034",
        "x1/step_256:model": "f9d21004a7bab0ab7561b7bd8904a321114c7d3f76752a9f920fe73b67ae1eb0",
        "x1/step_256:state": "f50a8e2ba8941a30aa5acd548a7ba443fe5a264685cfa0a76bdc78cbee16e830",
        "x2/step_256:model": "883a40eb631e5565eac2d0f93c9a04b939fab345cf44831b4587a92438e9521d",
        "x2/step_256:state": "11eb2c0c15f0e48442ddcab6c9a7f5d21cc795e4ccf8d6c7c3f66e42703329cc",
        "x3/step_256:model": "60487625fbbce5357dae907c90fbed1e302d5e533b6fb75cfc6602938a9496af",
        "x3/step_256:state": "10512b59320e446063bc72958cd6c5563dd22c258e5b070807660cfda364ddbd",
    },
}
"""The old trainer's hashes: machine signature → {checkpoint: sha256}."""


def test_a_seeded_tiny_run_writes_the_recorded_weights(tmp_path):
    written = checkpoint_hashes(golden_run(tmp_path))
    if written in RECORDED.values():
        return
    mine = RECORDED.get(machine_signature())
    if mine is None:
        pytest.skip(
            f"no hashes recorded for this machine ({machine_signature()}): record them on "
            "the old trainer as the module docstring says"
        )
    assert written == mine


if __name__ == "__main__":  # records this CPU's hashes (run it on the old code: see above)
    hashes = checkpoint_hashes(golden_run(Path(tempfile.mkdtemp())))
    print(f"    {machine_signature()!r}: {{", file=sys.stderr)
    for key, value in sorted(hashes.items()):
        print(f"        {key!r}: {value!r},", file=sys.stderr)
    print("    },", file=sys.stderr)
