"""The batched engine's step as a few compiled loops (numba), for the CPU.

:class:`~liars_env.batched.BatchedEnv` steps thousands of games with torch tensor ops:
about sixty small ops a step, whose per-op overhead, not their arithmetic, bounds the
speed. On the CPU it runs these loops instead (its ``backend="numba"``, the default there
when numba is installed), each one pass over the games:

==========================  ===========================================================
kernel                      what it does, per game
==========================  ===========================================================
:func:`first_illegal`       the first game whose action is not legal (``is_legal``)
:func:`apply_actions`       a bid is recorded and the turn passes on; a call is counted
                            and settled (who loses or gains dice, eliminations, the
                            winner, the next round's opener)
:func:`start_rounds`        the new rounds' and games' dice, openers and palifico flags
:func:`write_observations`  the acting player's observation, layout v1
:func:`write_masks`         the acting player's legal actions
:func:`sample_from_tables`  ``BatchedEnv.sample_actions``'s table look-ups
==========================  ===========================================================

Their arguments are :class:`~liars_env.batched.BatchedEnv`'s state tensors under the same
names, as numpy views written in place (``dice``, ``dice_left``, ``current_player``,
``bid_id``, ``round_moves`` …), its tables, and output arrays that come in zeroed. For
legal actions they do exactly what the torch path does: the same state, the same
legality tables from :class:`~liars_env.actions.ActionCodec`, the same observation values
from :class:`~liars_env.observation.ObservationLayout`, and the dice still drawn by the
batch's torch generator in the torch path's order, so a seed plays the same games with
either backend. The rules they apply (counting with wild ones, settling a challenge or
an exact call, the next seat with dice, palifico rounds) are the compiled twins of
:mod:`liars_env.batched.kernels`; ``tests/test_batched.py`` checks them step by step
against the torch backend and the scalar engine on every preset. (An illegal action,
possible only with ``check_actions=False``, has an undefined outcome; the kernels raise
rather than write outside an array.)

Every kernel is compiled once per machine (numba's on-disk cache) and runs on one
thread, so another busy process cannot stall it (see :mod:`liars_env.batched.threads`).
"""

from __future__ import annotations

import numpy as np
from numba import njit

NO_EXACT, SPOT_ON, CALZA = 0, 1, 2
"""Codes of ``RuleSet.exact_call`` passed to :func:`apply_actions`."""

_JIT = {"cache": True, "nogil": True, "boundscheck": False}


@njit(**_JIT)
def _dice_in_play(dice_left_row):
    """The dice of all seats: the bid cap of a common hand."""
    total = 0
    for s in range(dice_left_row.shape[0]):
        total += dice_left_row[s]
    return total


@njit(**_JIT)
def _legal_row(bid_id, palifico_round, dice_left_row, use_palifico, bid_cap, max_quantity):
    """``(palifico table?, row, cap)``: where one game's legality is read."""
    cap = _dice_in_play(dice_left_row) if bid_cap else max_quantity
    return use_palifico and palifico_round, bid_id + 1, cap


@njit(**_JIT)
def _first_holding(dice_left_row, seat):
    """The first seat at or clockwise after ``seat`` (below P) that holds dice, or -1."""
    num_players = dice_left_row.shape[0]
    for _ in range(num_players):
        if dice_left_row[seat] > 0:
            return seat
        seat = seat + 1 if seat + 1 < num_players else 0
    return -1


@njit(**_JIT)
def first_illegal(
    actions, active, bid_id, palifico, dice_left, raise_table, palifico_table, cap_table,
    use_palifico, bid_cap, max_quantity,
):  # fmt: skip
    """Index of the first active game whose action is not legal, or -1.

    The tables are :func:`write_masks`'s (bool arrays viewed as ``uint8``).
    """
    num_actions = raise_table.shape[1]
    for g in range(actions.shape[0]):
        if not active[g]:
            continue
        a = actions[g]
        if a < 0 or a >= num_actions:
            return g
        pal, row, cap = _legal_row(
            bid_id[g], palifico[g], dice_left[g], use_palifico, bid_cap, max_quantity
        )
        legal = palifico_table[row, a] if pal else raise_table[row, a]
        if not (legal and cap_table[cap, a]):
            return g
    return -1


@njit(**_JIT)
def apply_actions(
    actions, active, dice, dice_left, current_player, bid_id, last_bidder, round_len,
    round_moves, palifico, bid_quantity, bid_face, num_bids, exact_id, exact_mode,
    ones_wild, wild_die, single_round, dice_per_player, penalty,
    called, count, lost, gained, eliminated, rewards, winner, over, next_opener,
):  # fmt: skip
    """Applies one action per active game, writing the state in place.

    A bid is appended to the round's moves and the turn passes to the next seat with
    dice. A call counts the called bid's face (the wild face ``wild_die`` too where it is
    wild and the round is not palifico), settles it as
    :func:`liars_env.batched.kernels.settle_call` does (a loser loses all its dice under
    ``single_round``), and
    records eliminations, the winner of a finished game (``over``) or the seat that opens
    the next round (``next_opener``: the anchor if it still holds dice, else the next seat
    clockwise that does). The outputs (``called`` … ``next_opener``) come in zeroed;
    ``winner`` and ``next_opener`` come in as -1.
    """
    num_games, num_players, num_dice = dice.shape
    for g in range(num_games):
        if not active[g]:
            continue
        a = actions[g]
        cur = current_player[g]
        if a < 0:  # only unchecked actions get here; their ids would index the tables
            raise IndexError("a negative action id (illegal with check_actions=False)")
        if a < num_bids:
            slot = round_len[g]
            if slot >= round_moves.shape[1]:  # only an illegal repeated bid gets here
                raise IndexError("a round repeated a bid (illegal with check_actions=False)")
            round_moves[g, slot] = a * num_players + cur
            round_len[g] = slot + 1
            bid_id[g] = a
            last_bidder[g] = cur
            following = cur + 1 if cur + 1 < num_players else 0
            current_player[g] = _first_holding(dice_left[g], following)
            continue

        called[g] = True
        previous = bid_id[g]
        quantity, face = bid_quantity[previous], bid_face[previous]
        wild = ones_wild and not palifico[g]
        matches = 0
        for s in range(num_players):
            for d in range(num_dice):
                die = dice[g, s, d]
                if die == face or (wild and die == wild_die):
                    matches += 1
        count[g] = matches

        if a == exact_id:
            anchor = cur
            if matches != quantity:
                lost[g, cur] = True
            elif exact_mode == SPOT_ON:
                for s in range(num_players):
                    if s != cur and dice_left[g, s] > 0:
                        lost[g, s] = True
            elif exact_mode == CALZA and dice_left[g, cur] < dice_per_player:
                gained[g, cur] = True
        else:
            anchor = last_bidder[g] if matches < quantity else cur
            lost[g, anchor] = True

        alive, first_alive = 0, -1
        for s in range(num_players):
            if single_round and lost[g, s]:
                left = np.int64(0)
            else:
                left = dice_left[g, s] - np.int64(lost[g, s]) + np.int64(gained[g, s])
            dice_left[g, s] = left
            if left > 0:
                alive += 1
                if first_alive < 0:
                    first_alive = s
            elif lost[g, s]:
                eliminated[g, s] = True
                rewards[g, s] = penalty
        if alive == 1:
            over[g] = True
            winner[g] = first_alive
            rewards[g, first_alive] = 1.0
        else:
            next_opener[g] = _first_holding(dice_left[g], anchor)


@njit(**_JIT)
def start_rounds(
    rows, openers, rolled, first_new_game, dice, dice_left, opener, current_player, bid_id,
    round_len, palifico, had_palifico, use_palifico,
):  # fmt: skip
    """Starts a round in each game of ``rows`` with the dice ``rolled`` and ``openers``.

    Rows from ``first_new_game`` on start a new game: every seat gets its dice back and
    nobody has opened a palifico round yet. Lost dice stay face 0. A round is palifico
    when the rules have it, its opener holds one die and has not opened one before.
    """
    num_dice = dice.shape[2]
    for i in range(rows.shape[0]):
        g = rows[i]
        if i >= first_new_game:
            for s in range(dice.shape[1]):
                dice_left[g, s] = num_dice
                had_palifico[g, s] = False
        for s in range(dice.shape[1]):
            left = dice_left[g, s]
            for d in range(num_dice):
                dice[g, s, d] = rolled[i, s, d] if d < left else 0
        o = openers[i]
        opener[g] = o
        current_player[g] = o
        bid_id[g] = -1
        round_len[g] = 0
        if use_palifico:
            starts = dice_left[g, o] == 1 and not had_palifico[g, o]
            palifico[g] = starts
            if starts:
                had_palifico[g, o] = True


@njit(**_JIT)
def write_observations(
    obs, dice, dice_left, current_player, opener, palifico, round_len, round_moves,
    own_dice_value, dice_left_value, offsets, move_cell,
):  # fmt: skip
    """Writes every game's observation of its acting player into ``obs`` (layout v1).

    ``offsets`` holds the starts of ``own_dice``, ``dice_left``, ``opener``, ``palifico``,
    ``current_bid``, ``current_bidder`` and ``bid_history`` (the layout's order);
    ``move_cell[move · P + o]`` is where a move (bid id × P + bidder) goes in observer
    ``o``'s bid history (bid id × P + the bidder relative to ``o``), a table rather than
    arithmetic because integer division is slow.
    """
    num_games, num_players, num_dice = dice.shape
    size = obs.shape[1]
    at_own, at_left, at_opener, at_palifico = offsets[0], offsets[1], offsets[2], offsets[3]
    at_bid, at_bidder, at_history = offsets[4], offsets[5], offsets[6]
    faces = at_left - at_own
    counts = np.zeros(faces + 1, dtype=np.int64)
    for g in range(num_games):
        for i in range(size):  # element writes: ~10% faster than a row view's row[:] = 0
            obs[g, i] = 0.0
        cur = current_player[g]
        counts[:] = 0
        for d in range(num_dice):
            counts[dice[g, cur, d]] += 1
        for f in range(faces):
            obs[g, at_own + f] = own_dice_value[counts[f + 1]]
        seat = cur
        for k in range(num_players):
            obs[g, at_left + k] = dice_left_value[dice_left[g, seat]]
            seat = seat + 1 if seat + 1 < num_players else 0
        relative = opener[g] - cur
        obs[g, at_opener + (relative if relative >= 0 else relative + num_players)] = 1.0
        if palifico[g]:
            obs[g, at_palifico] = 1.0
        moves = round_len[g]
        if moves:
            cell = 0
            for k in range(moves):
                cell = move_cell[round_moves[g, k] * num_players + cur]
                obs[g, at_history + cell] = 1.0
            bid = cell // num_players  # the latest bid and its bidder
            obs[g, at_bid + bid] = 1.0
            obs[g, at_bidder + cell - bid * num_players] = 1.0


@njit(**_JIT)
def write_masks(
    mask, bid_id, palifico, dice_left, raise_table, palifico_table, cap_table,
    use_palifico, bid_cap, max_quantity,
):  # fmt: skip
    """Writes every game's legal actions into ``mask``.

    They are the raise (or palifico) table's row of the game's latest bid, and the cap
    table's row of the dice in play (the last row, all legal, without ``bid_cap``).
    ``mask`` and the tables are bool arrays viewed as ``uint8`` (as for
    :func:`first_illegal`): the bitwise and of bytes vectorizes, of bools it does not.
    """
    num_actions = mask.shape[1]
    for g in range(mask.shape[0]):
        pal, row, cap = _legal_row(
            bid_id[g], palifico[g], dice_left[g], use_palifico, bid_cap, max_quantity
        )
        table = palifico_table if pal else raise_table
        for a in range(num_actions):
            mask[g, a] = table[row, a] & cap_table[cap, a]


@njit(**_JIT)
def sample_from_tables(
    out, uniform, bid_id, palifico, dice_left, counts, kth, use_palifico, bid_cap,
):  # fmt: skip
    """``BatchedEnv.sample_actions``: one legal action per game from the tables.

    The action at rank ``⌊u·count⌋`` of the game's position (palifico round, latest bid,
    bid cap) in the ``(counts, kth)`` tables. The rank's arithmetic is float32, like
    :func:`liars_env.batched.sample_legal`'s, so both draw the same action from the same
    uniform number.
    """
    caps = counts.shape[2]
    for g in range(out.shape[0]):
        variant = 1 if use_palifico and palifico[g] else 0
        cap = _dice_in_play(dice_left[g]) if bid_cap and caps > 1 else 0
        n = counts[variant, bid_id[g] + 1, cap]
        rank = np.int64(np.float32(uniform[g]) * np.float32(n))
        rank = max(min(rank, n - 1), 0)
        out[g] = kth[variant, bid_id[g] + 1, cap, rank]
