"""The rule arguments every command shares (liars_env.cli.add_rule_arguments)."""

from __future__ import annotations

import argparse

import pytest

from liars_env.cli import add_rule_arguments


def _parsers():
    from liars_env.play.terminal import build_parser as play
    from liars_train.evaluation.tournament import build_parser as evaluate
    from liars_train.tools.exploit import build_parser as exploit
    from liars_train.tools.solve import build_parser as solve

    # (parser, default table size, takes --rule, arguments it requires besides these)
    return {
        "liars-play": (play(), 3, False, []),
        "liars-eval": (evaluate(), None, True, ["--agents", "random", "random"]),
        # liars-exploit: 3 seats for the RL best response, 2 for --method lbr, chosen in main
        "liars-exploit": (exploit(), None, True, ["--target", "random"]),
        "liars-solve": (solve(), 2, True, []),
    }


@pytest.mark.parametrize("command", ["liars-play", "liars-eval", "liars-exploit", "liars-solve"])
def test_every_command_declares_the_rule_arguments_alike(command):
    parser, players, takes_rule, required = _parsers()[command]
    args = parser.parse_args(required)
    assert (args.rules, args.players) == ("perudo", players)
    args = parser.parse_args([*required, "--rules", "sanford", "--players", "4"])
    assert (args.rules, args.players) == ("sanford", 4)
    if takes_rule:
        args = parser.parse_args([*required, "--rule", "faces=4", "--rule", "palifico=true"])
        assert args.rule == ["faces=4", "palifico=true"]
    else:
        assert "rule" not in vars(parser.parse_args(required))


def test_the_presets_are_named_in_the_help():
    parser = argparse.ArgumentParser()
    add_rule_arguments(parser)
    from liars_env.rules import PRESETS

    text = " ".join(parser.format_help().split())
    assert all(name in text for name in PRESETS)


@pytest.mark.parametrize("players", [1, 2.0, "3", True])
def test_a_bad_default_table_size_is_refused(players):
    with pytest.raises(ValueError, match="players must be an int of at least 2"):
        add_rule_arguments(argparse.ArgumentParser(), players=players)
