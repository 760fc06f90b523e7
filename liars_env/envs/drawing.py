"""The table as an RGB image (``render_mode="rgb_array"``), drawn with Pillow.

Seats sit around an oval table, clockwise from the bottom; each shows its name, its dice
(face down, or face up at a reveal) and its count. The centre shows the round, the
latest bids and, right after a call, what the reveal decided. The dice are shown only at
a reveal: from the call until the next round's opening bid, and at the end of the game.
Counted dice get a yellow frame and wild ones a ``*``.

Example:
    >>> import numpy as np
    >>> from liars_env import LiarsDiceGame, RuleSet
    >>> game = LiarsDiceGame(RuleSet.preset("perudo"))
    >>> state = game.new_game(np.random.default_rng(0))
    >>> image = draw_table(state, game, ["a", "b", "c"])
    >>> image.shape, image.dtype
    ((480, 640, 3), dtype('uint8'))
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from functools import lru_cache

import numpy as np
from PIL import Image, ImageDraw, ImageFont

from liars_env.actions import describe_bid
from liars_env.engine import GameState, LiarsDiceGame, RoundResult
from liars_env.rules import counts_as_match

WIDTH, HEIGHT = 640, 480
FELT, TABLE, EDGE = (22, 74, 46), (31, 110, 66), (120, 84, 48)
TEXT, MUTED, HIGHLIGHT, LOSS = (240, 240, 230), (150, 170, 155), (250, 210, 60), (230, 90, 80)
DIE, DIE_BACK, PIP = (245, 245, 240), (60, 60, 70), (20, 20, 20)


@lru_cache(maxsize=4)
def _font(size: int) -> ImageFont.ImageFont:
    try:
        return ImageFont.load_default(size=size)
    except TypeError:  # Pillow < 10.1 has one bitmap size
        return ImageFont.load_default()


def draw_table(
    state: GameState,
    game: LiarsDiceGame,
    names: Sequence[str],
    last_result: RoundResult | None = None,
) -> np.ndarray:
    """The table as a spectator sees it, as an ``(480, 640, 3)`` uint8 array.

    Args:
        state: The game.
        game: Its rules (for which dice count at a reveal).
        names: One name per seat.
        last_result: The latest reveal, shown until the next round's opening bid.

    Returns:
        A fresh RGB image.
    """
    image = Image.new("RGB", (WIDTH, HEIGHT), FELT)
    draw = ImageDraw.Draw(image)
    cx, cy, rx, ry = WIDTH / 2, HEIGHT / 2 - 10, 235, 150
    draw.ellipse((cx - rx, cy - ry, cx + rx, cy + ry), fill=TABLE, outline=EDGE, width=8)
    reveal = last_result if last_result is not None and (not state.bids or state.is_over) else None
    n = len(names)
    for seat in range(n):
        angle = math.pi / 2 + 2 * math.pi * seat / n  # seat 0 at the bottom, clockwise
        x = cx + (rx + 20) * math.cos(angle) * 0.95
        y = cy + (ry + 45) * math.sin(angle)
        _draw_seat(draw, state, game, names, seat, (x, y), reveal)
    _draw_centre(draw, state, names, (cx, cy), reveal)
    return np.asarray(image, dtype=np.uint8).copy()


def _draw_seat(
    draw: ImageDraw.ImageDraw,
    state: GameState,
    game: LiarsDiceGame,
    names: Sequence[str],
    seat: int,
    at: tuple[float, float],
    reveal: RoundResult | None,
) -> None:
    x, y = at
    count = state.dice_left[seat]
    to_act = seat == state.current_player and not state.is_over
    won = state.winner == seat
    colour = HIGHLIGHT if to_act or won else (TEXT if count else MUTED)
    label = f"{names[seat]}  ({count})" if count else f"{names[seat]}  (out)"
    if won:
        label += "  wins"
    font = _font(15)
    width = draw.textlength(label, font=font)
    draw.text((x - width / 2, y - 28), label, fill=colour, font=font)
    if to_act:
        draw.rectangle((x - width / 2 - 4, y - 30, x + width / 2 + 4, y - 10), outline=HIGHLIGHT)
    shown = reveal.dice.get(seat) if reveal is not None else None
    faces = list(shown) if shown is not None else [0] * count
    size, gap = 22, 4
    left = x - (len(faces) * (size + gap) - gap) / 2
    for i, face in enumerate(faces):
        box = (left + i * (size + gap), y - 6, left + i * (size + gap) + size, y - 6 + size)
        if not face:
            draw.rounded_rectangle(box, radius=4, fill=DIE_BACK, outline=MUTED)
            continue
        counted = reveal is not None and seat in reveal.counted_seats
        bid_face = reveal.bid[1] if reveal is not None else 0
        match = counted and counts_as_match(game.rules, face, bid_face, palifico=reveal.palifico)
        draw.rounded_rectangle(
            box, radius=4, fill=DIE, outline=HIGHLIGHT if match else MUTED, width=3 if match else 1
        )
        text = f"{face}*" if match and face != bid_face else str(face)
        font = _font(13)
        tw = draw.textlength(text, font=font)
        draw.text((box[0] + (size - tw) / 2, box[1] + 3), text, fill=PIP, font=font)
    if reveal is not None and seat in reveal.losers:
        draw.text((x - 30, y + 20), "loses a die", fill=LOSS, font=_font(13))
    elif reveal is not None and seat in reveal.gainers:
        draw.text((x - 34, y + 20), "regains a die", fill=HIGHLIGHT, font=_font(13))


def _draw_centre(
    draw: ImageDraw.ImageDraw,
    state: GameState,
    names: Sequence[str],
    at: tuple[float, float],
    reveal: RoundResult | None,
) -> None:
    cx, cy = at
    lines: list[tuple[str, tuple[int, int, int]]] = []
    header = f"Round {state.round + 1}" + ("  palifico" if state.palifico else "")
    lines.append((header, MUTED))
    if reveal is not None:
        quantity, face = reveal.bid
        what = "challenges" if reveal.call == "challenge" else "calls exact on"
        lines.append((f"{names[reveal.caller]} {what}", TEXT))
        lines.append((f"{names[reveal.bidder]}'s {describe_bid(quantity, face)}", TEXT))
        lines.append((f"count: {reveal.count}", HIGHLIGHT))
    for bidder, quantity, face in state.bids[-4:]:
        lines.append((f"{names[bidder]}: {describe_bid(quantity, face)}", TEXT))
    if state.winner is not None:
        lines.append((f"{names[state.winner]} wins the game", HIGHLIGHT))
    elif not state.bids:
        lines.append((f"{names[state.current_player]} to open", MUTED))
    font = _font(16)
    top = cy - 11 * len(lines)
    for i, (text, colour) in enumerate(lines):
        width = draw.textlength(text, font=font)
        draw.text((cx - width / 2, top + 22 * i), text, fill=colour, font=font)
