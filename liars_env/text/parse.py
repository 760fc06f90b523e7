"""Reads a prompt of :mod:`liars_env.text.view` back into the position it describes.

The test server (:mod:`liars_env.play.bot_server`) answers as one of our bots by reading
nothing but the prompt: :func:`rules_from_text` finds the one rule set whose ``Rules:``
block is the prompt's, :func:`view_from_text` rebuilds the seat's
:class:`~liars_env.observation.PlayerView` (the other seats' dice are unknown, so they
are filled with placeholders no bot may read) and checks that the prompt's legal-moves
line is the one the engine computes. So a bot that plays the same through the prompt as
in-process shows that the prompt carries everything a player needs.

Example:
    >>> from liars_env.rules import RuleSet
    >>> from liars_env.text.view import rules_text
    >>> rules = RuleSet.preset("perudo_calza", num_players=4)
    >>> rules_from_text(rules_text(rules)) == rules
    True
"""

from __future__ import annotations

import itertools
import re
from functools import lru_cache

import numpy as np

from liars_env.engine import GameState, LiarsDiceGame
from liars_env.observation import ObservationLayout, PlayerView, view_of
from liars_env.rules import (
    EXACT_CALLS,
    FIRST_OPENERS,
    HANDS,
    ONES_MODES,
    RAISE_RULES,
    WILD_FACES,
    RuleSet,
)
from liars_env.text.view import legal_moves_text, rules_text

_HEADER = re.compile(r"Liar's Dice for (\d+) players: each starts with (\d+) dic?e of (\d+) faces")


def _block(prompt: str, title: str) -> str:
    """The block of ``prompt`` that starts with the line ``title`` (up to a blank line)."""
    match = re.search(rf"(?m)^{re.escape(title)}\n(?:.+\n?)*", prompt)
    if match is None:
        raise ValueError(f"the prompt has no {title!r} block")
    return match.group(0).rstrip("\n")


def rules_from_text(prompt: str) -> RuleSet:
    """The rule set whose :func:`~liars_env.text.view.rules_text` is in ``prompt``.

    Raises:
        ValueError: if the prompt has no ``Rules:`` block, or no rule set gives it.
    """
    block = _block(prompt, "Rules:")
    header = _HEADER.search(block)
    if header is None:
        raise ValueError("the Rules: block does not say the table size")
    n, d, f = (int(g) for g in header.groups())
    rules = _rules_by_text(n, d, f).get(block)
    if rules is None:
        raise ValueError("no rule set has this Rules: block")
    return rules


@lru_cache(maxsize=32)
def _rules_by_text(n: int, d: int, f: int) -> dict[str, RuleSet]:
    """Every valid rule set of this size, by its ``Rules:`` block (the first one wins)."""
    out: dict[str, RuleSet] = {}
    choices = itertools.product(
        ONES_MODES, WILD_FACES, RAISE_RULES, (True, False), (False, True), EXACT_CALLS, HANDS,
        (False, True), FIRST_OPENERS,
    )  # fmt: skip
    for ones, wild, raise_rule, cap, palifico, exact, hand, single, first in choices:
        try:
            rules = RuleSet(
                num_players=n, dice_per_player=d, faces=f, ones=ones, wild_face=wild,
                raise_rule=raise_rule, bid_cap=cap, palifico=palifico, exact_call=exact,
                hand=hand, single_round=single, first_opener=first,
            )  # fmt: skip
        except ValueError:
            continue
        out.setdefault(rules_text(rules), rules)
    return out


def _need(pattern: str, text: str, what: str) -> re.Match:
    match = re.search(pattern, text, re.M)
    if match is None:
        raise ValueError(f"the prompt does not say {what}")
    return match


def view_from_text(prompt: str) -> PlayerView:
    """The acting seat's view, rebuilt from the prompt alone.

    Raises:
        ValueError: if a part of the position is missing, or the prompt's legal moves
            differ from the ones the engine computes for the position it describes.
    """
    rules = rules_from_text(prompt)
    position = _block(prompt, "Position:")
    seat = int(_need(r"^You are player (\d+)\.", position, "your seat").group(1))
    counts = _need(r"^Dice left: (.*); \d+ dice in play\.$", position, "the dice left").group(1)
    dice_left = []
    for s, entry in enumerate(counts.split(", ")):
        match = re.fullmatch(rf"player {s}(?: \(you\))?: (\d+|out)", entry)
        if match is None:
            raise ValueError(f"cannot read the dice left of player {s}: {entry!r}")
        dice_left.append(0 if match.group(1) == "out" else int(match.group(1)))
    own = _need(r"^Your dice: (.*)$", position, "your dice").group(1)
    dice = [] if own == "(none)" else [int(x) for x in own.split()]
    opened = _need(r"^This round was opened by player (\d+)\.(.*)$", position, "the opener")
    opener, palifico = int(opened.group(1)), "palifico round" in opened.group(2)
    bids = []
    listed = re.search(r"^Bids this round, in order: (.*)\.$", position, re.M)
    if listed:
        for entry in listed.group(1).split("; "):
            match = re.fullmatch(r"player (\d+): (\d+)x(\d+)", entry)
            if match is None:
                raise ValueError(f"cannot read the bid {entry!r}")
            bids.append(tuple(int(g) for g in match.groups()))
    game = _game(rules)
    hands = [list(dice) if s == seat else [1] * c for s, c in enumerate(dice_left)]
    state = GameState(
        dice=hands,
        dice_left=dice_left,
        current_player=seat,
        opener=opener,
        bids=bids,
        palifico=palifico,
        had_palifico=[False] * rules.num_players,
    )
    view = view_of(game, _layout(rules), state)
    stated = _need(r"^Legal moves: .*$", prompt, "the legal moves").group(0)
    if stated != legal_moves_text(view):
        raise ValueError(
            f"the prompt's legal moves {stated!r} differ from the position's "
            f"{legal_moves_text(view)!r}"
        )
    return view


@lru_cache(maxsize=32)
def _layout(rules: RuleSet) -> ObservationLayout:
    return ObservationLayout(rules)


@lru_cache(maxsize=32)
def _game(rules: RuleSet) -> LiarsDiceGame:
    return LiarsDiceGame(rules)


def legal_actions_of(view: PlayerView) -> np.ndarray:
    """The legal action ids of a view (a helper for servers and tests)."""
    return np.flatnonzero(view.mask)
