"""Text rendering of the table as a spectator sees it (dice hidden until a reveal)."""

from __future__ import annotations

from collections.abc import Sequence

from liars_env.actions import describe_bid
from liars_env.engine import GameState, LiarsDiceGame, RoundResult
from liars_env.rules import counts_as_match


def _says(name: str, verb: str) -> str:
    """``name`` with ``verb`` agreeing: "player_1 loses", "you lose"."""
    if name.lower() != "you":
        return f"{name} {verb}"
    plural = {
        "challenges": "challenge",
        "calls": "call",
        "loses": "lose",
        "regains": "regain",
        "opens": "open",
        "is": "are",
    }
    head, _, rest = verb.partition(" ")
    return f"{name} {plural.get(head, head)}{' ' + rest if rest else ''}"


def _possessive(name: str) -> str:
    """The possessive of a name: "player_1's", but "your"."""
    return "your" if name.lower() == "you" else f"{name}'s"


def render_reveal(result: RoundResult, game: LiarsDiceGame, names: Sequence[str]) -> list[str]:
    """Lines describing a reveal: every hand, the count (wild ones marked ``*``), losses."""
    quantity, face = result.bid
    what = "challenges" if result.call == "challenge" else "calls exact on"
    lines = [
        f"{_says(names[result.caller], what)} {_possessive(names[result.bidder])} "
        f"{describe_bid(quantity, face)}"
    ]
    for seat, hand in result.dice.items():
        counted = seat in result.counted_seats
        shown = []
        for die in hand:
            match = counted and counts_as_match(game.rules, die, face, palifico=result.palifico)
            wild = match and die != face
            shown.append(f"[{die}]{'*' if wild else ''}" if match else f" {die} ")
        lines.append(f"  {names[seat]:>10}: {''.join(shown)}")
    lines.append(f"  count of {face}s: {result.count} (bid {quantity})")
    for seat in result.losers:
        out = (
            f" and {'are' if names[seat] == 'you' else 'is'} out"
            if seat in result.eliminated
            else ""
        )
        lines.append(f"  {_says(names[seat], 'loses')} a die{out}")
    for seat in result.gainers:
        lines.append(f"  {_says(names[seat], 'regains')} a die")
    if result.next_opener is not None:
        lines.append(f"  {_says(names[result.next_opener], 'opens')} the next round")
    return lines


def render_table(
    state: GameState,
    game: LiarsDiceGame,
    names: Sequence[str],
    last_result: RoundResult | None = None,
) -> str:
    """The whole table: the last reveal (if any), dice left, this round's bids, the turn."""
    lines: list[str] = []
    if last_result is not None:
        lines += render_reveal(last_result, game, names)
    header = f"Round {state.round + 1}" + (" (palifico)" if state.palifico else "")
    lines.append(header)
    for seat, count in enumerate(state.dice_left):
        hidden = "?" * count if count else "out"
        marker = " <" if seat == state.current_player and state.winner is None else ""
        lines.append(f"  {names[seat]:>10}: {hidden:<10} ({count} dice){marker}")
    for seat, quantity, face in state.bids:
        lines.append(f"  {names[seat]} bids {describe_bid(quantity, face)}")
    if state.winner is not None:
        lines.append(f"{names[state.winner]} wins")
    elif not state.bids:
        lines.append(f"  {names[state.current_player]} to open")
    return "\n".join(lines)
