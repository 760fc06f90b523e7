"""The RL libraries people already use, with their own documented usage, unchanged (issue 12).

Each client gets ``liars_env.env(...)`` as it is, at 2, 3 and 5 players of perudo and 5
(the cheap checks also 3) of sanford: PettingZoo's SB3 action-masking tutorial wrapper with
sb3-contrib's ``MaskablePPO``, TorchRL's ``PettingZooWrapper``, Tianshou's
``PettingZooEnv`` and ``Collector``, PettingZoo's parallel conversion and test suites, and
a video of the ``rgb_array`` frames. No adapter of ours sits between a library and the env:
a client that fails is an env bug (or, with a citation, the library's). RLlib's
``PettingZooEnv`` is in ``tests/test_rllib.py``, the single-agent Gymnasium env in
``tests/test_gym_env.py``.

The client libraries are in the ``compat`` extra: their tests skip when one is absent.
"""

from __future__ import annotations

import functools

import gymnasium as gym
import numpy as np
import pettingzoo.utils
import pytest
import torch

import liars_env

TABLES = [("perudo", 2), ("perudo", 3), ("perudo", 5), ("sanford", 5)]
"""The tables of the clients that train or run many steps."""
ALL_TABLES = [*TABLES, ("sanford", 3)]
"""The tables of the cheap checks."""


def table_id(table):
    return f"{table[0]}-{table[1]}p"


tables = pytest.mark.parametrize(("rules", "players"), TABLES, ids=[table_id(t) for t in TABLES])
all_tables = pytest.mark.parametrize(
    ("rules", "players"), ALL_TABLES, ids=[table_id(t) for t in ALL_TABLES]
)


@pytest.fixture(autouse=True)
def one_thread():
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def assert_zero_sum_one_winner(returns, players):
    """A whole game's returns: +1 for the winner, -1/(N-1) for everyone else."""
    returns = np.asarray(returns, dtype=np.float64)
    assert returns.sum() == pytest.approx(0.0, abs=1e-6)
    expected = [-1.0 / (players - 1)] * (players - 1) + [1.0]
    np.testing.assert_allclose(np.sort(returns), expected, atol=1e-6)


# --------------------------------------------------------------------------- SB3
# PettingZoo's tutorial "SB3: Action Masked PPO for Connect Four"
# (tutorials/SB3/connect_four/sb3_connect_four_action_mask.py, unchanged from 1.24 to 1.27;
# the earlier chess tutorial had the same wrapper), as the tutorial shows it: only its
# docstrings and comments are rewrapped for our line length.


# To pass into other gymnasium wrappers, we need to ensure that pettingzoo's wrappper
# can also be a gymnasium Env. Thus, we subclass under gym.Env as well.
class SB3ActionMaskWrapper(pettingzoo.utils.BaseWrapper, gym.Env):
    """Wrapper to allow PettingZoo environments to be used with SB3 illegal action masking."""

    def reset(self, seed=None, options=None):
        """Gymnasium-like reset function which assigns obs/action spaces to be the same for
        each agent.

        This is required as SB3 is designed for single-agent RL and doesn't expect obs/action
        spaces to be functions
        """
        super().reset(seed, options)

        # Strip the action mask out from the observation space
        self.observation_space = super().observation_space(self.possible_agents[0])["observation"]
        self.action_space = super().action_space(self.possible_agents[0])

        # Return initial observation, info (PettingZoo AEC envs do not by default)
        return self.observe(self.agent_selection), {}

    def step(self, action):
        """Gymnasium-like step function, returning observation, reward, termination,
        truncation, info.

        The observation is for the next agent (used to determine the next action), while the
        remaining items are for the agent that just acted (used to understand what just
        happened).
        """
        current_agent = self.agent_selection

        super().step(action)

        next_agent = self.agent_selection
        return (
            self.observe(next_agent),
            self._cumulative_rewards[current_agent],
            self.terminations[current_agent],
            self.truncations[current_agent],
            self.infos[current_agent],
        )

    def observe(self, agent):
        """Return only raw observation, removing action mask."""
        return super().observe(agent)["observation"]

    def action_mask(self):
        """Separate function used in order to access the action mask."""
        return super().observe(self.agent_selection)["action_mask"]


def mask_fn(env):
    # Do whatever you'd like in this function to return the action mask
    # for the current env. In this example, we assume the env has a
    # helpful method we can rely on.
    return env.action_mask()


def tutorial_eval(model, rules, players, num_games):
    """The tutorial's ``eval_action_mask`` loop: random seat 0, the model elsewhere.

    Like the tutorial, it stops at the first termination and reads the winner from
    ``env.rewards``: right only if no agent terminates before the game is over.
    """
    env = liars_env.env(rules, num_players=players)
    for i in range(num_games):
        env.reset(seed=i)
        env.action_space(env.possible_agents[0]).seed(i)
        winner = None
        for agent in env.agent_iter():
            obs, reward, termination, truncation, info = env.last()
            observation, action_mask = obs.values()
            if termination or truncation:
                winner = max(env.rewards, key=env.rewards.get)
                break
            if agent == env.possible_agents[0]:
                act = env.action_space(agent).sample(action_mask)
            else:
                act = int(
                    model.predict(observation, action_masks=action_mask, deterministic=True)[0]
                )
            env.step(act)
        state = env.unwrapped.game_state
        assert state.is_over  # the first termination is the end of the game
        assert winner == env.possible_agents[state.winner]
        assert env.rewards[winner] == 1.0


@functools.cache
def tutorial_model(rules, players):
    """``train_action_mask()`` of the tutorial, 2048 steps (one model per table)."""
    from sb3_contrib import MaskablePPO
    from sb3_contrib.common.wrappers import ActionMasker

    env = SB3ActionMaskWrapper(liars_env.env(rules, num_players=players))
    env.reset(seed=0)  # Must call reset() in order to re-define the spaces
    env = ActionMasker(env, mask_fn)  # Wrap to enable masking (SB3 function)
    model = MaskablePPO("MlpPolicy", env, seed=0)
    model.learn(total_timesteps=2048)
    return model


@tables
def test_sb3_tutorial_wrapper_and_maskable_ppo(rules, players):
    pytest.importorskip("stable_baselines3")
    pytest.importorskip("sb3_contrib")
    model = tutorial_model(rules, players)
    assert model.num_timesteps >= 2048
    tutorial_eval(model, rules, players, num_games=3)


@tables
def test_sb3_model_plays_whole_games_through_the_wrapper(rules, players):
    pytest.importorskip("stable_baselines3")
    pytest.importorskip("sb3_contrib")
    model = tutorial_model(rules, players)
    play = SB3ActionMaskWrapper(liars_env.env(rules, num_players=players))
    for seed in range(2):
        obs, _ = play.reset(seed=seed)
        terminated = truncated = False
        while not (terminated or truncated):
            mask = mask_fn(play)
            assert mask.any()  # the agent to act always has a legal action
            action, _ = model.predict(obs, action_masks=mask, deterministic=True)
            obs, reward, terminated, truncated, info = play.step(action)  # action: 0-d array
            assert play.unwrapped.game_state.is_over == terminated
        assert np.count_nonzero(info["dice_left"]) == 1


def test_env_accepts_every_member_of_its_action_space():
    env = liars_env.env("perudo", num_players=2)
    env.reset(seed=0)
    obs = env.last()[0]
    action = np.array(np.flatnonzero(obs["action_mask"])[0])  # shape (), dtype int64
    assert env.action_space(env.agent_selection).contains(action)
    env.step(action)


# --------------------------------------------------------------------------- TorchRL
def torchrl_episodes(td, players):
    """Per-agent returns ``(episodes, N)`` of the whole episodes of a rollout, and the
    ``next`` tensordicts at their last steps."""
    groups = [f"player_{i}" for i in range(players)]
    rewards = torch.stack([td["next", g, "reward"].reshape(-1) for g in groups], dim=-1)
    ends = td["next", "done"].reshape(-1).nonzero().reshape(-1).tolist()
    returns, start = [], 0
    for end in ends:
        returns.append(rewards[start : end + 1].sum(0).numpy())
        start = end + 1
    return np.array(returns), td["next"][ends]


@tables
@pytest.mark.filterwarnings("ignore:PettingZoo in TorchRL is tested using version")
def test_torchrl_pettingzoo_wrapper_rollouts(rules, players):
    pytest.importorskip("torchrl")
    from torchrl.envs.libs.pettingzoo import PettingZooWrapper
    from torchrl.envs.utils import check_env_specs

    torch.manual_seed(0)
    check_env_specs(PettingZooWrapper(env=liars_env.env(rules, num_players=players), use_mask=True))
    env = PettingZooWrapper(
        env=liars_env.env(rules, num_players=players), use_mask=True, return_state=True, seed=0
    )
    check_env_specs(env)
    assert env.group_map == {f"player_{i}": [f"player_{i}"] for i in range(players)}

    # the default (random) policy samples each action from the spec, with its mask
    td = env.rollout(80 + 50 * players, break_when_any_done=False)
    groups = list(env.group_map)
    acting = torch.cat([td[g, "mask"] for g in groups], dim=-1)
    assert (acting.sum(-1) == 1).all()  # one agent acts at every step
    for g in groups:
        mine = td[g, "mask"].reshape(-1)
        action = td[g, "action"].reshape(-1)[mine]
        legal = td[g, "action_mask"].reshape(len(td), -1)[mine]
        assert legal.gather(1, action[:, None]).all()
    state_space = env.state_space
    assert td["state"].shape == (len(td), *state_space.shape)
    assert all(state_space.contains(s) for s in td["state"].numpy()[:: len(td) // 10])

    returns, last = torchrl_episodes(td, players)
    assert len(returns) >= 2  # several whole episodes, reset in between
    for episode, final in zip(returns, last, strict=True):
        assert_zero_sum_one_winner(episode, players)
        for g in groups:  # every agent is done at the end, and only then
            assert final[g, "done"].all() and final[g, "terminated"].all()
            dice_left = final[g, "info", "dice_left"].reshape(-1)
            assert torch.count_nonzero(dice_left) == 1  # the game really is over
    done_steps = torch.stack([td["next", g, "done"].reshape(-1) for g in groups], -1)
    assert (done_steps.any(-1) == done_steps.all(-1)).all()  # nobody is done early


@pytest.mark.filterwarnings("ignore:PettingZoo in TorchRL is tested using version")
def test_torchrl_one_hot_actions():
    pytest.importorskip("torchrl")
    from torchrl.envs.libs.pettingzoo import PettingZooWrapper
    from torchrl.envs.utils import check_env_specs

    torch.manual_seed(0)
    env = PettingZooWrapper(
        env=liars_env.env("perudo", num_players=3), use_mask=True, categorical_actions=False
    )
    check_env_specs(env)
    td = env.rollout(200, break_when_any_done=False)
    returns, _ = torchrl_episodes(td, 3)
    assert len(returns) >= 1
    for episode in returns:
        assert_zero_sum_one_winner(episode, 3)


@pytest.mark.filterwarnings("ignore:PettingZoo in TorchRL is tested using version")
def test_torchrl_with_penalized_illegal_actions():
    pytest.importorskip("torchrl")
    from torchrl.envs.libs.pettingzoo import PettingZooWrapper

    aec = liars_env.env("perudo", num_players=3, illegal_action="penalize")
    env = PettingZooWrapper(env=aec, use_mask=True)
    td = env.reset()
    actor = aec.agent_selection
    td[actor, "action"] = torch.tensor([aec.unwrapped.challenge_action])  # no bid to call yet
    out = env.step(td)["next"]
    assert out["done"].all()  # an illegal move ends the game
    returns = [out[f"player_{i}", "reward"].item() for i in range(3)]
    assert out[actor, "reward"].item() == -1.0 and sum(returns) == pytest.approx(0.0)


# --------------------------------------------------------------------------- Tianshou
@all_tables
def test_tianshou_pettingzoo_env_whole_games(rules, players):
    pytest.importorskip("tianshou")
    from tianshou.env import PettingZooEnv

    env = PettingZooEnv(liars_env.env(rules, num_players=players))
    inner = env.env.unwrapped
    rng = np.random.default_rng(0)
    for seed in range(3):
        obs, info = env.reset(seed=seed)
        returns = np.zeros(players)
        terminated = truncated = False
        while not (terminated or truncated):
            assert obs["agent_id"] == inner.agent_selection
            legal = np.flatnonzero(obs["mask"])
            assert legal.size  # the agent to act always has a legal action
            obs, rew, terminated, truncated, info = env.step(int(rng.choice(legal)))
            assert len(rew) == players
            returns += rew
            assert terminated == inner.game_state.is_over  # the episode ends with the game
        assert returns[inner.game_state.winner] == 1.0
        assert_zero_sum_one_winner(returns, players)
        assert sorted(info) == sorted(liars_env.envs.aec.INFO_KEYS)


@all_tables
def test_tianshou_multi_agent_collector(rules, players):
    pytest.importorskip("tianshou")
    # The MARL tutorial of tianshou 2.0 (docs/02_deep_dives/L6_MARL.ipynb): random agents
    # (MultiAgentPolicyManager + RandomPolicy before 2.0).
    from tianshou.algorithm import (
        MARLRandomDiscreteMaskedOffPolicyAlgorithm,
        MultiAgentOffPolicyAlgorithm,
    )
    from tianshou.data import Collector
    from tianshou.env import DummyVectorEnv, PettingZooEnv

    def make_env():
        return PettingZooEnv(liars_env.env(rules, num_players=players))

    env = make_env()
    policy = MultiAgentOffPolicyAlgorithm(
        algorithms=[
            MARLRandomDiscreteMaskedOffPolicyAlgorithm(action_space=env.action_space)
            for _ in range(players)
        ],
        env=env,
    )
    envs = DummyVectorEnv([make_env, make_env])
    collector = Collector(policy, envs)
    result = collector.collect(n_episode=4, reset_before_collect=True)
    assert result.n_collected_episodes == 4
    assert result.returns.shape == (4, players)
    for episode in result.returns:
        assert_zero_sum_one_winner(episode, players)


# --------------------------------------------------------------------------- PettingZoo
@all_tables
@pytest.mark.filterwarnings("ignore:ignoring unknown reset option")  # the test's on purpose
def test_turn_based_aec_to_parallel_api_test(rules, players):
    from pettingzoo.test import parallel_api_test
    from pettingzoo.utils.conversions import turn_based_aec_to_parallel

    parallel_api_test(turn_based_aec_to_parallel(liars_env.env(rules, num_players=players)))


@pytest.mark.parametrize("name", sorted(liars_env.PRESETS))
@pytest.mark.filterwarnings("ignore:ignoring unknown reset option")
def test_parallel_api_test_every_preset(name):
    from pettingzoo.test import parallel_api_test
    from pettingzoo.utils.conversions import turn_based_aec_to_parallel

    parallel_api_test(turn_based_aec_to_parallel(liars_env.env(name)), num_cycles=300)


@all_tables
def test_turn_based_aec_to_parallel_whole_games(rules, players):
    from pettingzoo.utils.conversions import turn_based_aec_to_parallel

    env = turn_based_aec_to_parallel(liars_env.env(rules, num_players=players))
    for seed in range(3):
        observations, infos = env.reset(seed=seed)
        returns = dict.fromkeys(env.possible_agents, 0.0)
        while env.agents:
            assert env.agents == env.possible_agents  # all in until the game ends
            actors = [a for a in env.agents if observations[a]["action_mask"].any()]
            assert len(actors) == 1
            actions = {
                a: env.action_space(a).sample(observations[a]["action_mask"]) for a in env.agents
            }
            observations, rewards, terminations, truncations, infos = env.step(actions)
            for agent, reward in rewards.items():
                returns[agent] += reward
            assert len(set(terminations.values())) == 1  # all end together, or none
        assert_zero_sum_one_winner(list(returns.values()), players)


@pytest.mark.parametrize("players", [5, 8])
@pytest.mark.filterwarnings("ignore:Observation is not a NumPy array")  # action-mask dicts,
@pytest.mark.filterwarnings("ignore:Observation space for each agent")  # as in pettingzoo.classic
def test_api_test_and_seed_test_at_larger_tables(players):
    from pettingzoo.test import api_test, seed_test

    with pytest.warns(UserWarning, match="ignoring unknown reset option"):
        api_test(liars_env.env("perudo", num_players=players), num_cycles=300)
    seed_test(lambda: liars_env.env("perudo", num_players=players), num_cycles=300)


# --------------------------------------------------------------------------- rgb_array
def test_rgb_array_frames_of_a_whole_game_make_a_gif(tmp_path):
    from PIL import Image

    env = liars_env.env("perudo", num_players=2, render_mode="rgb_array")
    env.reset(seed=0)
    rng = np.random.default_rng(0)
    frames = [env.render()]
    for agent in env.agent_iter():
        obs, reward, terminated, truncated, info = env.last()
        if terminated or truncated:
            env.step(None)
            continue
        env.step(int(rng.choice(np.flatnonzero(obs["action_mask"]))))
        frames.append(env.render())
        if env.unwrapped.infos[agent]["round_over"]:  # the dice are shown
            assert not np.array_equal(frames[-1], frames[-2])
    assert all(f.shape == frames[0].shape and f.dtype == np.uint8 for f in frames)
    assert frames[0].ndim == 3 and frames[0].shape[2] == 3
    fps = env.metadata["render_fps"]
    images = [Image.fromarray(f) for f in frames]
    path = tmp_path / "game.gif"
    images[0].save(path, save_all=True, append_images=images[1:], duration=1000 // fps)
    with Image.open(path) as gif:
        assert gif.n_frames == len(frames) and gif.size == frames[0].shape[1::-1]


@pytest.mark.parametrize("players", [2, 3, 5])
@pytest.mark.filterwarnings("ignore:Observation is not a NumPy array")
@pytest.mark.filterwarnings("ignore:Observation space for each agent")
def test_api_test_and_seed_test_jokers(players):
    from pettingzoo.test import api_test, seed_test

    with pytest.warns(UserWarning, match="ignoring unknown reset option"):
        api_test(liars_env.env("jokers", num_players=players), num_cycles=300)
    seed_test(lambda: liars_env.env("jokers", num_players=players), num_cycles=300)
