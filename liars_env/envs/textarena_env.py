"""Our game, any preset, as a TextArena environment (``reset``, ``step``, ``close``).

TextArena's agents are callables from an observation string to a reply string; its
loop is::

    env = LiarsDiceTextArena("perudo_calza")  # or ta.make("LiarsDiceRules-perudo_calza-v0")
    env.reset(num_players=3, seed=0)
    done = False
    while not done:
        player_id, observation = env.get_observation()
        done, info = env.step(agents[player_id](observation))
    rewards, game_info = env.close()

The observation is the whole prompt of the player's position
(:func:`liars_env.text.view.prompt_text`: the preset's rules, its dice, every dice count,
the bids, the last reveal, the legal moves), so no observation wrapper is needed. Moves are
read by :func:`liars_env.text.reader.read_move`: TextArena's own ``[Bid: 3, 4]`` and
``[Call]`` as well as ``3x4``, ``call``, ``exact`` and a ``Final answer:`` line.

Differences from TextArena's ``LiarsDice``, which are our rules': every preset's wild
faces, conversions, palifico and exact calls; and an **invalid move** is not an
elimination (our engine has no such rule): the player is shown the error and asked again,
and after ``max_invalid`` invalid replies in a row its move is the fallback of the text
agents (``call`` when a bid stands, else the lowest legal bid), counted in
``game_info``. Rewards follow TextArena's ranking rule: ``-1 + 2·rank/(N−1)`` with rank 0
for the first player out and ``N−1`` for the winner (players out together share a rank).

:func:`register_textarena_envs` adds ``LiarsDiceRules-<preset>-v0`` for every preset to
TextArena's registry (needs the ``textarena`` extra; this module itself does not import it).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from liars_env.agents.text_agent import fallback_action
from liars_env.engine import LiarsDiceGame
from liars_env.observation import ObservationLayout, PlayerView, view_of
from liars_env.rules import PRESETS, RuleSet, resolve_rules
from liars_env.text.reader import MoveError, read_move
from liars_env.text.view import move_text, prompt_text


class LiarsDiceTextArena:
    """A TextArena environment of one rule set (see the module docstring).

    Args:
        rules: A preset name or a RuleSet; ``reset`` sets the player count.
        max_invalid: Invalid replies in a row before the fallback move is played.
        **overrides: RuleSet fields, e.g. ``dice_per_player=3``.

    Raises:
        ValueError: for bad rules or ``max_invalid`` below 1.
    """

    def __init__(self, rules: RuleSet | str = "perudo", max_invalid: int = 2, **overrides: Any):
        if type(max_invalid) is not int or max_invalid < 1:
            raise ValueError(f"max_invalid must be a positive int, got {max_invalid!r}")
        self.base_rules, self.overrides, self.max_invalid = rules, overrides, max_invalid
        self.rules: RuleSet | None = None
        self.history: list[dict[str, Any]] = []

    def reset(self, num_players: int, seed: int | None = None) -> None:
        """Starts a game of ``num_players`` (rolls from ``seed``).

        Raises:
            ValueError: for a player count the rules do not allow.
        """
        self.rules = resolve_rules(
            self.base_rules, **{**self.overrides, "num_players": num_players}
        )
        self.game = LiarsDiceGame(self.rules)
        self.layout = ObservationLayout(self.rules)
        self.rng = np.random.default_rng(seed)
        self.state = self.game.new_game(self.rng)
        self.invalid_in_a_row = [0] * num_players
        self.invalid = [0] * num_players
        self.fallbacks = [0] * num_players
        self.error: str | None = None
        self.history = []

    def _view(self) -> PlayerView:
        return view_of(self.game, self.layout, self.state)

    def get_observation(self) -> tuple[int, str]:
        """``(player to act, its prompt)``; after an invalid reply, with the error."""
        text = prompt_text(self._view())
        if self.error:
            text += f"\n\nYour last reply could not be played: {self.error}"
        return self.state.current_player, text

    def step(self, action: str) -> tuple[bool, dict[str, Any]]:
        """Plays the reply ``action`` of the player to act; ``(done, info)``."""
        if self.state.is_over:
            raise ValueError("the game is over; call reset()")
        view, seat = self._view(), self.state.current_player
        info: dict[str, Any] = {}
        try:
            move = read_move(action, view)
            self.invalid_in_a_row[seat], self.error = 0, None
        except MoveError as exc:
            self.invalid[seat] += 1
            self.invalid_in_a_row[seat] += 1
            info["invalid_move"] = str(exc)
            if self.invalid_in_a_row[seat] < self.max_invalid:
                self.error = str(exc)
                self.history.append({"player": seat, "reply": action, "error": str(exc)})
                return False, info
            move = fallback_action(view)
            self.fallbacks[seat] += 1
            self.invalid_in_a_row[seat], self.error = 0, None
            info["fallback"] = move_text(view.codec, move)
        self.history.append({"player": seat, "reply": action, "move": move_text(view.codec, move)})
        result = self.game.apply(self.state, move, self.rng)
        if result is not None:
            info["reveal"] = dict(self.state.last_reveal or {})
        return self.state.is_over, info

    def close(self) -> tuple[dict[int, float], dict[int, dict[str, Any]]]:
        """``(rewards, game_info)`` per player, as TextArena's ``close`` returns them."""
        n = self.rules.num_players
        places = self.state.places() if self.state.is_over else [1] * n
        rewards = {p: -1.0 + 2.0 * (n - places[p]) / (n - 1) for p in range(n)}
        info = {
            p: {
                "place": places[p],
                "invalid_moves": self.invalid[p],
                "fallbacks": self.fallbacks[p],
                "winner": self.state.winner == p,
            }
            for p in range(n)
        }
        return rewards, info


def register_textarena_envs() -> list[str]:
    """Registers ``LiarsDiceRules-<preset>-v0`` for every preset with TextArena.

    Returns the ids (already registered ones are kept). Needs ``textarena``.
    """
    from textarena.envs.registration import ENV_REGISTRY, register

    ids = []
    for preset in PRESETS:
        env_id = f"LiarsDiceRules-{preset}-v0"
        if env_id not in ENV_REGISTRY:
            register(id=env_id, entry_point=LiarsDiceTextArena, rules=preset)
        ids.append(env_id)
    return ids
