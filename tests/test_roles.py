"""The trainer's roles are chosen once, where the run is built; the loop never knows which.

The in-process and the Ray roles follow the protocols of :mod:`liars_train.ppo.roles`; a
trainer given any :class:`~liars_train.ppo.roles.Roles` runs the same loop, and its source
names neither ``workers`` nor Ray.
"""

from __future__ import annotations

import ast
import inspect

import pytest
from test_trainer_golden import checkpoint_hashes

from liars_train import ppo, runner
from liars_train.ppo import roles, trainer

SMALL = [
    "total_steps=512",
    "num_envs=16",
    "num_steps=8",
    "num_minibatches=2",
    "update_epochs=1",
    "hidden_size=16",
    "hidden_layers=1",
    "progress=false",
    "torch_threads=1",
    "league=[probabilistic]",
    "pool_size=2",
    "eval_every=2",
    "eval_games=4",
    "eval_opponents=[probabilistic]",
    "checkpoint_every=2",
    "final_eval_games=0",
    "exploiter_every=2",
    "exploiter_steps=128",
    "exploiter_eval_games=4",
]


def _code_of(obj) -> str:
    """Source without docstrings and comments (what runs)."""
    tree = ast.parse(inspect.getsource(obj))
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        first = body[0] if isinstance(body, list) and body else None
        value = first.value if isinstance(first, ast.Expr) else None
        if isinstance(value, ast.Constant) and isinstance(value.value, str):
            body[0:1] = [] if len(body) > 1 else [ast.Pass()]  # (a body of a docstring alone)
    return ast.unparse(tree)


def test_the_loop_names_neither_workers_nor_ray():
    tree = ast.parse(_code_of(trainer))
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            names.add(node.id)
        elif isinstance(node, ast.Attribute):
            names.add(node.attr)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update(a.name for a in node.names)
            names.update((getattr(node, "module", None) or "").split("."))
    for word in ("workers", "ray", "distributed", "actors", "saved", "OnRay"):
        assert word not in names, f"the trainer's code names {word!r}"
    assert not [n for n in names if n.startswith("Remote")]
    assert ".rollout.states(" not in _code_of(trainer)  # (RemoteRollouts only)


def test_roles_are_chosen_once_from_the_settings():
    assert isinstance(runner.roles_for(ppo.Args()), roles.InProcess)
    pytest.importorskip("ray")
    from liars_train.distributed import OnRay

    assert isinstance(runner.roles_for(ppo.Args(workers=1, num_envs=8)), OnRay)


def test_in_process_roles_refuse_settings_that_ask_for_actors(tmp_path):
    args = ppo.load_args(None, [f"runs_dir={tmp_path}", *SMALL, "workers=2"])
    with pytest.raises(ValueError, match=r"workers: 2 asks for rollout actors.*make_trainer"):
        ppo.Trainer(args)
    assert not (tmp_path / "ppo").exists()


@pytest.mark.parametrize(
    ("role", "protocol"),
    [
        ("liars_train.ppo.rollout:Rollout", roles.RolloutSource),
        ("liars_train.ppo.evaluate:LocalEvaluations", roles.EvaluationService),
        ("liars_train.ppo.exploiters:LocalExploiter", roles.ExploiterTrainer),
        ("liars_train.distributed.rollouts:RemoteRollouts", roles.RolloutSource),
        ("liars_train.distributed.evaluation:RemoteEvaluations", roles.EvaluationService),
        ("liars_train.distributed.exploiters:RemoteExploiter", roles.ExploiterTrainer),
    ],
)
def test_every_implementation_offers_its_protocol(role, protocol):
    import importlib

    module, _, name = role.partition(":")
    cls = getattr(importlib.import_module(module), name)
    wanted = {n for n in dir(protocol) if not n.startswith("_")} - {"lag"}
    missing = sorted(n for n in wanted if not hasattr(cls, n))
    assert missing == [], f"{name} lacks {missing}"


class Counting:
    """Roles that wrap the in-process ones and count what the loop asks of them."""

    def __init__(self) -> None:
        self.inner = roles.InProcess()
        self.calls: dict[str, int] = {}

    def _wrap(self, role):
        calls = self.calls

        class Wrapped:
            def __getattr__(self, name):
                value = getattr(role, name)
                if callable(value):
                    calls[name] = calls.get(name, 0) + 1
                return value

        return Wrapped()

    def rollouts(self, ctx):
        return self._wrap(self.inner.rollouts(ctx))

    def evaluations(self, ctx):
        return self._wrap(self.inner.evaluations(ctx))

    def exploiter(self, ctx):
        return self._wrap(self.inner.exploiter(ctx))


def test_a_trainer_runs_the_same_with_any_roles_it_is_given(tmp_path):
    plain = ppo.load_args(None, [f"runs_dir={tmp_path}", "run_name=plain", *SMALL])
    runner.make_trainer(plain).train()
    counting = Counting()
    args = ppo.load_args(None, [f"runs_dir={tmp_path}", "run_name=wrapped", *SMALL])
    ppo.Trainer(args, counting).train()
    assert checkpoint_hashes(tmp_path / "wrapped") == checkpoint_hashes(tmp_path / "plain")
    assert counting.calls["collect"] == 4 and counting.calls["submit"] == 2
    assert counting.calls["start"] == 1 + 2  # the games, then two exploiters
    assert {"close", "saved_state", "done"} <= set(counting.calls)
