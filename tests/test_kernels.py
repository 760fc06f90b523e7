"""liars_env.batched.kernels, each kernel against its scalar twin, every preset and palifico state.

The scalar rules of :mod:`liars_env.rules` and :class:`~liars_env.engine.LiarsDiceGame` are
the reference; every kernel of :mod:`liars_env.batched.kernels` must give exactly their answer,
for every preset, in ordinary and palifico rounds. Batches are drawn at random (numpy) and
by hypothesis (single scenarios, which shrink to a readable counterexample).
"""

from __future__ import annotations

import ast
import inspect
import sys
from types import SimpleNamespace

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from liars_env import LiarsDiceGame
from liars_env.actions import ActionCodec
from liars_env.batched import kernels as ar
from liars_env.probability import binomial_tail, count_pmf
from liars_env.rules import (
    PRESETS,
    bid_cap,
    count_matches,
    counts_as_match,
    fixed_first_opener,
    is_palifico_round,
    settle_call,
)

RULES = {
    **PRESETS,
    # the wild face moved to the highest face, under every way of playing it
    "perudo, wild 6s": PRESETS["perudo"].with_options(wild_face="highest"),
    "sanford_wild, wild 6s": PRESETS["sanford_wild"].with_options(wild_face="highest"),
    "common_hand_spot_on, wild 6s, one round": PRESETS["common_hand_spot_on"].with_options(
        num_players=2, wild_face="highest", single_round=True
    ),
    "openspiel_liars_dice 2x3": PRESETS["openspiel_liars_dice"].with_options(
        dice_per_player=2, faces=3
    ),
}
"""Every preset, and variants of the wild face and of one-round games."""
NAMES = sorted(RULES)
CASES = [(name, palifico) for name in NAMES for palifico in (False, True)]
"""Every preset and variant, in an ordinary and in a palifico round."""


def random_tables(rules, rng, games):
    """``games`` random tables: dice left per seat (two or more seats hold dice) and dice."""
    p, d = rules.num_players, rules.dice_per_player
    dice_left = rng.integers(0, d + 1, size=(games, p))
    for row in dice_left:
        while (row > 0).sum() < 2:
            row[rng.integers(p)] = rng.integers(1, d + 1)
    rolled = rng.integers(1, rules.faces + 1, size=(games, p, d))
    dice = np.where(np.arange(d) < dice_left[:, :, None], rolled, 0)
    return dice_left, dice


def hands(dice_row, dice_left_row):
    """The scalar engine's hands (lists of int faces) of one table."""
    return [[int(x) for x in dice_row[s][:n]] for s, n in enumerate(dice_left_row)]


# ----------------------------------------------------------------------- wild ones
@pytest.mark.parametrize("name, palifico", CASES)
def test_wild_faces_and_face_counts_follow_counts_as_match(name, palifico):
    rules = RULES[name]
    f = rules.faces
    w = rules.wild_die
    wild = ar.wild_faces(ar.round_wild(rules, torch.tensor([palifico])), f, wild_die=w)[0]
    for die in range(1, f + 1):
        for face in range(1, f + 1):
            kernel = die == face or (die == w and bool(wild[face - 1]))
            assert kernel == counts_as_match(rules, die, face, palifico=palifico), (die, face)

    rng = np.random.default_rng(len(name))
    dice = rng.integers(0, f + 1, size=(40, rules.dice_per_player))  # 0: a lost die
    counts = ar.face_counts(torch.tensor(dice), f)
    known = ar.known_matches(counts, wild.expand(40, f), wild_die=w)
    for i, hand in enumerate(dice.tolist()):
        held = [die for die in hand if die]
        assert counts[i].tolist() == [held.count(face) for face in range(1, f + 1)]
        assert known[i].tolist() == [
            sum(counts_as_match(rules, die, face, palifico=palifico) for die in held)
            for face in range(1, f + 1)
        ]


# ----------------------------------------------------------------------- counting
@pytest.mark.parametrize("name, palifico", CASES)
def test_count_matches_equals_the_scalar_count(name, palifico):
    rules = RULES[name]
    rng = np.random.default_rng(7)
    dice_left, dice = random_tables(rules, rng, 300)
    face = rng.integers(1, rules.faces + 1, size=300)
    pal = torch.full((300,), palifico)
    got = ar.count_matches(
        torch.tensor(dice), torch.tensor(face), ar.round_wild(rules, pal), wild_die=rules.wild_die
    )
    expected = [
        count_matches(rules, hands(dice[i], dice_left[i]), int(face[i]), palifico=palifico)
        for i in range(300)
    ]
    assert got.tolist() == expected
    if not rules.ones_wild:  # None is the shortcut for rules that never make a face wild
        got = ar.count_matches(torch.tensor(dice), torch.tensor(face), None, wild_die=1)
        assert got.tolist() == expected


# ----------------------------------------------------------------------- seats
@pytest.mark.parametrize("players", [2, 3, 5, 8])
def test_next_active_and_next_opener_follow_the_engine(players):
    rules = PRESETS["perudo"].with_options(num_players=players)
    game = LiarsDiceGame(rules)
    rng = np.random.default_rng(players)
    dice_left = rng.integers(0, 3, size=(400, players))
    dice_left[dice_left.sum(1) == 0, 0] = 1  # some seat holds dice
    seat = rng.integers(0, players, size=400)
    left = torch.tensor(dice_left)
    got_next = ar.next_active(left, torch.tensor(seat)).tolist()
    got_opener = ar.next_opener(left, torch.tensor(seat)).tolist()
    both = ar.first_holding(left, torch.tensor(np.stack([seat + 1, seat], 1))).tolist()
    for i in range(400):
        state = SimpleNamespace(dice_left=dice_left[i].tolist())  # all next_active reads
        expected = game.next_active(state, int(seat[i]))
        assert got_next[i] == expected
        opener = int(seat[i]) if dice_left[i, seat[i]] else expected
        assert got_opener[i] == opener
        assert both[i] == [expected, opener]


@pytest.mark.parametrize("name", NAMES)
def test_palifico_starts_and_bid_caps_equal_the_scalar_rules(name):
    for rules in (RULES[name], RULES[name].with_options(palifico=True, bid_cap=False)):
        p, d = rules.num_players, rules.dice_per_player
        rng = np.random.default_rng(3)
        dice_left = rng.integers(0, d + 1, size=(200, p))
        had = rng.random((200, p)) < 0.3
        opener = rng.integers(0, p, size=200)
        starts = ar.palifico_starts(
            rules, torch.tensor(dice_left), torch.tensor(had), torch.tensor(opener)
        ).tolist()
        caps = ar.bid_caps(rules, torch.tensor(dice_left), torch.tensor(opener)).tolist()
        for i, o in enumerate(opener.tolist()):
            assert starts[i] == is_palifico_round(rules, int(dice_left[i, o]), bool(had[i, o]))
            assert caps[i] == bid_cap(rules, dice_left[i].tolist(), o)


@pytest.mark.parametrize("name", NAMES)
def test_first_openers_follow_the_scalar_rule(name):
    rules = RULES[name]
    gen = torch.Generator().manual_seed(0)
    openers = ar.first_openers(rules, 500, gen, torch.device("cpu"))
    fixed = fixed_first_opener(rules, [rules.dice_per_player] * rules.num_players)
    if fixed is None:  # a uniform draw: every seat comes up
        assert sorted(set(openers.tolist())) == list(range(rules.num_players))
    else:
        assert openers.tolist() == [fixed] * 500


# ----------------------------------------------------------------------- calls
def engine_call(rules, dice_left, dice, bid, bidder, caller, call, palifico, had):
    """Plays one call on the scalar engine; returns its result, dice left and palifico."""
    game = LiarsDiceGame(rules)
    rng = np.random.default_rng(0)
    dice_left = [int(n) for n in dice_left]
    state = game.new_game(rng, dice=hands(dice, dice_left), dice_left=dice_left)
    state.bids = [(bidder, *bid)]
    state.current_player = caller
    state.palifico = palifico
    state.had_palifico = list(had)
    codec = game.codec
    action = codec.challenge if call == "challenge" else codec.exact
    result = game.apply(state, action, rng, check=False)
    return result, state


def kernel_call(rules, dice_left, dice, bid, bidder, caller, call, palifico, had):
    """The same call through the kernels, for a batch of one."""
    t = lambda x: torch.tensor([x])  # noqa: E731
    dice = torch.tensor(dice)[None]
    if rules.hand == "individual":  # only the bidder's hand is counted
        dice = torch.where(torch.arange(rules.num_players)[:, None] == bidder, dice, 0)
    count = ar.count_matches(
        dice, t(bid[1]), ar.round_wild(rules, t(palifico)), wild_die=rules.wild_die
    )
    settled = ar.settle_call(
        rules,
        count,
        t(bid[0]),
        caller=t(caller),
        bidder=t(bidder),
        dice_left=torch.tensor(dice_left)[None],
        challenge=t(call == "challenge"),
        exact=t(call == "exact"),
    )
    after = settled.dice_left  # compared with the engine's dice left by the callers
    opener = ar.next_opener(after, settled.anchor)
    starts = ar.palifico_starts(rules, after, torch.tensor(had)[None], opener)
    return count, settled, after, opener, starts


@st.composite
def calls(draw, palifico=None):
    """One call scenario: rules, table, bid, bidder, caller, call, palifico, had."""
    rules = RULES[draw(st.sampled_from(NAMES))]
    p, d = rules.num_players, rules.dice_per_player
    dice_left = draw(st.lists(st.integers(0, d), min_size=p, max_size=p))
    bidder, caller = draw(st.permutations(range(p)))[:2]
    dice_left[bidder] = dice_left[bidder] or 1
    dice_left[caller] = dice_left[caller] or 1
    dice = [
        draw(st.lists(st.integers(1, rules.faces), min_size=n, max_size=n)) + [0] * (d - n)
        for n in dice_left
    ]
    bid = (draw(st.integers(1, rules.max_quantity)), draw(st.integers(1, rules.faces)))
    call = draw(
        st.sampled_from(["challenge", "exact"] if rules.exact_call != "none" else ["challenge"])
    )
    palifico = draw(st.booleans()) if palifico is None else palifico
    had = draw(st.lists(st.booleans(), min_size=p, max_size=p))
    return rules, dice_left, dice, bid, bidder, caller, call, palifico, had


def check_call(scenario):
    rules, dice_left, dice, bid, bidder, caller, call, palifico, had = scenario
    result, state = engine_call(*scenario)
    count, settled, after, opener, starts = kernel_call(*scenario)
    assert int(count) == result.count
    seats = lambda flags: tuple(s for s, x in enumerate(flags[0].tolist()) if x)  # noqa: E731
    assert seats(settled.lost) == tuple(sorted(result.losers))
    assert seats(settled.gained) == tuple(sorted(result.gainers))
    assert after[0].tolist() == state.dice_left
    if result.next_opener is not None:
        assert int(opener) == result.next_opener
        assert bool(starts) == state.palifico
    # and the scalar settle_call directly
    outcome = settle_call(
        rules,
        call,
        bid[0],
        result.count,
        bidder=bidder,
        caller=caller,
        active=[s for s, n in enumerate(dice_left) if n],
        caller_dice=dice_left[caller],
    )
    assert (seats(settled.lost), seats(settled.gained)) == (
        tuple(sorted(outcome.losers)),
        tuple(sorted(outcome.gainers)),
    )


@settings(max_examples=300, deadline=None)
@given(calls())
def test_a_call_settles_like_the_engine(scenario):
    check_call(scenario)


@pytest.mark.parametrize("name, palifico", CASES)
def test_calls_settle_like_the_engine_on_every_preset(name, palifico):
    # batched: many calls at once, each checked against the engine
    rules = RULES[name]
    rng = np.random.default_rng(11)
    games = 120
    dice_left, dice = random_tables(rules, rng, games)
    bidder = np.array([rng.choice(np.flatnonzero(row)) for row in dice_left])
    caller = np.array(
        [
            rng.choice([s for s in np.flatnonzero(row) if s != b])
            for row, b in zip(dice_left, bidder, strict=True)
        ]
    )
    face = rng.integers(1, rules.faces + 1, size=games)
    quantity = rng.integers(1, rules.dice_per_player + 3, size=games)
    exact = (rng.random(games) < 0.5) & (rules.exact_call != "none")
    had = rng.random(dice_left.shape) < 0.3
    left = torch.tensor(dice_left)
    counted = torch.tensor(dice)
    if rules.hand == "individual":  # only the bidder's hand is counted
        bidder_hand = (
            torch.arange(rules.num_players)[:, None] == torch.tensor(bidder)[:, None, None]
        )
        counted = torch.where(bidder_hand, counted, 0)
    count = ar.count_matches(
        counted,
        torch.tensor(face),
        ar.round_wild(rules, torch.full((games,), palifico)),
        wild_die=rules.wild_die,
    )
    settled = ar.settle_call(
        rules,
        count,
        torch.tensor(quantity),
        caller=torch.tensor(caller),
        bidder=torch.tensor(bidder),
        dice_left=left,
        challenge=torch.tensor(~exact),
        exact=torch.tensor(exact),
    )
    after = settled.dice_left
    opener = ar.next_opener(after, settled.anchor)
    starts = ar.palifico_starts(rules, after, torch.tensor(had), opener)
    for i in range(games):
        call = "exact" if exact[i] else "challenge"
        args = (dice_left[i].tolist(), dice[i], (int(quantity[i]), int(face[i])))
        result, state = engine_call(
            rules, *args, int(bidder[i]), int(caller[i]), call, palifico, had[i].tolist()
        )
        assert int(count[i]) == result.count
        assert after[i].tolist() == state.dice_left
        assert np.flatnonzero(settled.lost[i].numpy()).tolist() == sorted(result.losers)
        assert np.flatnonzero(settled.gained[i].numpy()).tolist() == sorted(result.gainers)
        if result.next_opener is not None:
            assert int(opener[i]) == result.next_opener
            assert bool(starts[i]) == state.palifico


def test_games_without_a_call_settle_nothing():
    rules = PRESETS["perudo_calza"]
    no = torch.tensor([False, False])
    settled = ar.settle_call(
        rules,
        torch.tensor([3, 9]),
        torch.tensor([3, 2]),
        caller=torch.tensor([0, 1]),
        bidder=torch.tensor([1, 2]),
        dice_left=torch.tensor([[5, 4, 3], [1, 1, 1]]),
        challenge=no,
        exact=no,
    )
    assert not settled.lost.any() and not settled.gained.any()


# ----------------------------------------------------------------------- chances
@pytest.mark.parametrize("name", NAMES)
def test_tail_table_is_the_binomial_tail(name):
    rules = RULES[name]
    table = ar.tail_table(rules)
    assert table.shape == (2, rules.max_quantity + 1, rules.max_quantity + 2)
    for c, p in enumerate((1 / rules.faces, 2 / rules.faces)):
        for u in range(rules.max_quantity + 1):
            tail = binomial_tail(u, p)
            assert table[c, u, : len(tail)].tolist() == tail.tolist()
            assert not table[c, u, len(tail) :].any()
    assert torch.equal(ar.tail_table(rules, torch.float32), table.float())


@settings(max_examples=150, deadline=None)
@given(
    name=st.sampled_from(NAMES),
    palifico=st.booleans(),
    data=st.data(),
)
def test_own_bid_tails_are_the_tails_of_count_pmf(name, palifico, data):
    rules = RULES[name]
    f, codec = rules.faces, ActionCodec(rules)
    own = data.draw(st.lists(st.integers(1, f), min_size=0, max_size=rules.dice_per_player))
    unseen = data.draw(st.integers(0, rules.max_quantity - len(own)))
    w = rules.wild_die
    wild = ar.wild_faces(ar.round_wild(rules, torch.tensor([palifico])), f, wild_die=w)
    known = ar.known_matches(ar.face_counts(torch.tensor([own + [0]]), f), wild, wild_die=w)
    holds, after = ar.own_bid_tails(
        ar.tail_table(rules),
        known,
        wild,
        torch.tensor([unseen]),
        torch.tensor(codec.bid_face),
        torch.tensor(codec.bid_quantity),
    )
    for bid in range(codec.num_bids):
        quantity, face = codec.decode_bid(bid)
        pmf = count_pmf(
            rules, face, own_dice=own, own_counted=True, unseen_dice=unseen, palifico=palifico
        )
        assert holds[0, bid].item() == pytest.approx(pmf[quantity:].sum(), abs=1e-12)
        assert after[0, bid].item() == pytest.approx(pmf[quantity + 1 :].sum(), abs=1e-12)


def test_tails_per_bid_reads_each_bid_off_its_face():
    rules = PRESETS["perudo"].with_options(num_players=2, dice_per_player=2)
    codec = ActionCodec(rules)
    tails = torch.rand(3, rules.faces, rules.max_quantity + 2)
    holds, after = ar.tails_per_bid(
        tails, torch.tensor(codec.bid_face), torch.tensor(codec.bid_quantity)
    )
    for bid in range(codec.num_bids):
        quantity, face = codec.decode_bid(bid)
        assert torch.equal(holds[:, bid], tails[:, face - 1, quantity])
        assert torch.equal(after[:, bid], tails[:, face - 1, quantity + 1])


# ----------------------------------------------------------------------- the codec
@pytest.mark.parametrize("name", NAMES)
def test_bulk_codec_equals_the_scalar_codec(name):
    codec = ActionCodec(RULES[name])
    ids = np.arange(codec.num_bids)
    scalar = [codec.decode_bid(int(i)) for i in ids]
    for array in (ids, torch.tensor(ids)):
        quantity, face = codec.decode_bids(array)
        assert list(zip(quantity.tolist(), face.tolist(), strict=True)) == scalar
        assert codec.encode_bids(quantity, face).tolist() == ids.tolist()
    some = min(19, codec.num_bids - 1)  # plain ints too
    assert codec.decode_bids(some) == codec.decode_bid(some)
    assert codec.encode_bids(*codec.decode_bid(some)) == some


def test_array_rules_imports_only_torch_and_the_scalar_rules():
    """A leaf module: torch, the scalar rules and the compiled look-ups (numpy and numba)."""
    tree = ast.parse(inspect.getsource(ar))
    imported = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            imported |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            imported.add(node.module)
    outside_stdlib = {m for m in imported if m.split(".")[0] not in sys.stdlib_module_names}
    assert outside_stdlib <= {
        "torch",
        "liars_env.rules",
        "liars_env.probability",
        "liars_env.batched.fused_belief",
    }
