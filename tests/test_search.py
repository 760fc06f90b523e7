"""Search at play time: settings, the belief sampler, determinism, and what search buys."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import torch

from liars_env import LiarsDiceGame, ObservationLayout, RuleSet
from liars_env.agents import make_agent, view_of
from liars_env.agents.belief import BeliefModel
from liars_env.agents.checkpoint import CheckpointAgent
from liars_env.agents.policy import NetworkShape, PolicyNet
from liars_env.agents.search import SearchAgent, SearchSettings, parse_search_spec

SMALL = RuleSet.preset("perudo", num_players=3, dice_per_player=2)


class ActOnly:
    """An agent without action probabilities (the search cannot use it as a base)."""

    name = "act-only"

    def reset(self, seed=None):
        pass

    def act(self, view):
        return int(view.legal_actions[0])


def random_network_agent(rules: RuleSet, seed: int = 0) -> CheckpointAgent:
    """A checkpoint agent of a randomly initialised network (a stochastic policy)."""
    torch.manual_seed(seed)
    layout = ObservationLayout(rules)
    shape = NetworkShape(layout.size, LiarsDiceGame(rules).codec.num_actions, hidden_size=32)
    net = PolicyNet(shape, rules)
    torch.nn.init.normal_(net.policy_head.weight, std=0.5)  # far from uniform
    net.eval()
    return CheckpointAgent(net, {}, name="checkpoint:random-net")


def position(rules: RuleSet, bids: int, seed: int = 0):
    """A game after ``bids`` random bids (no calls), and its view."""
    game, layout = LiarsDiceGame(rules), ObservationLayout(rules)
    rng = np.random.default_rng(seed)
    state = game.new_game(rng, first_player=0)
    for _ in range(bids):
        legal = [a for a in game.legal_actions(state) if a < game.codec.num_bids]
        game.apply(state, int(legal[int(rng.integers(min(4, len(legal))))]), rng)
    return game, layout, state, view_of(game, layout, state)


# ---------------------------------------------------------------------------- settings
def test_spec_settings_and_errors():
    base, settings = parse_search_spec("search:checkpoint:a/b?samples=8,depth=game,seed=3")
    assert base == "checkpoint:a/b"
    assert (settings.samples, settings.depth, settings.seed) == (8, "game", 3)
    assert parse_search_spec("search:belief:bluff_rate=0.1")[0] == "belief:bluff_rate=0.1"
    bad = {
        "search:belief?smaples=8": "unknown setting 'smaples'",
        "search:belief?samples=0": "samples must be a positive int",
        "search:belief?candidates=-1": "candidates must be a positive int",
        "search:belief?samples=2.5": "samples must be int",
        "search:belief?temperature=0": "temperature must be a positive number",
        "search:belief?depth=deep": "depth must be one of",
        "search:belief?belief=bogus": "belief must be one of .*'robust'",
        "search:belief?samples=8,budget=100": "samples or budget",
        "search:": "names no base agent",
    }
    for spec, words in bad.items():
        with pytest.raises(ValueError, match=words):
            make_agent(spec, SMALL)
    with pytest.raises(ValueError, match="has no action_probabilities"):
        make_agent("search:test_search:ActOnly", SMALL)
    with pytest.raises(ValueError, match="search over a search"):
        make_agent("search:search:belief", SMALL)
    with pytest.raises(ValueError, match="unknown agent spec"):
        make_agent("search:nobody", SMALL)


def test_bad_spec_fails_before_any_game():
    from liars_train.evaluation.tournament import main

    assert main(["--agents", "search:belief?rollout=2", "belief", "--games", "3"]) == 2


# ---------------------------------------------------------------------------- belief
def exact_posterior(rules, agent, state, seat, floor):
    """P(opponent ``seat``'s hand | its bids), enumerating its ordered dice (scalar views)."""
    game, layout = LiarsDiceGame(rules), ObservationLayout(rules)
    n = state.dice_left[seat]
    made = [t for t, b in enumerate(state.bids) if b[0] == seat]
    weights: dict[tuple[int, ...], float] = {}
    for dice in itertools.product(range(1, rules.faces + 1), repeat=n):
        w = 1.0
        for t in made:
            then = LiarsDiceGame(rules).new_game(
                np.random.default_rng(0),
                dice=[list(dice) if s == seat else [1] * state.dice_left[s] for s in range(3)],
                first_player=state.opener,
            )
            for action in state.actions[:t]:
                game.apply(then, action, np.random.default_rng(0))
            view = view_of(game, layout, then)
            probs = np.asarray(agent.action_probabilities(view), dtype=np.float64)
            p = probs[state.actions[t]]
            w *= (1 - floor) * p + floor / (view.mask > 0).sum()
        key = tuple(sorted(dice))
        weights[key] = weights.get(key, 0.0) + w
    total = sum(weights.values())
    return {k: v / total for k, v in weights.items()}


@pytest.mark.parametrize("floor", [0.0, 0.2])
def test_policy_belief_weights_match_exact_enumeration(floor):
    base = random_network_agent(SMALL)
    search = SearchAgent(
        base, SMALL, SearchSettings(floor=floor, belief="policy"), base_spec="checkpoint:x"
    )
    _, _, state, view = position(SMALL, bids=5, seed=1)
    posteriors = search.hand_posteriors([view])[0]
    assert set(posteriors) == {s for s in range(3) if s != view.seat}
    for seat, (hands, probs) in posteriors.items():
        exact = exact_posterior(SMALL, base, state, seat, floor)
        got = {tuple(h): p for h, p in zip(hands.tolist(), probs, strict=True)}
        assert got.keys() == exact.keys()
        for hand, p in exact.items():
            assert got[hand] == pytest.approx(p, rel=1e-6, abs=1e-12)
        assert max(exact.values()) > 2 * min(exact.values())  # the bids did say something


def test_model_belief_agrees_with_the_belief_model():
    search = make_agent("search:belief", SMALL)
    _, _, _, view = position(SMALL, bids=5, seed=2)
    posteriors = search.hand_posteriors([view])[0]
    out = BeliefModel(SMALL, dtype=torch.float64)(torch.from_numpy(view.observation)[None])
    for seat, (hands, probs) in posteriors.items():
        rel = (seat - view.seat) % 3 - 1
        for face in range(1, 7):
            matches = (hands == face).sum(1) + (hands == 1).sum(1) * (face != 1)
            mean = float((probs * matches).sum()) / SMALL.dice_per_player
            assert mean == pytest.approx(float(out.mean_matches[0, rel, face - 1]), abs=1e-9)


# ---------------------------------------------------------------------------- playing
def test_same_seed_same_moves():
    spec = "search:probabilistic?samples=8,candidates=2"
    _, _, _, view = position(SMALL, bids=3, seed=3)
    a, b = make_agent(spec, SMALL, seed=1), make_agent(spec, SMALL, seed=1)
    np.testing.assert_array_equal(a.action_probabilities(view), b.action_probabilities(view))
    assert [a.act(view) for _ in range(5)] == [b.act(view) for _ in range(5)]
    probs = a.action_probabilities(view)
    assert probs.sum() == pytest.approx(1.0) and (probs[view.mask == 0] == 0).all()
    other = make_agent(spec + ",seed=9", SMALL).search([view])[0]
    assert not np.array_equal(other.values, a.search([view])[0].values)


def test_search_plays_wherever_a_spec_goes():
    from liars_env.envs.gym_env import LiarsDiceEnv
    from liars_train.league import member_from_spec, play_match

    env = LiarsDiceEnv(SMALL, opponents="search:random?samples=4,candidates=2")
    _, info = env.reset(seed=0)
    for _ in range(3):
        _, _, done, _, info = env.step(int(np.flatnonzero(info["action_mask"])[0]))
        if done:
            break
    member = member_from_spec("search:random?samples=4,candidates=2", SMALL, "cpu")
    result = play_match(member, member_from_spec("random", SMALL, "cpu"), SMALL, 6, seed=0)
    assert result["games"] >= 6
    scalar = make_agent("search:liars_env.agents.base:RandomAgent?samples=4", SMALL)
    _, _, _, view = position(SMALL, bids=2)
    assert view.mask[scalar.act(view)]


def play(rules, agents, games, seed):
    """Games between ``agents`` (seats rotated); returns each agent's wins."""
    game, layout = LiarsDiceGame(rules), ObservationLayout(rules)
    wins = [0] * len(agents)
    for g in range(games):
        rng = np.random.default_rng([seed, g])
        state = game.new_game(rng)
        order = [(g + k) % len(agents) for k in range(len(agents))]  # agent per seat
        for agent in agents:
            agent.reset(seed * 1000 + g)
            if getattr(agent, "oracle", None) is not None:
                agent.oracle = lambda view, state=state: state.dice
        while not state.is_over:
            agent = agents[order[state.current_player]]
            game.apply(state, agent.act(view_of(game, layout, state)), rng)
        wins[order[state.winner]] += 1
    return wins


def test_search_that_sees_the_hands_wins_more():
    rules = RuleSet.preset("perudo", num_players=2, dice_per_player=2)
    spec = "search:probabilistic?samples=16,candidates=3"
    seer, sampler = make_agent(spec, rules, seed=0), make_agent(spec, rules, seed=1)
    seer.oracle = lambda view: None  # replaced by the true dice in every game
    wins = play(rules, [seer, sampler], 60, seed=0)
    assert wins[0] > wins[1] + 10, wins


def test_robust_belief_values_each_move_by_the_worse_of_the_two_models():
    # Seat 1 bid "one 5" on 1 die of 6 faces; seat 0 holds a 2. Under the policy model
    # seat 1 holds a 3 (the bid is false, calling wins the game), under the belief model
    # a 5 (calling loses it): the robust search values the call at the worse, -1.
    rules = RuleSet.preset("perudo", num_players=2, dice_per_player=1)
    game, layout = LiarsDiceGame(rules), ObservationLayout(rules)
    state = game.new_game(np.random.default_rng(0), first_player=1)
    state.dice = [[2], [4]]
    game.apply(state, game.codec.encode_bid(1, 5), np.random.default_rng(0))
    view = view_of(game, layout, state)
    held = {"policy": 3, "model": 5}
    values = {}
    for belief in ("policy", "model", "robust"):
        search = make_agent(f"search:probabilistic?samples=4,belief={belief}", rules)
        search.hand_posteriors = lambda views, model=None, b=belief: [
            {1: (np.array([[held[model or b]]]), np.array([1.0]))} for _ in views
        ]
        result = search.search([view])[0]
        values[belief] = float(result.values[list(result.candidates).index(game.codec.challenge)])
    assert values == {"policy": 1.0, "model": -1.0, "robust": -1.0}


@pytest.mark.parametrize("belief", ["model", "robust"])
def test_budget_is_the_playouts_per_decision_under_either_belief(belief):
    search = make_agent(f"search:probabilistic?budget=120,belief={belief}", SMALL)
    width = 4 + 1  # the base's four most likely bids and the challenge
    models = 2 if belief == "robust" else 1
    assert search._samples() == 120 // (width * models)
    assert 120 - width * models < search._playouts_per_view() <= 120
