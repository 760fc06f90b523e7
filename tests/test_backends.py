"""The batched engine's backends: one protocol, two implementations built from the same tables."""

from __future__ import annotations

import inspect

import numpy as np
import pytest
import torch

from liars_env.batched import BatchedEnv
from liars_env.batched.backends import BatchedBackend, resolve_backend
from liars_env.batched.numba_backend import NumbaBackend
from liars_env.batched.torch_backend import TorchBackend

pytest.importorskip("numba")

METHODS = [
    name
    for name, member in inspect.getmembers(BatchedBackend, inspect.isfunction)
    if not name.startswith("_")
]


def test_the_protocol_names_what_the_env_asks_for():
    assert sorted(METHODS) == [
        "apply_actions",
        "first_illegal",
        "legal_mask",
        "observe",
        "sample_actions",
        "start_rounds",
    ]


@pytest.mark.parametrize("backend", [TorchBackend, NumbaBackend])
@pytest.mark.parametrize("method", METHODS)
def test_both_backends_implement_the_protocol(backend, method):
    want = inspect.signature(getattr(BatchedBackend, method))
    got = inspect.signature(getattr(backend, method))
    assert list(got.parameters) == list(want.parameters)


@pytest.mark.parametrize("backend", ["torch", "numba"])
def test_the_env_builds_the_backend_it_names(backend):
    env = BatchedEnv("perudo", num_envs=3, backend=backend)
    assert env.backend == env.backend_impl.name == backend


@pytest.mark.parametrize(("rules", "players"), [("perudo", 3), ("sanford", 5), ("perudo", 2)])
def test_the_numba_tables_are_the_torch_tables(rules, players):
    env = BatchedEnv(rules, num_players=players, num_envs=2, backend="numba")
    torch_side, numba_side = TorchBackend(env), env.backend_impl
    assert np.array_equal(numba_side.move_cell, torch_side.move_cell.numpy())
    assert numba_side.move_cell.dtype == torch_side.move_cell.numpy().dtype
    assert np.array_equal(numba_side.own_dice_value, torch_side.own_dice_value.numpy())
    assert np.array_equal(numba_side.dice_left_value, torch_side.dice_left_value.numpy())
    names = ["own_dice", "dice_left", "opener", "palifico", "current_bid", "current_bidder"]
    assert numba_side.offsets.tolist() == [torch_side.off[n] for n in [*names, "bid_history"]]
    assert numba_side.penalty == torch_side.penalty


def test_first_illegal_is_the_same_game_on_both_backends():
    envs = [BatchedEnv("perudo", num_envs=6, seed=3, backend=b) for b in ("torch", "numba")]
    for env in envs:
        env.reset()
    actions = envs[0].sample_actions(torch.Generator().manual_seed(0))
    ones = envs[0].codec.encode_bid(1, 1)  # perudo opens on no ones
    actions[2] = actions[4] = ones
    active = torch.tensor([True, True, False, True, True, True])
    found = [env.backend_impl.first_illegal(env, actions, active) for env in envs]
    assert found == [4, 4]
    assert [env.backend_impl.first_illegal(env, actions, None) for env in envs] == [2, 2]


def test_resolve_backend_refuses_unknown_names():
    with pytest.raises(ValueError, match="backend must be one of 'auto', 'torch', 'numba'"):
        resolve_backend("cuda", torch.device("cpu"))
