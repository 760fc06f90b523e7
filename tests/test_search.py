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
        "search:belief?belief=bogus": "belief must be one of .*'robust', 'mixed'",
        "search:belief?belief=mixed,types=bayes+sly": r"types must be presets .*'bayes\+sly'",
        "search:belief?types=": "types must be presets",
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


def test_choice_rule_follows_the_belief_unless_set():
    base = random_network_agent(SMALL)

    def choice(**settings):
        return SearchAgent(base, SMALL, SearchSettings(**settings), "checkpoint:x").choice

    assert choice(belief="mixed") == (0.5, 0.02)
    assert choice(belief="policy") == choice(belief="robust") == (1.0, 0.1)
    assert choice(belief="mixed", prior=1.0) == (1.0, 0.02)
    assert choice(belief="policy", temperature=0.3) == (1.0, 0.3)
    assert parse_search_spec("search:belief?prior=0")[1].prior == 0.0


def test_bad_spec_fails_before_any_game():
    from liars_train.evaluation.tournament import main

    assert main(["--agents", "search:belief?rollout=2", "belief", "--games", "3"]) == 2


# ---------------------------------------------------------------------------- belief
def exact_posterior(rules, agent, state, seat, floor, normalise=True):
    """P(opponent ``seat``'s hand | its bids), enumerating its ordered dice (scalar views);
    with ``normalise=False``, P(hand and its bids) (the prior times the likelihood)."""
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
        weights[key] = weights.get(key, 0.0) + w / rules.faces**n
    total = sum(weights.values()) if normalise else 1.0
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


def test_mixed_belief_weights_match_exact_enumeration():
    # the joint posterior over (who the opponent is, its hand): the prior (half on the
    # base, the rest shared by the bots) times each player's probability of the bids,
    # from the scalar bots' exact action_probabilities and the base's
    floor = 0.1
    base = random_network_agent(SMALL)
    types = ["probabilistic", "bold", "bayes"]
    settings = SearchSettings(floor=floor, belief="mixed", types="+".join(types))
    search = SearchAgent(base, SMALL, settings, base_spec="checkpoint:x")
    _, _, state, view = position(SMALL, bids=5, seed=1)
    players = [base] + [make_agent(name, SMALL) for name in types]
    prior = [0.5] + [0.5 / len(types)] * len(types)
    joint = search.typed_posteriors([view])[0]
    marginal = search.hand_posteriors([view])[0]
    for seat, (hands, probs) in joint.items():
        assert probs.shape == (1 + len(types), len(hands))
        exact = np.array(
            [
                [w * p for w in exact_posterior(SMALL, who, state, seat, floor, False).values()]
                for who, p in zip(players, prior, strict=True)
            ]
        )
        order = list(exact_posterior(SMALL, base, state, seat, floor))
        assert order == [tuple(h) for h in hands.tolist()]
        np.testing.assert_allclose(probs, exact / exact.sum(), rtol=1e-6, atol=1e-12)
        np.testing.assert_allclose(marginal[seat][1], probs.sum(0), rtol=1e-12)
        assert probs.sum(1).max() > 2 * probs.sum(1).min()  # the bids told the players apart


def test_bid_likelihoods_are_worked_out_once_per_position():
    base = random_network_agent(SMALL)
    settings = SearchSettings(belief="mixed", types="bayes+cautious")
    search = SearchAgent(base, SMALL, settings, base_spec="checkpoint:x")
    fresh = SearchAgent(base, SMALL, settings, base_spec="checkpoint:x")
    views = [position(SMALL, bids=b, seed=4)[3] for b in (3, 5)]  # one round, two moments
    asked = []
    compute = search._bot_bid_likelihoods
    search._bot_bid_likelihoods = lambda positions: (
        asked.append(len(positions)) or compute(positions)
    )
    first = search.typed_posteriors(views[:1])[0]
    later = search.typed_posteriors(views[1:])[0]
    again = search.typed_posteriors(views[:1])[0]
    # after 3 bids seat 0 reads seats 1 and 2's bids (positions 1, 2); after 5, seat 2
    # reads those of seats 0 and 1 (positions 0, 1, 3, 4), of which position 1 was seen
    assert asked == [2, 3]
    for got, view in ((first, views[0]), (later, views[1]), (again, views[0])):
        want = fresh.typed_posteriors([view])[0]
        for seat in want:
            np.testing.assert_array_equal(got[seat][1], want[seat][1])


def test_mixed_belief_tells_the_base_from_a_bot_by_their_bids():
    # a round bid by a bot reads as the bot's; one bid by the base as the base's
    rules = RuleSet.preset("perudo", num_players=2, dice_per_player=3)
    base = random_network_agent(rules, seed=3)
    search = SearchAgent(
        base, rules, SearchSettings(belief="mixed", types="cautious"), base_spec="checkpoint:x"
    )
    game, layout = LiarsDiceGame(rules), ObservationLayout(rules)
    p_base: dict[bool, list[float]] = {False: [], True: []}
    for bidder, by_base in ((make_agent("cautious", rules), False), (base, True)):
        for seed in range(6):
            rng = np.random.default_rng(seed)
            state = game.new_game(rng, first_player=1)
            while len(state.bids) < 4:
                view = view_of(game, layout, state)
                if state.current_player == 1:
                    probs = np.asarray(bidder.action_probabilities(view), dtype=np.float64)
                    probs[game.codec.num_bids :] = 0  # the bids of a round: no calls
                    if probs.sum() == 0:
                        break  # it would call: the round's bids so far
                    action = int(rng.choice(len(probs), p=probs / probs.sum()))
                else:
                    action = int(np.flatnonzero(view.mask[: game.codec.num_bids])[0])
                game.apply(state, action, rng)
            probs = search.typed_posteriors([view_of(game, layout, state, 0)])[0][1][1]
            p_base[by_base].append(probs[0].sum())
    # even odds before the bids; the base's own rounds read as the base's beyond doubt,
    # the bot's mostly as the bot's (one or two bids of a deterministic bot, whose
    # bids a random network's near-uniform policy also explains in part)
    assert min(p_base[True]) > 0.9 and np.median(p_base[False]) < 0.4, p_base
    assert max(p_base[False]) < min(p_base[True]), p_base


def test_mixed_belief_draws_who_plays_each_seat_with_its_hand():
    rules = RuleSet.preset("perudo", num_players=2, dice_per_player=1)
    game, layout = LiarsDiceGame(rules), ObservationLayout(rules)
    state = game.new_game(np.random.default_rng(0), first_player=1)
    game.apply(state, game.codec.encode_bid(1, 5), np.random.default_rng(0))
    view = view_of(game, layout, state)
    search = make_agent("search:probabilistic?samples=8,belief=mixed,types=bold+cautious", rules)
    hands = np.arange(1, 7)[:, None]
    joint = np.zeros((3, 6))
    joint[2, 3] = 1.0  # seat 1 is cautious and holds a 4
    search.typed_posteriors = lambda views: [{1: (hands, joint)} for _ in views]
    deals, players = search._deals([view], 8, torch.Generator().manual_seed(0), "mixed")
    assert (deals[0, :, 1, 0] == 4).all() and (players[0, :, 1] == 2).all()
    assert (players[0, :, 0] == 0).all()  # the searcher's own seat: the base
    # the rollouts ask the drawn player for seat 1's moves, the base for seat 0's
    asked = []
    make = search._type_bot
    search._type_bot = lambda env, k: asked.append(k) or make(env, k)
    search.search([view])
    assert asked and set(asked) == {2}


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
