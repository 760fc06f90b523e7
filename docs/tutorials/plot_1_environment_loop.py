"""
The environment loop
====================

Liar's Dice as a PettingZoo AEC environment: the loop with action masks, the action
codec, illegal moves, what a challenge reveals and the observation layout. The full
specification (spaces, rewards, infos, reset options, versions) is on the
:doc:`environment page </env>`.

"""

# %%
# The AEC loop with action masks
# ------------------------------
#
# Liar's Dice is turn-based, so the environment follows PettingZoo's AEC API: one agent
# acts at a time, ``env.last()`` gives that agent's observation, and the observation
# carries an ``action_mask`` of the moves the rules allow right now.

import numpy as np

import liars_env

env = liars_env.env("perudo", num_players=3)
env.reset(seed=7)
rng = np.random.default_rng(0)
returns = {agent: 0.0 for agent in env.possible_agents}
for agent in env.agent_iter():
    obs, reward, terminated, truncated, info = env.last()
    returns[agent] += reward
    if terminated or truncated:
        env.step(None)  # eliminated players are stepped with None
        continue
    legal = np.flatnonzero(obs["action_mask"])
    env.step(int(rng.choice(legal)))

print(returns)  # the winner has +1, the others -0.5 each
assert abs(sum(returns.values())) < 1e-9

# %%
# Actions are integers; the raw environment translates for you:

raw = env.unwrapped
print(raw.bid_action(4, 2), raw.describe_action(raw.bid_action(4, 2)))  # 19 four 2s
print(raw.challenge_action, raw.exact_action)  # 90 None

# %%
# Illegal actions raise an error that says why, and change nothing:

env.reset(seed=1, options={"first_player": "player_0"})
env.step(raw.bid_action(5, 4))
try:
    env.step(raw.bid_action(2, 1))  # two 1s after five 4s
except liars_env.IllegalActionError as err:
    print(err)  # ... conversion to ones needs at least ceil(5/2) = 3

# %%
# What a challenge reveals
# ------------------------
#
# After every challenge ``raw.last_round`` says what was revealed (the infos carry the
# fixed-shape part: ``dice_left``, ``eliminated``, ``round_over``, ``dice_change``):

env.reset(
    seed=3,
    options={
        "dice": [[1, 2, 3, 4, 6], [1, 2, 2, 5, 6], [2, 3, 4, 5, 6]],
        "first_player": "player_0",
    },
)
env.step(raw.bid_action(4, 2))
env.step(raw.bid_action(7, 2))
env.step(raw.challenge_action)
result = raw.last_round
print(result["count"], result["losers"], result["next_opener"])  # 6 ['player_1'] player_1
print(env.infos["player_1"]["dice_change"])  # -1

# %%
# The observation layout
# ----------------------
#
# The observation is a flat ``float32`` vector, seat-relative (index 0 is you).
# ``raw.layout.slices`` names its fields (the :doc:`environment page </env>` lists them):

obs = env.observe(env.agent_selection)["observation"]
for name, part in raw.layout.slices.items():
    print(f"{name:15s} {part.start:4d}..{part.stop:4d}")
own = obs[raw.layout.slices["own_dice"]] * raw.rules.dice_per_player
print("my dice per face:", own)

# %%
# How long games last
# -------------------
#
# Random play, 200 games of 3-player perudo: the number of decisions per game.

import matplotlib.pyplot as plt

lengths = []
for seed in range(200):
    env.reset(seed=seed)
    steps = 0
    for _agent in env.agent_iter():
        obs, reward, terminated, truncated, info = env.last()
        if terminated or truncated:
            env.step(None)
            continue
        env.step(int(rng.choice(np.flatnonzero(obs["action_mask"]))))
        steps += 1
    lengths.append(steps)
fig, ax = plt.subplots(figsize=(6, 3))
ax.hist(lengths, bins=30)
ax.set_xlabel("decisions per game (random play, 3 players)")
ax.set_ylabel("games")
fig.tight_layout()

# %%
# The rules of every preset
# -------------------------
#
# :doc:`The rules page </rules>` states every rule, the source guide of each preset and
# the conventions chosen where the guides are silent. In code:

from liars_env import PRESETS
from liars_env.rules import PRESET_SOURCES

for name, rules in PRESETS.items():
    print(
        f"{name:22s} {PRESET_SOURCES[name]:42s} ones={rules.ones}, raise={rules.raise_rule}, "
        f"palifico={rules.palifico}, exact={rules.exact_call}, hand={rules.hand}"
    )
