"""The rule specification's conformance cases 1–16 as scenario tables, and edge cases."""

from __future__ import annotations

import pytest
from helpers import bid, scripted
from hypothesis import given
from hypothesis import strategies as st

from liars_env import IllegalActionError, LiarsDiceGame, RuleSet
from liars_env.actions import describe_bid
from liars_env.rules import count_matches, is_legal_bid

PERUDO = RuleSet.preset("perudo")
A_B_C = [[1, 2, 3, 4, 6], [1, 2, 2, 5, 6], [2, 3, 4, 5, 6]]


# --- cases 1 and 2: a Perudo challenge (seed 000) ----------------------------------
@pytest.mark.parametrize(
    "final_bid, count, loser, dice_left",
    [
        ((7, 2), 6, 1, [5, 4, 5]),  # case 1: 6 < 7, bidder B loses
        ((6, 2), 6, 2, [5, 5, 4]),  # case 2: 6 >= 6, challenger C loses
    ],
)
def test_cases_1_2_perudo_challenge(final_bid, count, loser, dice_left):
    game, state, rng = scripted(PERUDO, A_B_C)
    game.apply(state, bid(game, 4, 2), rng)
    game.apply(state, bid(game, *final_bid), rng)
    result = game.apply(state, game.codec.challenge, rng)
    assert (result.count, result.losers) == (count, (loser,))
    assert state.dice_left == dice_left and sum(state.dice_left) == 14
    assert state.opener == loser == state.current_player
    assert state.bids == [] and [len(h) for h in state.dice] == dice_left


# --- case 3: conversions (seed 000) -------------------------------------------------
@pytest.mark.parametrize(
    "previous, proposed, legal",
    [
        ((5, 4), (3, 1), True),
        ((5, 4), (2, 1), False),
        ((3, 1), (7, 2), True),
        ((3, 1), (7, 6), True),
        ((3, 1), (6, 6), False),
        ((3, 1), (4, 1), True),
        ((3, 1), (3, 1), False),
        (None, (1, 1), False),  # no opening bid of ones
        (None, (3, 1), False),
        (None, (1, 2), True),
    ],
)
def test_case_3_perudo_conversions(previous, proposed, legal):
    assert is_legal_bid(PERUDO, previous, proposed, cap=15) is legal


# --- case 4: counting wild ones once (seed 004) ---------------------------------------
@pytest.mark.parametrize(
    "final_bid, true", [((5, 4), True), ((6, 4), False), ((3, 1), False), ((2, 1), True)]
)
def test_case_4_counts(final_bid, true):
    hands = [[1, 4, 6], [4, 4, 2], [1, 3, 5]]
    rules = PERUDO.with_options(dice_per_player=3)
    game, state, rng = scripted(rules, hands)
    # open with a low bid that leads legally to the bid under test
    opening = (1, 2) if final_bid[1] == 1 else (1, final_bid[1])
    game.apply(state, bid(game, *opening), rng)
    game.apply(state, bid(game, *final_bid), rng)
    result = game.apply(state, game.codec.challenge, rng)
    assert result.losers == ((2,) if true else (1,))  # challenger C (seat 2) or bidder B


# --- case 5: one die, never the shortfall (seed 004) -----------------------------------
def test_case_5_one_die_not_the_shortfall():
    hands = [[5, 5, 2, 3, 4], [1, 5, 2, 3, 4], [2, 2, 3, 3, 4]]  # four matches for 5s
    game, state, rng = scripted(PERUDO, hands)
    game.apply(state, bid(game, 8, 5), rng)
    result = game.apply(state, game.codec.challenge, rng)
    assert result.count == 4 and result.losers == (0,)
    assert state.dice_left == [4, 5, 5]


# --- case 6: the eliminated loser hands the opening clockwise (seed 004) ----------------
@pytest.mark.parametrize("bea_bids", [True, False])
def test_case_6_eliminated_loser_next_opener(bea_bids):
    hands = [[2, 2, 2, 2, 2], [6], [3, 3, 3, 3, 3]]
    game, state, rng = scripted(PERUDO, hands, first_player=0 if not bea_bids else 1)
    if bea_bids:  # Bea bids something false, Cam challenges
        game.apply(state, bid(game, 9, 6), rng)
    else:  # Alex bids something true, Bea challenges
        game.apply(state, bid(game, 5, 2), rng)
    result = game.apply(state, game.codec.challenge, rng)
    assert result.losers == (1,) and result.eliminated == (1,)
    assert result.next_opener == 2 and state.opener == 2 and state.current_player == 2
    assert state.dice_left == [5, 0, 5] and state.dice[1] == []


# --- case 7: the bid cap follows the dice in play (seed 004) ----------------------------
def test_case_7_bid_cap():
    rules = PERUDO.with_options(num_players=4)
    game, state, rng = scripted(rules, None, dice_left=[4, 2, 1, 3])
    mask = game.legal_mask(state)
    legal_quantities = {game.codec.decode_bid(a)[0] for a in range(game.codec.num_bids) if mask[a]}
    assert max(legal_quantities) == 10
    with pytest.raises(IllegalActionError, match="bid cap: at most 10"):
        game.apply(state, bid(game, 11, 2), rng)


# --- case 8: sanford no-decrease raises, ones natural (seed 001) -----------------------
SANFORD = RuleSet.preset("sanford")


@pytest.mark.parametrize(
    "proposed, legal",
    [((4, 4), True), ((3, 5), True), ((4, 5), True), ((2, 6), False), ((4, 2), False)],
)
def test_case_8_sanford_raises(proposed, legal):
    assert is_legal_bid(SANFORD, (3, 4), proposed, cap=15) is legal


@pytest.mark.parametrize("count, loser", [(4, 0), (5, 1), (6, 1)])
def test_case_8_sanford_count(count, loser):
    threes = [3] * count + [2] * (15 - count)
    hands = [threes[0:5], threes[5:10], threes[10:15]]
    hands[2][-1] = 1  # ones count only as ones
    game, state, rng = scripted(SANFORD, hands)
    game.apply(state, bid(game, 5, 3), rng)
    result = game.apply(state, game.codec.challenge, rng)
    assert result.count == count and result.losers == (loser,)


# --- case 9: flexible face (seed 001) --------------------------------------------------
@pytest.mark.parametrize("proposed, legal", [((4, 2), True), ((2, 6), False), ((3, 5), True)])
def test_case_9_sanford_flexible(proposed, legal):
    assert is_legal_bid(RuleSet.preset("sanford_flexible"), (3, 4), proposed, cap=15) is legal


# --- case 10: simple wild ones (seed 001) -----------------------------------------------
def test_case_10_sanford_wild():
    rules = RuleSet.preset("sanford_wild")
    hands = [[5, 5, 2, 3, 4], [1, 1, 2, 3, 4], [2, 2, 3, 3, 4]]
    assert count_matches(rules, hands, 5, palifico=False) == 4
    game, state, rng = scripted(rules, hands)
    game.apply(state, bid(game, 4, 5), rng)
    result = game.apply(state, game.codec.challenge, rng)
    assert result.losers == (1,)  # the bid was true: the challenger loses
    faces = game.codec.bid_face
    for _ in range(50):  # no mask ever offers a bid of ones
        mask = game.legal_mask(state)
        assert not mask[: game.codec.num_bids][faces == 1].any()
        legal = game.legal_actions(state)
        game.apply(state, legal[len(legal) // 3], rng)
        if state.is_over:
            break


# --- case 11: three dice each (seed 001) -------------------------------------------------
@pytest.mark.parametrize("players, total", [(3, 9), (4, 12), (5, 15)])
def test_case_11_three_dice(players, total):
    rules = RuleSet.preset("sanford_three_dice", num_players=players)
    game, state, _ = scripted(rules, None)
    assert sum(state.dice_left) == total == rules.max_quantity
    assert game.cap(state) == total


# --- case 12: sixes only rise by quantity; at the cap only a challenge (seed 001) ---------
def test_case_12_sixes_and_the_cap():
    game, state, rng = scripted(SANFORD, None)
    game.apply(state, bid(game, 4, 6), rng)
    legal = {game.codec.decode_bid(a) for a in game.legal_actions(state) if game.codec.is_bid(a)}
    assert legal == {(q, 6) for q in range(5, 16)}
    game.apply(state, bid(game, 15, 6), rng)
    assert game.legal_actions(state) == [game.codec.challenge]


# --- case 13: palifico round (seed 002) ----------------------------------------------------
def test_case_13_palifico_round():
    rules = RuleSet.preset("perudo_palifico")
    hands = [[1, 1, 1, 4, 4], [2, 2], [1, 3, 3, 3, 3]]
    # B has two dice and loses one, so B holds one die and opens a palifico round
    game, state, rng = scripted(rules, hands, dice_left=[5, 2, 5], first_player=1)
    game.apply(state, bid(game, 9, 2), rng)
    game.apply(state, game.codec.challenge, rng)
    assert state.dice_left == [5, 1, 5] and state.opener == 1 and state.palifico
    state.dice = [[1, 1, 1, 4, 4], [4], [1, 3, 3, 3, 3]]
    game.apply(state, bid(game, 2, 4), rng)
    legal = {game.codec.decode_bid(a) for a in game.legal_actions(state) if game.codec.is_bid(a)}
    assert legal == {(q, 4) for q in range(3, 12)}  # face fixed, only quantity rises
    game.apply(state, bid(game, 4, 4), rng)
    result = game.apply(state, game.codec.challenge, rng)
    assert result.palifico and result.count == 3  # ones not wild: three natural 4s
    assert result.losers == (2,)  # C (seat 2) bid four 4s and there are three


# --- case 14: spot on (seed 002) -------------------------------------------------------------
@pytest.mark.parametrize(
    "quantity, losers, dice_left",
    [(6, (0, 1), [4, 4, 5]), (5, (2,), [5, 5, 4]), (7, (2,), [5, 5, 4])],
)
def test_case_14_spot_on(quantity, losers, dice_left):
    game, state, rng = scripted(RuleSet.preset("common_hand_spot_on"), A_B_C)
    game.apply(state, bid(game, 2, 2), rng)
    game.apply(state, bid(game, quantity, 2), rng)
    result = game.apply(state, game.codec.exact, rng)
    assert result.count == 6 and result.losers == losers and state.dice_left == dice_left
    assert result.next_opener == 2  # the caller opens after an exact call


# --- edge cases --------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "previous, minimum_ones", [((1, 3), 1), ((2, 3), 1), ((5, 2), 3), ((7, 6), 4), ((8, 5), 4)]
)
def test_odd_quantities_in_conversions(previous, minimum_ones):
    assert is_legal_bid(PERUDO, previous, (minimum_ones, 1), cap=15)
    assert not is_legal_bid(PERUDO, previous, (minimum_ones - 1, 1), cap=15)


def test_cap_after_conversion_leaves_only_ones_and_calls():
    rules = PERUDO.with_options(num_players=2)  # 10 dice in play
    game, state, rng = scripted(rules, None)
    game.apply(state, bid(game, 9, 3), rng)
    game.apply(state, bid(game, 5, 1), rng)  # back to ordinary needs 11 > cap 10
    legal = {game.codec.decode_bid(a) for a in game.legal_actions(state) if game.codec.is_bid(a)}
    assert legal == {(q, 1) for q in range(6, 11)}
    assert game.codec.challenge in game.legal_actions(state)


def test_palifico_opener_may_open_on_ones_then_only_ones_rise():
    rules = RuleSet.preset("perudo_palifico")
    game, state, rng = scripted(rules, [[1], [2, 3, 4, 5, 6], [2, 3, 4, 5, 6]], dice_left=[1, 5, 5])
    assert state.palifico
    game.apply(state, bid(game, 1, 1), rng)
    legal = {game.codec.decode_bid(a) for a in game.legal_actions(state) if game.codec.is_bid(a)}
    assert legal == {(q, 1) for q in range(2, 12)}
    result = game.apply(state, game.codec.challenge, rng)
    assert result.count == 1 and result.losers == (1,)  # the bid was true


def test_palifico_only_once_per_player():
    # A right spot-on call lets a one-die player open again without losing a die.
    rules = RuleSet.preset("perudo_palifico", exact_call="spot_on")
    game, state, rng = scripted(rules, [[2], [3, 3, 3], [4, 4, 4]], dice_left=[1, 3, 3])
    assert state.palifico and state.had_palifico == [True, False, False]
    for quantity in (1, 2, 3):
        game.apply(state, bid(game, quantity, 3), rng)
    result = game.apply(state, game.codec.exact, rng)  # seat 0: exactly three 3s
    assert result.palifico and result.count == 3 and result.losers == (1, 2)
    assert state.opener == 0 and state.dice_left == [1, 2, 2]
    assert not state.palifico  # seat 0 has opened its palifico round already


def test_calza_at_full_dice_gains_nothing():
    game, state, rng = scripted(RuleSet.preset("perudo_calza"), A_B_C)
    game.apply(state, bid(game, 6, 2), rng)
    result = game.apply(state, game.codec.exact, rng)
    assert result.count == 6 and result.losers == () and result.gainers == ()
    assert state.dice_left == [5, 5, 5] and state.opener == 1


def test_calza_right_regains_a_die_wrong_loses_one():
    hands = [A_B_C[0], [1, 2, 2, 5], A_B_C[2]]
    game, state, rng = scripted(RuleSet.preset("perudo_calza"), hands, dice_left=[5, 4, 5])
    game.apply(state, bid(game, 6, 2), rng)
    result = game.apply(state, game.codec.exact, rng)
    assert result.gainers == (1,) and state.dice_left == [5, 5, 5]
    game2, state2, rng2 = scripted(RuleSet.preset("perudo_calza"), A_B_C)
    game2.apply(state2, bid(game2, 5, 2), rng2)
    result2 = game2.apply(state2, game2.codec.exact, rng2)
    assert result2.losers == (1,) and state2.dice_left == [5, 4, 5]


def test_spot_on_eliminating_several_players_wins_for_the_caller():
    rules = RuleSet.preset("common_hand_spot_on", num_players=4)
    hands = [[3], [3], [5, 5, 5], [2]]
    game, state, rng = scripted(rules, hands, dice_left=[1, 1, 3, 1])
    game.apply(state, bid(game, 2, 3), rng)  # seat 0 bids two 3s: exactly right
    result = game.apply(state, game.codec.exact, rng)  # seat 1 calls spot on
    assert result.losers == (0, 2, 3) and set(result.eliminated) == {0, 3}
    assert state.dice_left == [0, 1, 2, 0] and not state.is_over
    assert state.out_order == [[0, 3]] and state.opener == 1
    state.dice = [[], [4], [4, 4], []]
    game.apply(state, bid(game, 3, 4), rng)
    result = game.apply(state, game.codec.exact, rng)
    assert result.count == 3  # seat 2's spot on is right: seat 1 loses its last die
    assert result.losers == (1,) and result.eliminated == (1,)
    assert state.is_over and state.winner == 2
    assert state.places() == [3, 2, 1, 3]


def test_individual_hand_counts_only_the_bidder_and_caps_at_own_dice():
    rules = RuleSet.preset("individual_hand")
    hands = [[1, 4, 4, 2, 3], [4, 4, 4, 4, 4], [6, 6, 6, 6, 6]]
    game, state, rng = scripted(rules, hands)
    assert game.cap(state) == 5
    with pytest.raises(IllegalActionError, match="bid cap: at most 5"):
        game.apply(state, bid(game, 6, 4), rng)
    game.apply(state, bid(game, 4, 4), rng)  # seat 0: two 4s plus one wild one = 3 < 4
    result = game.apply(state, game.codec.challenge, rng)
    assert result.counted_seats == (0,) and result.count == 3 and result.losers == (0,)


# --- case 15: jokers count toward other faces, a bid on ones counts only ones ------------------
JOKERS = RuleSet.preset("jokers", num_players=2)
A_B = [[1, 5, 5, 2, 3], [1, 3, 4, 6, 6]]


@pytest.mark.parametrize(
    "final_bid, count, true",
    [
        ((4, 5), 4, True),  # two 5s + two ones
        ((5, 5), 4, False),
        ((2, 1), 2, True),  # a bid on ones counts only ones
        ((3, 1), 2, False),
        ((4, 6), 4, True),  # 6, 6, 1, 1
        ((5, 6), 4, False),
    ],
)
def test_case_15_jokers_counts(final_bid, count, true):
    game, state, rng = scripted(JOKERS, A_B)
    game.apply(state, bid(game, *final_bid), rng)  # any bid may open under jokers
    result = game.apply(state, game.codec.challenge, rng)
    assert result.count == count
    assert result.losers == ((1,) if true else (0,))  # challenger B, or bidder A
    assert count_matches(JOKERS, A_B, final_bid[1], palifico=False) == count


# --- case 16: ones are the lowest face and may open --------------------------------------------
@pytest.mark.parametrize(
    "previous, proposed, legal",
    [
        (None, (1, 1), True),  # the lowest bid of all may open
        (None, (4, 1), True),
        ((3, 1), (3, 2), True),
        ((3, 1), (3, 6), True),
        ((3, 1), (4, 1), True),
        ((3, 1), (4, 5), True),
        ((3, 1), (3, 1), False),  # no repeat
        ((3, 1), (2, 6), False),
        ((3, 1), (2, 1), False),
        ((3, 6), (4, 1), True),
        ((3, 6), (3, 1), False),  # ones rank below every face within a quantity
        ((3, 2), (3, 1), False),
        ((5, 4), (3, 1), False),  # no Perudo conversion: halving is not a raise
        ((2, 1), (5, 2), True),
        ((2, 1), (2, 2), True),  # no doubling either
    ],
)
def test_case_16_jokers_raises(previous, proposed, legal):
    assert is_legal_bid(JOKERS, previous, proposed, cap=10) is legal


def test_case_16_jokers_opening_and_cap():
    game, state, rng = scripted(JOKERS, None)
    legal = [game.codec.decode_bid(a) for a in game.legal_actions(state)]
    assert legal[0] == (1, 1) and game.codec.encode_bid(1, 1) == 0  # the lowest bid of all
    assert max(q for q, _ in legal) == 10 and len(legal) == 10 * 6  # every bid up to 10
    assert game.codec.max_quantity == 10  # 2 × 5 dice: no bid above 10 exists at all
    game.apply(state, bid(game, 9, 6), rng)
    legal = {game.codec.decode_bid(a) for a in game.legal_actions(state) if game.codec.is_bid(a)}
    assert legal == {(10, f) for f in range(1, 7)}
    # three players down to 10 dice: the cap leaves no bid above 10
    game, state, rng = scripted(JOKERS.with_options(num_players=3), None, dice_left=[5, 3, 2])
    assert max(game.codec.decode_bid(a)[0] for a in game.legal_actions(state)) == 10
    with pytest.raises(IllegalActionError, match="bid cap: at most 10 dice are in play"):
        game.apply(state, bid(game, 11, 1), rng)


@pytest.mark.parametrize(
    "previous, proposed, message",
    [
        ((3, 6), (3, 1), "raise a higher quantity, or the same quantity with a higher face"),
        ((3, 1), (2, 6), "raise a higher quantity, or the same quantity with a higher face"),
        ((3, 1), (3, 1), "raise a higher quantity, or the same quantity with a higher face"),
    ],
)
def test_illegal_jokers_bids_name_the_rule(previous, proposed, message):
    game, state, rng = scripted(JOKERS, A_B)
    game.apply(state, bid(game, *previous), rng)
    with pytest.raises(IllegalActionError, match=message) as raised:
        game.apply(state, bid(game, *proposed), rng)
    assert describe_bid(*proposed) in str(raised.value)  # the message names the bid
    assert state.current_bid == previous and len(state.bids) == 1  # nothing changed


def test_jokers_need_face_one_as_the_joker():
    with pytest.raises(ValueError, match="ones='jokers'.*wild_face='one'.*got wild_face='highest'"):
        RuleSet(ones="jokers", wild_face="highest")


@pytest.mark.parametrize("players, ok", [(1, False), (2, True), (5, True), (8, True), (9, False)])
def test_jokers_preset_seats_two_to_eight(players, ok):
    if ok:
        assert RuleSet.preset("jokers", num_players=players).ones == "jokers"
    else:
        with pytest.raises(ValueError, match="num_players"):
            RuleSet.preset("jokers", num_players=players)


def test_jokers_palifico_round_has_no_wild_ones_and_a_fixed_face():
    # docs/rules.md: with palifico on, a palifico round under jokers is like every other
    # palifico round: ones are not wild, the opener may name any face (ones included), the
    # face stays, only the quantity rises; the next ordinary round has jokers again.
    rules = RuleSet.preset("jokers", palifico=True)
    hands = [[1], [1, 5, 5, 6, 6], [2, 3, 4, 5, 6]]
    game, state, rng = scripted(rules, hands, dice_left=[1, 5, 5])
    assert state.palifico
    game.apply(state, bid(game, 2, 5), rng)
    legal = {game.codec.decode_bid(a) for a in game.legal_actions(state) if game.codec.is_bid(a)}
    assert legal == {(q, 5) for q in range(3, 12)}
    result = game.apply(state, game.codec.challenge, rng)
    assert result.palifico and result.count == 3  # three natural 5s, ones not wild
    assert not state.palifico  # seat 1 lost and opens an ordinary round
    state.dice = [[1], [1, 5, 6, 6], [2, 3, 4, 5, 6]]
    game.apply(state, bid(game, 4, 5), rng)
    result = game.apply(state, game.codec.challenge, rng)
    assert not result.palifico and result.count == 4  # 5, 5 and two jokers


@given(
    players=st.integers(2, 4),
    dice=st.integers(1, 3),
    faces=st.integers(2, 6),
    data=st.data(),
)
def test_jokers_raises_are_exactly_the_larger_ids(players, dice, faces, data):
    # ones rank lowest within a quantity and nothing converts: id order is the raise order
    rules = RuleSet.preset("jokers", num_players=players, dice_per_player=dice, faces=faces)
    game = LiarsDiceGame(rules)
    previous = data.draw(st.integers(-1, game.codec.num_bids - 1), label="previous id")
    row = game.codec.raise_table[previous + 1]
    assert row.tolist() == [col > previous for col in range(game.codec.num_bids)]


@given(
    hands=st.lists(st.lists(st.integers(1, 6), min_size=1, max_size=5), min_size=2, max_size=5),
    face=st.integers(1, 6),
    palifico=st.booleans(),
)
def test_jokers_count_ones_alone_or_beside_every_other_face(hands, face, palifico):
    dice = [d for hand in hands for d in hand]
    ones = 0 if face == 1 or palifico else dice.count(1)
    expected = dice.count(face) + ones
    assert count_matches(JOKERS, hands, face, palifico=palifico) == expected
