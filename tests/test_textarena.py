"""TextArena interop: our game as a TextArena env, and TextArena's agents as our agents."""

from __future__ import annotations

import pytest

from liars_env.agents import make_agent
from liars_env.envs.textarena_env import LiarsDiceTextArena, register_textarena_envs
from liars_env.rules import PRESETS, RuleSet

ta = pytest.importorskip("textarena")
pytest.importorskip("openai")

from liars_env.play.bot_server import BotServer  # noqa: E402


def _play(env, agents, num_players, seed):
    env.reset(num_players=num_players, seed=seed)
    done, steps = False, 0
    while not done:
        player, observation = env.get_observation()
        done, info = env.step(agents[player](observation))
        steps += 1
    return env.close(), steps


def test_every_preset_registers_with_textarena_and_plays_with_its_agents(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-local-test")
    ids = register_textarena_envs()
    assert len(ids) == len(PRESETS) and all(i in ta.envs.registration.ENV_REGISTRY for i in ids)
    with BotServer(style="textarena") as server:
        agents = [ta.agents.OpenAIAgent(model_name="belief", base_url=server.base_url)] * 3
        for preset in ("perudo_calza", "sanford_wild", "common_hand_spot_on"):
            env = ta.make(f"LiarsDiceRules-{preset}-v0", dice_per_player=2)
            (rewards, info), steps = _play(env, agents, 3, seed=4)
            assert sorted(rewards.values()) == [-1.0, 0.0, 1.0]
            assert sum(i["winner"] for i in info.values()) == 1 and steps > 3
            assert all(i["invalid_moves"] == 0 for i in info.values())


def test_invalid_replies_are_re_asked_then_the_fallback_is_played():
    env = LiarsDiceTextArena("perudo", max_invalid=2, dice_per_player=1)
    env.reset(num_players=2, seed=0)
    player, observation = env.get_observation()
    assert "Legal moves:" in observation and "[Bid" not in observation
    done, info = env.step("[Call]")  # no bid to call yet
    assert not done and "no bid to call yet" in info["invalid_move"]
    assert env.get_observation()[0] == player
    assert "Your last reply could not be played" in env.get_observation()[1]
    done, info = env.step("nonsense")
    assert info["fallback"] == "1x2"  # the lowest legal opening bid
    assert env.get_observation()[0] != player
    _, game_info = env.close()
    assert game_info[player]["invalid_moves"] == 2 and game_info[player]["fallbacks"] == 1


def test_a_textarena_agent_is_one_of_our_agent_specs(monkeypatch):
    import numpy as np

    from liars_env import LiarsDiceGame, ObservationLayout
    from liars_env.observation import view_of

    monkeypatch.setenv("LIARS_TA_KEY", "sk-local-secret-42")
    rules = RuleSet.preset("perudo", num_players=2, dice_per_player=2)
    with BotServer(api_key="sk-local-secret-42") as server:
        spec = (
            f"textarena:OpenAIAgent?model_name=cautious&base_url={server.base_url}"
            "&api_key_env=LIARS_TA_KEY"
        )
        agent = make_agent(spec, rules)
        reference = make_agent("cautious", rules, seed=0)
        game, layout = LiarsDiceGame(rules), ObservationLayout(rules)
        rng = np.random.default_rng(1)
        state = game.new_game(rng)
        while not state.is_over:
            view = view_of(game, layout, state)
            action = agent.act(view)
            assert action == reference.act(view)
            game.apply(state, action, rng)
    records = agent.take_transcript()
    assert records and all("move" in r for r in records)
    assert "sk-local-secret" not in str(records) and agent.usage["fallbacks"] == 0


@pytest.mark.parametrize(
    "spec, message",
    [
        ("textarena:NoSuchAgent", "has no agent class 'NoSuchAgent'"),
        ("textarena:OpenAIAgent?api_key=sk-x", "an API key never goes in a spec"),
        ("textarena:OpenAIAgent?model_name=m&api_key_env=LIARS_UNSET_VAR", "must name a set"),
        ("textarena:", "expected 'textarena:CLASS?key=value&...'"),
    ],
)
def test_bad_textarena_specs_are_clear_errors(spec, message, monkeypatch):
    monkeypatch.delenv("LIARS_UNSET_VAR", raising=False)
    with pytest.raises(ValueError, match="textarena spec") as info:
        make_agent(spec, RuleSet.preset("perudo"))
    assert message in str(info.value)


def test_jokers_plays_in_textarena_and_its_fallback_opens_on_one_1(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-local-test")
    register_textarena_envs()
    env = LiarsDiceTextArena("jokers", max_invalid=1, dice_per_player=1)
    env.reset(num_players=2, seed=0)
    _, observation = env.get_observation()
    assert "1s are jokers" in observation and "Legal moves: bids 1x1 to 2x1" in observation
    done, info = env.step("nonsense")
    assert info["fallback"] == "1x1"  # the lowest legal opening bid: one 1
    with BotServer(style="textarena") as server:
        agents = [ta.agents.OpenAIAgent(model_name="belief", base_url=server.base_url)] * 2
        env = ta.make("LiarsDiceRules-jokers-v0", dice_per_player=2)
        (rewards, info), steps = _play(env, agents, 2, seed=4)
        assert sorted(rewards.values()) == [-1.0, 1.0] and steps > 2
        assert all(i["invalid_moves"] == 0 for i in info.values())
