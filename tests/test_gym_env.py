"""The single-agent Gymnasium env ``LiarsDice-v0`` (liars_env.envs.gym_env)."""

from __future__ import annotations

import pickle
import subprocess
import sys
import warnings
from pathlib import Path

import gymnasium
import numpy as np
import pytest
from gymnasium.error import ResetNeeded
from gymnasium.utils.env_checker import check_env
from helpers import preset_grid

from liars_env import IllegalActionError, RuleSet
from liars_env.envs.gym_env import ENV_ID, LiarsDiceEnv
from liars_env.rules import loser_reward

ROOT = Path(__file__).resolve().parents[1]
CHECKPOINT = f"checkpoint:{ROOT / 'checkpoints' / 'perudo_3p'}"


def make(**kwargs) -> gymnasium.Env:
    return gymnasium.make(ENV_ID, **kwargs)


def first_legal(info: dict) -> int:
    return int(np.flatnonzero(info["action_mask"])[0])


def play_episode(env, seed, pick=None):
    """Plays one episode with ``pick(info, rng)`` (default: uniform legal); returns a trace."""
    rng = np.random.default_rng(seed)
    pick = pick or (lambda info, r: int(r.choice(np.flatnonzero(info["action_mask"]))))
    obs, info = env.reset(seed=seed)
    trace = [(obs, info)]
    terminated = False
    while not terminated:
        assert not info["illegal_action"] and info["place"] == 0
        np.testing.assert_array_equal(env.unwrapped.action_masks(), info["action_mask"] > 0)
        obs, reward, terminated, truncated, info = env.step(pick(info, rng))
        assert not truncated
        trace.append((obs, reward, terminated, info))
    return trace


def assert_same(a, b):
    if isinstance(a, dict):
        assert a.keys() == b.keys()
        for key in a:
            assert_same(a[key], b[key])
    elif isinstance(a, (tuple, list)):
        assert len(a) == len(b)
        for x, y in zip(a, b, strict=True):
            assert_same(x, y)
    elif isinstance(a, np.ndarray):
        np.testing.assert_array_equal(a, b)
    else:
        assert a == b


# ------------------------------------------------------------------ checkers
def test_gymnasium_check_env_with_bots_and_a_checkpoint():
    env = make(rules="perudo", num_players=3, opponents=["bayes", CHECKPOINT])
    assert isinstance(env.unwrapped.opponents[1].name, str)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        check_env(env.unwrapped)
        check_env(make(render_mode="ansi").unwrapped)


def test_sb3_check_env():
    sb3_checker = pytest.importorskip("stable_baselines3.common.env_checker")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        sb3_checker.check_env(make(rules="perudo_calza", num_players=4).unwrapped)
        sb3_checker.check_env(make(num_players=2, opponents="random"))


def test_spaces_and_info_keys():
    env = make(rules="sanford", num_players=4, dice_per_player=2, seat=2)
    unwrapped = env.unwrapped
    assert env.observation_space == gymnasium.spaces.Box(0, 1, (unwrapped.layout.size,), np.float32)
    assert env.action_space == gymnasium.spaces.Discrete(unwrapped.codec.num_actions)
    obs, info = env.reset(seed=0)
    assert obs.dtype == np.float32 and obs in env.observation_space
    assert set(info) == {"action_mask", "seat", "dice_left", "round", "place", "illegal_action"}
    assert info["action_mask"].dtype == np.int8 and info["action_mask"].shape == (4 * 2 * 6 + 1,)
    assert info["dice_left"].tolist() == [2, 2, 2, 2] and info["seat"] == 2
    assert unwrapped.game_state.current_player == 2
    np.testing.assert_array_equal(obs, unwrapped.layout.encode(unwrapped.game_state, 2))


def test_gymnasium_make_with_module_prefix():
    env = gymnasium.make("liars_env:LiarsDice-v0", num_players=2)
    assert isinstance(env.unwrapped, LiarsDiceEnv)


def test_importing_liars_env_registers_the_id():
    code = "import gymnasium, liars_env; gymnasium.make('LiarsDice-v0', num_players=2).reset()"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr


# ------------------------------------------------------------------ seeding
def test_same_seed_and_actions_replay_the_same_episode():
    def run(seed):
        env = make(num_players=4, opponents=["random", "bold", "probabilistic"])
        return [play_episode(env, seed + k) for k in range(3)]

    first = run(11)
    assert_same(first, run(11))
    assert sum(len(t) for t in first) > 6
    seats = {t[0][1]["seat"] for t in first + run(20) + run(30)}
    assert len(seats) > 1  # seat=None draws the learner's seat


def test_seeding_covers_checkpoint_opponents():
    env = make(num_players=3, opponents=[CHECKPOINT, CHECKPOINT], seat=1)
    assert_same(play_episode(env, 5), play_episode(env, 5))


def test_different_seeds_differ():
    env = make(num_players=3, opponents="random")
    obs = [env.reset(seed=s)[0] for s in range(5)]
    assert len({o.tobytes() for o in obs}) > 1


# ------------------------------------------------------------------ episodes
@pytest.mark.parametrize("name, players", preset_grid(players=(2, 3, 5)))
def test_full_episodes_rewards_and_termination(name, players):
    env = make(rules=name, num_players=players, opponents="random")
    lose = loser_reward(players)
    outcomes = set()
    for seed in range(4):
        trace = play_episode(env, seed)
        rewards = [step[1] for step in trace[1:]]
        assert all(r == 0.0 for r in rewards[:-1])
        obs, reward, terminated, info = trace[-1]
        state, seat = env.unwrapped.game_state, info["seat"]
        assert obs in env.observation_space
        assert not info["action_mask"].any() and not env.unwrapped.action_masks().any()
        if state.winner == seat:
            assert reward == 1.0 and info["place"] == 1
            outcomes.add("won")
        else:
            assert state.dice_left[seat] == 0 and reward == lose
            assert info["place"] == len(state.active_seats) + 1 > 1
            outcomes.add("out")
            if state.winner is None:
                outcomes.add("out while the game goes on")
        assert info["dice_left"].tolist() == state.dice_left
        with pytest.raises(ResetNeeded):
            env.step(0)
    assert outcomes & {"won", "out"}


def test_learner_wins_and_loses_against_random():
    env = make(num_players=3, dice_per_player=2, opponents="random")
    rewards = {play_episode(env, seed)[-1][1] for seed in range(40)}
    assert rewards == {1.0, -0.5}


def test_elimination_by_an_opponents_call_ends_the_episode():
    # one die each, spot-on: an opponent's right exact call takes the learner's last die
    class SpotOn:
        name = "spot-on"

        def reset(self, seed=None):
            pass

        def act(self, view):
            exact = view.codec.exact
            return exact if view.mask[exact] else int(view.legal_actions[0])

    rules = RuleSet(num_players=3, dice_per_player=1, exact_call="spot_on", ones="natural")
    env = LiarsDiceEnv(rules, opponents=SpotOn(), seat=0)
    seen = set()
    for seed in range(60):
        obs, info = env.reset(seed=seed)
        state = env.unwrapped.game_state
        assert state.current_player == 0 and state.dice_left[0] == 1  # never decided early
        obs, reward, terminated, _, info = env.step(first_legal(info))
        if terminated and reward < 0:
            assert env.last_result is not None and 0 in env.last_result.losers
            seen.add(env.last_result.caller)
    assert seen & {1, 2}  # eliminated by an opponent's call, during the opponents' play


def test_agent_objects_and_one_spec_for_all():
    from liars_env.agents import RandomAgent

    bot = RandomAgent()
    env = LiarsDiceEnv("perudo", num_players=4, opponents=bot)
    assert env.opponents == [bot, bot, bot]
    env = LiarsDiceEnv("perudo", num_players=3, opponents=["bayes", RandomAgent()])
    assert [type(a).__name__ for a in env.opponents] == ["BayesianAgent", "RandomAgent"]
    play_episode(env, 0)
    assert [a.name for a in LiarsDiceEnv(num_players=3).opponents] == ["probabilistic"] * 2


# ------------------------------------------------------------------ illegal actions
def test_illegal_action_raises_and_changes_nothing():
    env = make(num_players=3, opponents="random", illegal_action="raise")
    obs, info = env.reset(seed=4)
    env.step(first_legal(info))  # now there is a bid to beat (unless a new round began)
    obs, info = env.reset(seed=4)
    state = env.unwrapped.game_state
    before = state.to_dict()
    illegal = int(np.flatnonzero(info["action_mask"] == 0)[0])
    with pytest.raises(IllegalActionError, match=f"action {illegal}") as error:
        env.step(illegal)
    assert isinstance(error.value, ValueError)
    assert env.unwrapped.game_state.to_dict() == before
    np.testing.assert_array_equal(env.unwrapped.action_masks(), info["action_mask"] > 0)
    env.step(first_legal(info))  # the learner acts again
    assert env.unwrapped.game_state.to_dict() != before


@pytest.mark.parametrize("mode", ["raise", "penalize"])
@pytest.mark.parametrize("action", [-1, 10_000, 1.5, "3", True, np.array([1, 2])])
def test_actions_outside_the_space_always_raise(mode, action):
    env = LiarsDiceEnv(num_players=2, illegal_action=mode)
    env.reset(seed=0)
    with pytest.raises(IllegalActionError):
        env.step(action)


def test_penalize_ends_the_episode_with_minus_one():
    env = make(num_players=3, opponents="random")  # penalize is the default
    obs, info = env.reset(seed=4)
    illegal = int(np.flatnonzero(info["action_mask"] == 0)[0])
    obs, reward, terminated, truncated, info = env.step(illegal)
    assert (reward, terminated, truncated, info["illegal_action"]) == (-1.0, True, False, True)
    assert not info["action_mask"].any()
    assert env.reset(seed=4)[1]["illegal_action"] is False


def test_numpy_actions_are_accepted():
    env = LiarsDiceEnv(num_players=2, seat=0, illegal_action="raise")
    _, info = env.reset(seed=0)
    env.step(np.array([first_legal(info)]))
    _, info = env.reset(seed=0)
    env.step(np.int64(first_legal(info)))


# ------------------------------------------------------------------ bad arguments
@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"opponents": ["bayes", "nobot"]}, "unknown agent spec 'nobot'"),
        ({"opponents": ["bayes"]}, "opponents must hold 2 agents for 3 players.*got 1"),
        ({"opponents": 3}, "opponents must be an agent spec, an agent, or a list of 2"),
        ({"opponents": ["bayes", object()]}, "each opponent must be an agent spec"),
        ({"seat": 3}, "seat must be None \\(random\\) or a seat 0–2, got 3"),
        ({"seat": -1}, "got -1"),
        ({"seat": True}, "got True"),
        ({"illegal_action": "ignore"}, "illegal_action must be 'penalize' or 'raise'"),
        ({"render_mode": "human"}, "render_mode must be None, 'ansi' or 'rgb_array', got 'human'"),
        ({"rules": "perudoo"}, "unknown preset 'perudoo'"),
        ({"colour": "red"}, "unknown rule option 'colour'"),
        ({"opponents": "checkpoint:/no/such/folder"}, "/no/such/folder"),
    ],
)
def test_bad_arguments(kwargs, message):
    with pytest.raises(ValueError, match=message):
        LiarsDiceEnv(**kwargs)


def test_checkpoint_for_other_rules_is_refused():
    with pytest.raises(ValueError):
        LiarsDiceEnv("perudo", num_players=4, opponents=CHECKPOINT)


def test_step_before_reset():
    with pytest.raises(ResetNeeded):
        LiarsDiceEnv().step(0)


# ------------------------------------------------------------------ render, pickling
def test_render_ansi():
    env = make(num_players=2, render_mode="ansi", seat=1, opponents="random")
    _, info = env.reset(seed=0)
    text = env.render()
    assert "you" in text and "player_0" in text and "Round 1" in text
    with pytest.warns(UserWarning, match="without a render_mode"):
        assert LiarsDiceEnv().render() is None


def test_render_rgb_array_draws_the_table():
    env = make(num_players=3, render_mode="rgb_array", seat=0, opponents="random")
    env.reset(seed=0)
    frame = env.render()
    assert frame.shape == (480, 640, 3) and frame.dtype == np.uint8
    assert len(np.unique(frame.reshape(-1, 3), axis=0)) > 5  # a drawing, not a blank
    bids_before = len(env.unwrapped.game_state.bids)
    env.step(int(np.flatnonzero(env.unwrapped.action_masks())[0]))  # the lowest bid
    assert len(env.unwrapped.game_state.bids) != bids_before
    assert not np.array_equal(frame, env.render())  # the new bids are on the table


def test_pickle_round_trip():
    env = LiarsDiceEnv("sanford", num_players=4, opponents="bold", seat=2)
    copy = pickle.loads(pickle.dumps(env))
    assert copy.rules == env.rules and copy.fixed_seat == 2
    assert_same(play_episode(copy, 3), play_episode(env, 3))


# ------------------------------------------------------------------ vector envs, SB3
def _factory():
    return gymnasium.make(ENV_ID, num_players=3, opponents="random")


def test_gymnasium_async_vector_env():
    venv = gymnasium.vector.AsyncVectorEnv([_factory] * 2)
    try:
        obs, info = venv.reset(seed=0)
        assert obs.shape == (2, 376) and info["action_mask"].shape == (2, 91)
        for _ in range(30):
            # a finished env shows an all-zero mask; its next action is ignored (autoreset)
            actions = np.array(
                [np.flatnonzero(m)[-1] if m.any() else 0 for m in info["action_mask"]]
            )
            obs, reward, terminated, truncated, info = venv.step(actions)
            assert info["dice_left"].shape == (2, 3)
        assert (venv.call("action_masks")[0] == (info["action_mask"][0] > 0)).all()
    finally:
        venv.close()


def test_sb3_subproc_vec_env():
    vec_env = pytest.importorskip("stable_baselines3.common.vec_env")
    venv = vec_env.SubprocVecEnv([_factory] * 2)  # default start method: pickled factories
    try:
        venv.seed(0)
        venv.reset()
        for _ in range(30):
            masks = np.stack(venv.env_method("action_masks"))
            _, _, _, infos = venv.step(np.array([int(np.flatnonzero(m)[0]) for m in masks]))
            assert infos[0]["action_mask"].shape == (91,)
    finally:
        venv.close()


def test_maskable_ppo_trains_and_plays_only_legal_moves():
    sb3_contrib = pytest.importorskip("sb3_contrib")
    torch = pytest.importorskip("torch")
    from sb3_contrib.common.maskable.evaluation import evaluate_policy
    from stable_baselines3.common.monitor import Monitor

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        env = Monitor(make(num_players=3, opponents="random"))
        model = sb3_contrib.MaskablePPO(
            "MlpPolicy", env, n_steps=512, batch_size=256, n_epochs=1, seed=0, device="cpu"
        )
        model.learn(2048)  # finds env.action_masks() through the wrappers by itself
        assert model.num_timesteps >= 2048
        returns, _ = evaluate_policy(
            model, env, n_eval_episodes=10, use_masking=True, return_episode_rewards=True
        )
        # a win (+1) or an elimination (-1/2); an illegal move would end an episode at -1
        assert len(returns) == 10 and set(returns) <= {1.0, -0.5}
        obs, info = env.reset(seed=0)
        for _ in range(5):
            masks = env.get_wrapper_attr("action_masks")()
            action, _ = model.predict(obs, action_masks=masks, deterministic=True)
            assert info["action_mask"][int(action)] == 1
            obs, _, terminated, _, info = env.step(action)
            if terminated:
                obs, info = env.reset()
    finally:
        torch.set_num_threads(threads)
