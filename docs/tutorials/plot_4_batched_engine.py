"""
The batched engine
==================

:class:`~liars_env.batched.BatchedEnv` plays thousands of games per step, on the CPU
(compiled loops with numba) or on a GPU (torch tensor ops): the engine the trainer
collects its games with. Observations, masks and actions are torch tensors, one row per
game; a game that ends restarts at once.

"""

# %%
# Stepping a batch
# ----------------

import time

import torch

from liars_env.batched import BatchedEnv, sample_legal

batch = BatchedEnv("perudo", num_envs=1024, seed=0)
obs, mask = batch.reset()
for _ in range(50):
    obs, mask, rewards, dones, info = batch.step(sample_legal(mask))
print(obs.shape, mask.shape, int(dones.sum()), "games ended on the last step")

# %%
# ``step`` checks every action first (``check_actions=True``, a few look-ups per step;
# ``batch.is_legal(actions)`` answers the same question for your own actions); turn it
# off in a loop that only ever picks from the mask. Here game 3 gets an illegal action:

actions = sample_legal(mask)
actions[3] = int((mask[3] == 0).nonzero()[0, 0])
print(batch.is_legal(actions)[:5])

# %%
# For random play, ``batch.sample_actions(gen)`` draws the same actions as
# ``sample_legal(batch.legal_mask(), gen)`` from tables of each position's legal actions,
# and is cheaper at large batches:

a = batch.sample_actions(torch.Generator().manual_seed(1))
b = sample_legal(batch.legal_mask(), torch.Generator().manual_seed(1))
print(bool((a == b).all()))

# %%
# Two backends, the same games
# ----------------------------
#
# On the CPU a step runs as a few compiled loops (``backend="numba"``) instead of about
# sixty small torch ops (``backend="torch"``, what runs on a GPU). Both give the same
# games, observations, masks and rewards for a seed; the choice is only about speed.
# numba compiles the loops on first use and caches them on disk (a few seconds, once per
# machine).

envs = {
    name: BatchedEnv("perudo", num_envs=256, seed=1, backend=name) for name in ("numba", "torch")
}
first = {name: env.reset() for name, env in envs.items()}
for _ in range(20):
    actions = sample_legal(first["numba"][1], torch.Generator().manual_seed(2))
    first = {name: env.step(actions)[:2] for name, env in envs.items()}
print(all(torch.equal(x, y) for x, y in zip(first["numba"], first["torch"], strict=True)))

# %%
# Decisions per second
# --------------------
#
# A small measurement on this machine (one torch thread; ``benchmarks/batched_throughput.py``
# measures more):

import matplotlib.pyplot as plt

sizes = [16, 256, 4096]
rates = {}
for name in ("numba", "torch"):
    rates[name] = []
    for size in sizes:
        env = BatchedEnv("perudo", num_envs=size, seed=0, backend=name, check_actions=False)
        obs, mask = env.reset()
        gen = torch.Generator().manual_seed(0)
        start, steps = time.perf_counter(), 0
        while time.perf_counter() - start < 0.5:
            obs, mask, *_ = env.step(env.sample_actions(gen))
            steps += 1
        rates[name].append(size * steps / (time.perf_counter() - start))
fig, ax = plt.subplots(figsize=(5, 3))
for name, values in rates.items():
    ax.plot(sizes, values, marker="o", label=name)
ax.set_xscale("log")
ax.set_yscale("log")
ax.set_xlabel("games in the batch")
ax.set_ylabel("decisions per second")
ax.legend()
fig.tight_layout()
