"""Single-agent Gymnasium environment: one learner against bots or frozen policies.

========================  =============================================================
Import                    ``gymnasium.make("LiarsDice-v0", ...)`` after ``import
                          liars_env`` (or ``gymnasium.make("liars_env:LiarsDice-v0")``)
Class                     :class:`LiarsDiceEnv`
Agents                    1 learner; ``N−1`` opponents (agent specs or agent objects)
Number of players         2–8 (``num_players``, default 3)
Action shape              ``()`` (an int)
Action values             ``Discrete(N·D·F + 1)`` (+1 with an exact call)
Observation shape         ``(size,)``: the learner's observation vector
Observation values        ``[0, 1]`` (float32), layout v1 of :mod:`liars_env.observation`
Action mask               ``info["action_mask"]`` (int8) and :meth:`LiarsDiceEnv.action_masks`
Rewards                   ``+1`` win, ``−1/(N−1)`` eliminated, ``0`` otherwise
Render modes              ``"ansi"``, ``"rgb_array"`` (640×480 uint8, the learner is "you")
========================  =============================================================

Usage::

    import gymnasium, liars_env
    env = gymnasium.make("LiarsDice-v0", rules="perudo", num_players=3,
                         opponents=["bayes", "checkpoint:checkpoints/perudo_3p"])

**Actions** are the ids of :mod:`liars_env.actions` (the same as the PettingZoo env):
``(q−1)·F + (f−1)`` bids *q dice showing f*, ``N·D·F`` challenges, ``N·D·F + 1`` is the
exact call when the rules have one. Only the learner's own decisions are steps: after
:meth:`~LiarsDiceEnv.reset` and after every step the opponents play until it is the
learner's turn again, or until the episode ends.

**Opponents.** ``opponents`` is a list of ``N−1`` agent specs (anything
:func:`liars_env.agents.make_agent` accepts: ``"bayes"``,
``"probabilistic:bluff_rate=0.1"``, ``"checkpoint:PATH"``, ``"mypkg.bots:MyBot"``, …)
or agent objects (``name``, ``reset(seed)``, ``act(view)``), or a single spec or agent
used for every opponent seat; the default is ``"probabilistic"`` everywhere.
``opponents[k]`` plays the seat ``k + 1`` places clockwise from the learner, whichever
seat the learner has. A bot that returns an illegal action raises ``RuntimeError``.

**Seats.** ``seat=None`` (default) draws the learner's seat at every reset from the env's
seeded RNG; an int fixes it. The first opener is drawn at random as in every game.

**Rewards and episode end.** The rewards are the learner's share of the zero-sum game
reward: ``+1`` when it wins, ``loser_reward(N) = −1/(N−1)`` when it loses its last die
(by its own call or by an opponent's), ``0`` on every other step. The episode
*terminates* as soon as the learner is eliminated or the game is over; how the
opponents would finish the game without it does not matter to the learner. Episodes
are never truncated by the env (wrap it in ``TimeLimit`` or pass
``max_episode_steps`` to ``gymnasium.make`` if you want that). A game can only be
decided before the learner's first decision with one die each and ``spot_on`` calls;
such games are replayed with fresh dice, so ``reset`` never returns a finished episode.

**Illegal actions.** Every id of the action space is accepted by ``step``:
``illegal_action="penalize"`` (default) ends the episode with reward ``−1`` and
``info["illegal_action"] = True``; generic tools that sample the whole ``Discrete``
space (Gymnasium's and SB3's env checkers, plain PPO or DQN) then work unchanged and
learn to avoid such moves. ``illegal_action="raise"`` instead raises
:class:`liars_env.IllegalActionError` (a ``ValueError``) naming the action and the
rule it breaks; nothing changes and the learner may act again (useful to catch bugs
in masked agents). A value outside the action space (not an int id from 0 to
``num_actions − 1``) raises in both modes. With the mask (e.g. sb3-contrib's
``MaskablePPO``, which finds :meth:`~LiarsDiceEnv.action_masks` by itself) no illegal
action is ever chosen.

**Info.** Every ``reset`` and ``step`` info holds the same keys, all fixed-shape:

==================  =====================================================================
key                 value
==================  =====================================================================
``action_mask``     ``int8[num_actions]``: the learner's legal actions (all 0 at the end)
``seat``            the learner's seat (int)
``dice_left``       ``int64[N]``: dice per seat, in seat order
``round``           rounds finished so far (int)
``place``           the learner's finishing place (1 = won), 0 while it plays
``illegal_action``  whether the episode ended on an illegal action (bool)
==================  =====================================================================

The last reveal is kept as a :class:`~liars_env.RoundResult` in
:attr:`LiarsDiceEnv.last_result`, and the whole engine state in
:attr:`LiarsDiceEnv.game_state`.

**Seeding.** ``reset(seed=s)`` seeds everything: the learner's seat, the dice, the
first opener and every opponent (each gets ``agent.reset(seed)`` with a seed drawn from
the env's RNG), so the same seed and the same actions replay the same episode.

Version history:

* v0: first release.

Example:
    >>> import gymnasium
    >>> import liars_env.envs.gym_env
    >>> env = gymnasium.make("LiarsDice-v0", rules="perudo", num_players=3, seat=0)
    >>> obs, info = env.reset(seed=0)
    >>> obs.shape, info["action_mask"].shape, info["seat"]
    ((376,), (91,), 0)
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import gymnasium
import numpy as np
from gymnasium import spaces
from gymnasium.error import ResetNeeded
from gymnasium.utils import EzPickle

from liars_env.actions import as_action_id
from liars_env.agents.base import Agent, view_of
from liars_env.agents.registry import make_agent
from liars_env.engine import GameState, LiarsDiceGame, RoundResult
from liars_env.entry_points import ENV_ID as ENV_ID  # re-exported: the id lives there
from liars_env.entry_points import register_gymnasium_envs
from liars_env.envs.render import render_table
from liars_env.errors import IllegalActionError
from liars_env.observation import IncrementalEncoder, ObservationLayout
from liars_env.rules import RuleSet, loser_reward, resolve_rules

ILLEGAL_ACTION_MODES = ("penalize", "raise")
ILLEGAL_ACTION_REWARD = -1.0
"""Reward of an illegal action under ``illegal_action="penalize"``."""
_MAX_REDEALS = 1000


class LiarsDiceEnv(gymnasium.Env, EzPickle):
    """One learner against ``N−1`` opponents; see the module docstring for the spec.

    Args:
        rules: A preset name (see :data:`liars_env.PRESETS`) or a :class:`RuleSet`.
        opponents: ``N−1`` agent specs or agent objects, or one used for every
            opponent seat (default ``"probabilistic"``).
        seat: The learner's seat, or ``None`` to draw it at every reset.
        illegal_action: ``"penalize"`` (default) or ``"raise"``.
        render_mode: ``None``, ``"ansi"`` (text) or ``"rgb_array"`` (an image).
        **overrides: RuleSet fields, e.g. ``num_players=4`` or ``dice_per_player=2``.

    Raises:
        ValueError: for bad rules, opponents, seat or modes, naming the value and what
            is expected.

    Example:
        >>> env = LiarsDiceEnv("perudo", num_players=2, opponents="random", seat=1)
        >>> obs, info = env.reset(seed=3)
        >>> action = int(info["action_mask"].nonzero()[0][0])
        >>> obs, reward, terminated, truncated, info = env.step(action)
        >>> info["dice_left"].tolist(), info["place"]
        ([5, 5], 0)
    """

    metadata = {"render_modes": ["ansi", "rgb_array"], "render_fps": 2}

    def __init__(
        self,
        rules: RuleSet | str = "perudo",
        opponents: str | Agent | Sequence[str | Agent] | None = None,
        seat: int | None = None,
        illegal_action: str = "penalize",
        render_mode: str | None = None,
        **overrides: Any,
    ) -> None:
        super().__init__()
        EzPickle.__init__(self, rules, opponents, seat, illegal_action, render_mode, **overrides)
        if render_mode not in (None, *self.metadata["render_modes"]):
            raise ValueError(
                f"render_mode must be None, 'ansi' or 'rgb_array', got {render_mode!r}"
            )
        if illegal_action not in ILLEGAL_ACTION_MODES:
            raise ValueError(
                f"illegal_action must be 'penalize' or 'raise', got {illegal_action!r}"
            )
        self.rules = resolve_rules(rules, **overrides)
        n = self.rules.num_players
        if seat is not None and (type(seat) is not int or not 0 <= seat < n):
            raise ValueError(f"seat must be None (random) or a seat 0–{n - 1}, got {seat!r}")
        self.render_mode = render_mode
        self.illegal_action = illegal_action
        self.fixed_seat = seat
        self.game = LiarsDiceGame(self.rules)
        self.codec = self.game.codec
        self.layout = ObservationLayout(self.rules)
        self._encoder = IncrementalEncoder(self.layout)
        self.opponents: list[Agent] = _build_opponents(opponents, self.rules)
        self.observation_space = spaces.Box(0.0, 1.0, (self.layout.size,), np.float32)
        self.action_space = spaces.Discrete(self.codec.num_actions)
        self._loser_reward = loser_reward(n)
        self._zero_mask = np.zeros(self.codec.num_actions, dtype=np.int8)
        self.seat = 0 if seat is None else seat
        """The learner's seat in the current episode."""
        self.game_state: GameState | None = None
        """The engine state of the current game (``None`` before the first reset)."""
        self.last_result: RoundResult | None = None
        """The latest challenge or exact call of the episode, or ``None``."""
        self._seat_agents: list[Agent | None] = [None] * n
        self._mask = self._zero_mask
        self._done = True
        self._illegal = False

    # ---------------------------------------------------------------- gymnasium API
    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[np.ndarray, dict[str, Any]]:
        """Starts a game and plays the opponents up to the learner's first decision.

        Args:
            seed: Seeds the seat draw, the dice and the opponents.
            options: Unused (accepted for the Gymnasium API).

        Returns:
            The learner's observation and the info dict (see the module docstring).
        """
        super().reset(seed=seed)
        rng = self.np_random
        n = self.rules.num_players
        self.seat = int(rng.integers(n)) if self.fixed_seat is None else self.fixed_seat
        self._seat_agents = [None] * n
        for k, agent in enumerate(self.opponents):
            self._seat_agents[(self.seat + 1 + k) % n] = agent
        for agent in self.opponents:
            agent.reset(int(rng.integers(2**63)))
        for _ in range(_MAX_REDEALS):
            self.game_state = self.game.new_game(rng)
            self.last_result = None
            self._illegal = False
            self._play_opponents()
            if not self._over():
                break
        else:  # pragma: no cover - needs ~1000 games decided before the learner acts
            raise RuntimeError(f"{_MAX_REDEALS} games in a row ended before the learner acted")
        self._done = False
        self._mask = self.game.legal_mask(self.game_state)
        return self._observe(), self._info()

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        """Plays the learner's ``action``, then the opponents up to its next decision.

        Args:
            action: An action id (an int, a numpy integer or a one-element int array).

        Returns:
            ``(observation, reward, terminated, truncated, info)``; ``truncated`` is
            always ``False``.

        Raises:
            IllegalActionError: with ``illegal_action="raise"``, for an action that is
                not legal now; always, for a value outside the action space. Nothing
                changes and the learner may act again.
            ResetNeeded: when called before ``reset`` or after the episode ended.
        """
        if self._done:
            raise ResetNeeded("the episode is over (or never started); call reset()")
        state, game = self.game_state, self.game
        action = as_action_id(action)
        if not game.is_legal(state, action):
            if self.illegal_action == "raise" or not self._in_space(action):
                reason = game.illegal_reason(state, action)
                raise IllegalActionError(f"learner (seat {self.seat}): {reason}")
            self._done = self._illegal = True
            self._mask = self._zero_mask
            return self._observe(), ILLEGAL_ACTION_REWARD, True, False, self._info()
        result = game.apply(state, action, self.np_random, check=False)
        if result is not None:
            self.last_result = result
        self._play_opponents()
        reward = 0.0
        if self._over():
            self._done = True
            self._mask = self._zero_mask
            reward = 1.0 if state.winner == self.seat else self._loser_reward
        else:
            self._mask = game.legal_mask(state)
        return self._observe(), reward, self._done, False, self._info()

    def action_masks(self) -> np.ndarray:
        """The learner's legal actions now, as a bool array (all ``False`` at the end).

        sb3-contrib's ``MaskablePPO`` calls this method by itself (through wrappers and
        vector envs).
        """
        return self._mask.astype(bool)

    def render(self) -> str | np.ndarray | None:
        """The table, dice hidden but at a reveal: text (``"ansi"``) or an RGB image."""
        if self.render_mode is None:
            gymnasium.logger.warn("render() called without a render_mode; pass render_mode")
            return None
        if self.game_state is None:
            raise ResetNeeded("call reset() before render()")
        names = [f"player_{s}" for s in range(self.rules.num_players)]
        names[self.seat] = "you"
        if self.render_mode == "rgb_array":
            from liars_env.envs.drawing import draw_table

            return draw_table(self.game_state, self.game, names, self.last_result)
        return render_table(self.game_state, self.game, names, self.last_result)

    # ---------------------------------------------------------------- helpers
    def describe_action(self, action: int) -> str:
        """An action in words, e.g. ``"four 2s"`` or ``"challenge"``."""
        return self.codec.describe(int(action))

    def _in_space(self, action: Any) -> bool:
        return (
            isinstance(action, (int, np.integer))
            and not isinstance(action, (bool, np.bool_))
            and 0 <= action < self.codec.num_actions
        )

    def _over(self) -> bool:
        state = self.game_state
        return state.winner is not None or state.dice_left[self.seat] == 0

    def _play_opponents(self) -> None:
        """Lets the opponents act until the learner's turn or the episode's end."""
        state, game, layout = self.game_state, self.game, self.layout
        while state.winner is None and state.dice_left[self.seat]:
            seat = state.current_player
            if seat == self.seat:
                return
            agent = self._seat_agents[seat]
            action = agent.act(view_of(game, layout, state, seat))
            if not game.is_legal(state, action):
                raise RuntimeError(
                    f"opponent {getattr(agent, 'name', agent)!r} at seat {seat} played an "
                    f"illegal action: {game.illegal_reason(state, action)}"
                )
            result = game.apply(state, action, self.np_random, check=False)
            if result is not None:
                self.last_result = result

    def _observe(self) -> np.ndarray:
        obs = self._encoder.encode(self.game_state, self.seat)
        # float32 sums of 1/D can land a hair above 1 (ten dice of one face): clip.
        return np.minimum(obs, 1.0, out=obs)

    def _info(self) -> dict[str, Any]:
        state = self.game_state
        out = state.winner is not None or state.dice_left[self.seat] == 0
        place = state.places()[self.seat] if out else 0
        return {
            "action_mask": self._mask.copy(),
            "seat": self.seat,
            "dice_left": np.array(state.dice_left, dtype=np.int64),
            "round": state.round,
            "place": place,
            "illegal_action": self._illegal,
        }


def _build_opponents(opponents: Any, rules: RuleSet) -> list[Agent]:
    """Agents for the ``N−1`` opponent seats from specs and/or agent objects."""
    need = rules.num_players - 1
    if opponents is None:
        opponents = "probabilistic"
    if isinstance(opponents, str) or _is_agent(opponents):
        opponents = [opponents] * need
    if not isinstance(opponents, Sequence):
        raise ValueError(
            f"opponents must be an agent spec, an agent, or a list of {need} of them "
            f"(one per opponent seat), got {opponents!r}"
        )
    if len(opponents) != need:
        raise ValueError(
            f"opponents must hold {need} agents for {rules.num_players} players (one per "
            f"seat besides the learner), got {len(opponents)}: {list(opponents)!r}"
        )
    agents = []
    for item in opponents:
        if isinstance(item, str):
            agents.append(make_agent(item, rules))
        elif _is_agent(item):
            agents.append(item)
        else:
            raise ValueError(
                f"each opponent must be an agent spec (str) or an agent with act(view) and "
                f"reset(seed), got {item!r}"
            )
    return agents


def _is_agent(obj: Any) -> bool:
    return callable(getattr(obj, "act", None)) and callable(getattr(obj, "reset", None))


def register_envs() -> None:
    """Registers :data:`~liars_env.entry_points.ENV_ID` with Gymnasium (idempotent).

    ``import liars_env`` already arranges it (:mod:`liars_env.entry_points`); so does
    importing this module.
    """
    register_gymnasium_envs(gymnasium)


register_envs()
