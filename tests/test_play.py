"""liars-play: plain-word input, re-prompts, a whole scripted game, clean exits."""

from __future__ import annotations

import io
import itertools

import pytest

from liars_env import ActionCodec, RuleSet
from liars_env.play import main
from liars_env.text.moves import ParseError, parse_move

CODEC = ActionCodec(RuleSet.preset("perudo_calza"))


@pytest.mark.parametrize(
    "text, expected",
    [
        ("4 3s", CODEC.encode_bid(4, 3)),
        ("4x3", CODEC.encode_bid(4, 3)),
        ("4 x 3", CODEC.encode_bid(4, 3)),
        ("four threes", CODEC.encode_bid(4, 3)),
        ("4 3", CODEC.encode_bid(4, 3)),
        ("Four 3's", CODEC.encode_bid(4, 3)),
        ("twelve sixes", CODEC.encode_bid(12, 6)),
        ("1 one", CODEC.encode_bid(1, 1)),
        ("challenge", CODEC.challenge),
        ("LIAR", CODEC.challenge),
        ("dudo", CODEC.challenge),
        ("calza", CODEC.exact),
        ("spot on", CODEC.exact),
        ("exact", CODEC.exact),
        ("help", "help"),
        ("quit", "quit"),
    ],
)
def test_parse_move(text, expected):
    assert parse_move(text, CODEC) == expected


@pytest.mark.parametrize(
    "text, message",
    [
        ("banana", "not a move"),
        ("4 7s", "faces run from 1 to 6"),
        ("16 2s", "quantities run from 1 to 15"),
        ("", "not a move"),
    ],
)
def test_parse_errors(text, message):
    with pytest.raises(ParseError, match=message):
        parse_move(text, CODEC)


def test_no_exact_call_without_the_rule():
    with pytest.raises(ParseError, match="no exact call"):
        parse_move("calza", ActionCodec(RuleSet.preset("perudo")))


def run(args, lines, capsys):
    code = main(args, stdin=io.StringIO("".join(f"{line}\n" for line in lines)))
    return code, capsys.readouterr().out


def test_bad_input_reprompts_and_quit_exits_zero(capsys):
    code, out = run(
        ["--seed", "1", "--opponents", "random"],
        ["banana", "1 9s", "challenge", "help", "quit"],
        capsys,
    )
    assert code == 0
    assert "not a move: 'banana'" in out
    assert "faces run from 1 to 6" in out
    assert "Moves:" in out and "Bye." in out
    assert out.count("> ") >= 5


def test_illegal_bid_gets_the_rule_and_the_minimum_raise(capsys):
    code, out = run(
        ["--seed", "2", "--seat", "1", "--opponents", "probabilistic"], ["1 2s", "quit"], capsys
    )
    assert code == 0
    assert "Not allowed:" in out and "Minimum raises:" in out


def test_a_full_scripted_game_reaches_its_end(capsys):
    # always challenge (or open with a low bid): the game must end with a finishing order
    moves = itertools.islice(itertools.cycle(["challenge", "1 2s", "2 2s", "3 2s", "4 2s"]), 400)
    code, out = run(["--seed", "3", "--players", "2", "--opponents", "random"], list(moves), capsys)
    assert code == 0
    assert "Game over. Finishing order:" in out
    assert "count of" in out and "loses a die" in out and "opens the next round" in out


def test_end_of_input_exits_cleanly(capsys):
    code, out = run(["--seed", "4"], [], capsys)
    assert code == 0 and "(end of input)" in out


def test_bad_arguments(capsys):
    assert main(["--rules", "peruda"], stdin=io.StringIO("")) == 2
    assert "unknown preset" in capsys.readouterr().out
    assert main(["--opponents", "robot"], stdin=io.StringIO("")) == 2
    assert "unknown agent spec 'robot'" in capsys.readouterr().out


def test_piped_moves_are_echoed_and_the_header_says_the_rules_in_words(capsys):
    code, out = run(
        ["--seed", "3", "--opponents", "probabilistic", "belief"], ["challenge", "quit"], capsys
    )
    assert code == 0
    assert "> challenge" in out  # the transcript shows your own move
    assert "Seats, clockwise: you (seat 0), player_1: probabilistic, player_2: belief." in out
    assert (
        "1s are wild" in out
        and "ones wild_convertible" not in out
        and "exact call: none" not in out
    )


def test_the_reveal_lines_up_whatever_the_specs(capsys):
    import re

    moves = itertools.islice(itertools.cycle(["challenge", "1 2s"]), 60)
    spec = "probabilistic:bluff_rate=0.1,challenge_threshold=0.4"
    code, out = run(["--seed", "5", "--opponents", spec, "belief"], list(moves), capsys)
    hands = [line for line in out.splitlines() if re.match(r"^ +(you|player_\d): [ \[]", line)]
    assert code == 0 and len(hands) >= 3
    assert len({line.index(":") for line in hands}) == 1  # the colons form one column


def test_every_option_of_liars_play_has_help(capsys):
    with pytest.raises(SystemExit):
        main(["--help"], stdin=io.StringIO(""))
    text = " ".join(capsys.readouterr().out.split())
    assert "--players PLAYERS players at the table" in text
    assert "--seed SEED seeds the dice and the bots" in text


def test_jokers_terminal_offers_ones_as_the_lowest_face_and_names_illegal_ones(capsys):
    # seed 5: the random opponent opens "five 3s"; "one 1" is then too low
    code, out = run(
        ["--rules", "jokers", "--players", "2", "--seed", "5", "--opponents", "random"],
        ["1 1s", "quit"],
        capsys,
    )
    out = " ".join(out.split())
    assert code == 0 and "1s are jokers: they count toward bids on every other face" in out
    assert "a raise (six 1s, six 2s, six 3s, five 4s" in out  # ones offered, lowest first
    assert (
        "Not allowed: bid one 1 (action 0): the current bid is five 3s; raise a higher "
        "quantity, or the same quantity with a higher face. Minimum raises: six 1s" in out
    )
