"""PettingZoo AEC environment for Liar's Dice / Perudo (a thin adapter over the engine).

========================  =============================================================
Import                    ``from liars_env import liars_dice_v1`` (or ``liars_env.env``)
Actions                   Discrete; one fixed space per env (see below)
Parallel API              Yes, through ``pettingzoo.utils.turn_based_aec_to_parallel``
Manual control            ``liars-play`` (terminal)
Agents                    ``agents = ['player_0', …, 'player_{N-1}']`` (clockwise)
Number of agents          2–8, all in ``agents`` until the game ends
Action shape              ``(1,)``
Action values             ``Discrete(N·D·F + 1)`` (+1 with an exact call)
Observation shape         ``{"observation": (size,), "action_mask": (num_actions,)}``
Observation values        ``observation`` in [0, 1] (float32); ``action_mask`` 0/1 (int8)
State shape               ``(size + (N−1)·F + N,)``, values in [0, 1] (float32)
Render modes              ``"ansi"``, ``"human"``, ``"rgb_array"`` (``render_fps`` 2)
========================  =============================================================

**Actions.** Id ``(q−1)·F + (f−1)`` bids *q dice showing f*; id ``N·D·F`` challenges the
previous bid; id ``N·D·F + 1`` is the exact call when ``exact_call`` is ``spot_on`` or
``calza``. Use :meth:`raw_env.bid_action`, :attr:`raw_env.challenge_action`,
:attr:`raw_env.exact_action` and :meth:`raw_env.describe_action` instead of arithmetic.

**Observations.** Seat-relative; layout in :mod:`liars_env.observation` (version
:data:`~liars_env.observation.OBSERVATION_VERSION`). The ``action_mask`` is all zero for
every agent but the one to act.

**Eliminations.** An eliminated player stays in ``agents`` and is skipped in the turn
order: ``agent_selection`` is always a player with dice and at least one legal action,
until the game ends. Then every agent terminates at once and, as in PettingZoo's classic
games, each is stepped with ``None`` to leave ``agents``. This is what generic clients
(SB3 wrappers, TorchRL, Tianshou, RLlib, ``turn_based_aec_to_parallel``) expect.

**Rewards.** Zero-sum: the winner gets +1 and every other player −1/(N−1). A player's
−1/(N−1) is in ``rewards`` at the step that eliminates it (its ``infos`` say
``eliminated``); ``last()`` reports it to that player when it is stepped with ``None``
at the end. A seat that starts with no dice (``dice_left`` reset option) has already
lost: its −1/(N−1) is in its cumulative reward from the reset. With
``illegal_action="penalize"`` an illegal action ends the game: the offender gets −1 and
the players still in share what keeps the game zero-sum.

**Info.** Every agent's info has the same keys and shapes at every step (fresh dicts,
never changed after ``last()`` returned them):

* ``dice_left``: int64 array, dice per seat in seat order;
* ``eliminated``: whether this agent is out;
* ``round_over``: whether this step settled a call (a reveal);
* ``dice_change``: dice this agent lost (−1) or regained (+1) at this step;
* ``illegal_action``: whether the game ended on an illegal action at this step
  (``illegal_action="penalize"``; the reason is :attr:`raw_env.last_illegal`).

The whole reveal (every hand, the count, losers, next opener) is
:attr:`raw_env.last_round` (a dict, agent names) and ``raw_env.last_result`` (the
engine's :class:`~liars_env.engine.RoundResult`); ``rich_info=True`` also puts that dict
in ``infos[agent]["round_result"]`` at each reveal (variable-length: not for fixed-shape
buffers).

**State.** ``state()`` is the global state, for centralized critics: the observation of
``player_0`` (absolute seats, its own dice) followed by the dice of seats 1…N−1 (count per
face ÷ D) and a one-hot of the player to act (all zero once the game is over).
``state_space`` declares it.

**Reset options.** ``dice`` (faces per seat for the first round), ``dice_left`` (starting
dice per seat; 0 = already out), ``first_player`` (an agent name).

Version history:

* v1: eliminated players stay in ``agents`` until the game ends (v0 terminated and removed
  them at once); fixed-shape infos (the reveal moved to ``last_round`` / ``rich_info``);
  ``state()`` and ``state_space``; the engine state moved from ``raw_env.state`` to
  ``raw_env.game_state``; ``rgb_array`` rendering; ``render_fps``.
* v0: first release.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
from gymnasium import spaces
from gymnasium.utils import EzPickle
from pettingzoo import AECEnv
from pettingzoo.utils import wrappers

from liars_env.actions import as_action_id
from liars_env.engine import GameState, LiarsDiceGame, RoundResult
from liars_env.envs.render import render_table
from liars_env.errors import IllegalActionError
from liars_env.observation import OBSERVATION_VERSION, IncrementalEncoder, ObservationLayout
from liars_env.rules import RuleSet, loser_reward, resolve_rules

ILLEGAL_ACTION_MODES = ("raise", "penalize")
RESET_OPTIONS = ("dice", "dice_left", "first_player")
INFO_KEYS = ("dice_left", "eliminated", "round_over", "dice_change", "illegal_action")
"""The keys of every agent's info, at every step."""


def env(
    rules: RuleSet | str = "perudo",
    render_mode: str | None = None,
    illegal_action: str = "raise",
    rich_info: bool = False,
    **overrides: Any,
) -> AECEnv:
    """The wrapped Liar's Dice AEC env.

    Only PettingZoo's ``OrderEnforcingWrapper`` is applied: the raw env already rejects
    out-of-range and illegal actions with :class:`~liars_env.IllegalActionError`, so the
    ``assert``-based bounds wrapper and the illegal-move terminator would only add cost.

    Args:
        rules: A preset name (see :data:`liars_env.PRESETS`) or a :class:`RuleSet`.
        render_mode: ``None``, ``"ansi"`` (``render()`` returns a string), ``"human"``
            (``render()`` prints it, and the table is printed after every step) or
            ``"rgb_array"`` (``render()`` returns an ``(H, W, 3)`` uint8 image).
        illegal_action: ``"raise"`` (default) or ``"penalize"``.
        rich_info: Also put the whole reveal in ``infos[agent]["round_result"]``.
        **overrides: RuleSet fields, e.g. ``num_players=4``.

    Example:
        >>> e = env("perudo", num_players=2)
        >>> e.reset(seed=1)
        >>> e.agent_selection in e.agents
        True
    """
    return _OrderEnforcingWrapper(
        raw_env(
            rules,
            render_mode=render_mode,
            illegal_action=illegal_action,
            rich_info=rich_info,
            **overrides,
        )
    )


class _OrderEnforcingWrapper(wrappers.OrderEnforcingWrapper):
    """PettingZoo's order enforcer with a direct ``last()``.

    The inherited ``last()``, ``step()`` and the ``agent_iter`` loop read attributes
    through ``__getattr__`` chains on every turn; after ``reset()`` these ask the raw env
    directly. Behaviour is unchanged.
    """

    def last(self, observe: bool = True) -> tuple:
        """See :meth:`raw_env.last`."""
        if not self._has_reset:
            return super().last(observe)
        return self.env.last(observe)

    def step(self, action: int | None) -> None:
        """See :meth:`raw_env.step`; the order checks of the parent, without its lookups."""
        if self._has_reset and self.env.agents:
            self._has_updated = True
            self.env.step(action)
        else:
            super().step(action)

    @property
    def agents(self) -> list[str]:
        """The raw env's ``agents`` (read directly: ``agent_iter`` asks every turn)."""
        if not self._has_reset:
            raise AttributeError("agents cannot be accessed before reset")
        return self.env.agents

    @property
    def agent_selection(self) -> str:
        """The raw env's ``agent_selection`` (read directly, as :attr:`agents`)."""
        if not self._has_reset:
            raise AttributeError("agent_selection cannot be accessed before reset")
        return self.env.agent_selection


class raw_env(AECEnv, EzPickle):  # noqa: N801 - PettingZoo's naming convention
    """The unwrapped Liar's Dice AEC env; see the module docstring for the spec."""

    metadata = {
        "render_modes": ["ansi", "human", "rgb_array"],
        "name": "liars_dice_v1",
        "is_parallelizable": False,
        "render_fps": 2,
    }

    def __init__(
        self,
        rules: RuleSet | str = "perudo",
        render_mode: str | None = None,
        illegal_action: str = "raise",
        rich_info: bool = False,
        **overrides: Any,
    ) -> None:
        EzPickle.__init__(self, rules, render_mode, illegal_action, rich_info, **overrides)
        super().__init__()
        if render_mode not in (None, *self.metadata["render_modes"]):
            raise ValueError(
                f"render_mode must be None or one of {self.metadata['render_modes']}, "
                f"got {render_mode!r}"
            )
        if illegal_action not in ILLEGAL_ACTION_MODES:
            raise ValueError(
                f"illegal_action must be 'raise' or 'penalize', got {illegal_action!r}"
            )
        if not isinstance(rich_info, bool):
            raise ValueError(f"rich_info must be True or False, got {rich_info!r}")
        self.rules = resolve_rules(rules, **overrides)
        self.render_mode = render_mode
        self.illegal_action = illegal_action
        self.rich_info = rich_info
        self.game = LiarsDiceGame(self.rules)
        self.codec = self.game.codec
        self.layout = ObservationLayout(self.rules)
        self._encoder = IncrementalEncoder(self.layout)
        self.observation_version = OBSERVATION_VERSION

        n, f = self.rules.num_players, self.rules.faces
        self.possible_agents = [f"player_{i}" for i in range(n)]
        self._seat = {agent: i for i, agent in enumerate(self.possible_agents)}
        num_actions = self.codec.num_actions
        self.action_spaces = {a: spaces.Discrete(num_actions) for a in self.possible_agents}
        self.observation_spaces = {
            a: spaces.Dict(
                {
                    "observation": spaces.Box(0.0, 1.0, (self.layout.size,), np.float32),
                    "action_mask": spaces.Box(0, 1, (num_actions,), np.int8),
                }
            )
            for a in self.possible_agents
        }
        self.state_space = spaces.Box(0.0, 1.0, (self.layout.size + (n - 1) * f + n,), np.float32)
        self._zero_mask = np.zeros(num_actions, dtype=np.int8)
        self._rng: np.random.Generator | None = None
        self.game_state: GameState | None = None
        self.last_result: RoundResult | None = None
        self.last_illegal: str | None = None
        """Why the game ended on an illegal action (``illegal_action="penalize"``)."""

    # ---------------------------------------------------------------- action codec
    def bid_action(self, quantity: int, face: int) -> int:
        """Action id of bid ``(quantity, face)``: ``bid_action(4, 2)`` bids four 2s."""
        return self.codec.encode_bid(quantity, face)

    @property
    def challenge_action(self) -> int:
        """Action id of a challenge."""
        return self.codec.challenge

    @property
    def exact_action(self) -> int | None:
        """Action id of the exact call, or ``None`` when ``exact_call == "none"``."""
        return self.codec.exact

    def describe_action(self, action: int) -> str:
        """An action in words, e.g. ``"four 2s"`` or ``"challenge"``."""
        return self.codec.describe(int(action))

    # ---------------------------------------------------------------- spaces
    def observation_space(self, agent: str) -> spaces.Space:
        """The (shared-shape) observation space of ``agent``."""
        return self.observation_spaces[agent]

    def action_space(self, agent: str) -> spaces.Space:
        """The (shared-shape) action space of ``agent``."""
        return self.action_spaces[agent]

    # ---------------------------------------------------------------- public state
    @property
    def dice_left(self) -> dict[str, int]:
        """Dice per agent (0 once out)."""
        self._require_reset()
        return dict(zip(self.possible_agents, self.game_state.dice_left, strict=True))

    @property
    def last_round(self) -> dict[str, Any] | None:
        """The latest reveal as a dict with agent names (see :meth:`round_result_info`)."""
        return None if self.last_result is None else self.round_result_info(self.last_result)

    def seat_of(self, agent: str) -> int:
        """Seat index of ``agent``."""
        return self._seat[agent]

    def state(self) -> np.ndarray:
        """The global state vector (see the module docstring), a fresh array.

        Example:
            >>> e = raw_env("perudo", num_players=2)
            >>> e.reset(seed=0)
            >>> e.state().shape == e.state_space.shape
            True
        """
        self._require_reset()
        state = self.game_state
        rules = self.rules
        n, f = rules.num_players, rules.faces
        size = self.layout.size
        out = np.zeros(self.state_space.shape, dtype=np.float32)
        out[:size] = self.layout.encode(state, 0)
        inv_d = 1.0 / rules.dice_per_player
        for seat in range(1, n):
            base = size + (seat - 1) * f - 1
            for die in state.dice[seat]:
                out[base + die] += 1.0
        out[size : size + (n - 1) * f] *= inv_d
        if state.winner is None:
            out[size + (n - 1) * f + state.current_player] = 1.0
        return out

    def _require_reset(self) -> None:
        if self.game_state is None:
            raise RuntimeError("call reset() before using the environment")

    # ---------------------------------------------------------------- AEC API
    def reset(self, seed: int | None = None, options: dict | None = None) -> None:
        """Starts a new game.

        Args:
            seed: Seeds the dice and the first opener; ``None`` continues the env's RNG
                (or draws fresh entropy on the first reset).
            options: Optional ``dice``, ``dice_left``, ``first_player`` (see module doc).

        Raises:
            ValueError: for unknown or invalid options; the env is left as it was.
        """
        kwargs = self._parse_options(options)
        rng = self._rng if seed is None and self._rng is not None else np.random.default_rng(seed)
        state = self.game.new_game(rng, **kwargs)  # raises before anything changes
        self._rng = rng
        self.game_state = state
        self.last_result = None
        self.last_illegal = None
        self.agents = list(self.possible_agents)
        self.rewards = dict.fromkeys(self.agents, 0.0)
        penalty = loser_reward(self.rules.num_players)
        self._cumulative_rewards = {
            a: 0.0 if d else penalty for a, d in zip(self.agents, state.dice_left, strict=True)
        }
        self.terminations = dict.fromkeys(self.agents, False)
        self.truncations = dict.fromkeys(self.agents, False)
        self._quiet_infos = self._make_infos(None)
        self.infos = self._quiet_infos
        self.agent_selection = self.possible_agents[state.current_player]
        self._skip_agent_selection = None
        self._round_ended = False
        if self.render_mode == "human":
            self.render()

    def last(self, observe: bool = True) -> tuple:
        """Observation, cumulative reward, termination, truncation and info of the agent to act."""
        agent = self.agent_selection
        return (
            self.observe(agent) if observe else None,
            self._cumulative_rewards[agent],
            self.terminations[agent],
            self.truncations[agent],
            self.infos[agent],
        )

    def _parse_options(self, options: dict | None) -> dict[str, Any]:
        if options is None:
            return {}
        if not isinstance(options, dict):
            raise ValueError(f"reset options must be a dict, got {options!r}")
        unknown = sorted(map(str, set(options) - set(RESET_OPTIONS)))
        if unknown:
            # A warning, not an error: PettingZoo's api_test resets with a foreign key.
            warnings.warn(
                f"ignoring unknown reset option(s) {unknown}; known: {list(RESET_OPTIONS)}",
                stacklevel=3,
            )
        kwargs = {k: options[k] for k in ("dice", "dice_left") if options.get(k) is not None}
        first = options.get("first_player")
        if first is not None:
            if not isinstance(first, str) or first not in self._seat:
                raise ValueError(
                    f"first_player must be one of {self.possible_agents}, got {first!r}"
                )
            kwargs["first_player"] = self._seat[first]
        return kwargs

    def observe(self, agent: str) -> dict[str, np.ndarray]:
        """What ``agent`` knows now, plus its action mask (fresh arrays each call)."""
        state = self.game_state
        if state is None:
            self._require_reset()
        if agent == self.agent_selection and not self.terminations.get(agent, True):
            mask = self.game.legal_mask(state)
        else:
            mask = self._zero_mask.copy()
        return {"observation": self._encoder.encode(state, self._seat[agent]), "action_mask": mask}

    def step(self, action: int | None) -> None:
        """Acts for ``agent_selection``; once the game is over, agents are stepped with ``None``.

        Raises:
            IllegalActionError: for an illegal action with ``illegal_action="raise"``
                (nothing changes; the same agent may act again).
        """
        agent = self.agent_selection
        if self.terminations[agent] or self.truncations[agent]:
            self._was_dead_step(action)
            return
        action = as_action_id(action)  # the spec's action shape (1,): np.array([id])
        state = self.game_state
        if not self.game.is_legal(state, action):
            reason = self.game.illegal_reason(state, action)
            if self.illegal_action == "raise":
                raise IllegalActionError(f"{agent}: {reason}")
            self._penalize(agent, reason)
            return
        self._cumulative_rewards[agent] = 0.0
        if self._round_ended:  # rewards and infos only change at calls: reset lazily
            self.rewards = dict.fromkeys(self.agents, 0.0)
            self.infos = self._quiet_infos
            self._round_ended = False
        result = self.game.apply(state, action, self._rng, check=False)
        self.agent_selection = self.possible_agents[state.current_player]
        if result is not None:
            self._finish_round(result)
            self._accumulate_rewards()
            if state.winner is not None:
                self._deads_step_first()
        if self.render_mode == "human":
            self.render()

    def _make_infos(self, result: RoundResult | None) -> dict[str, dict[str, Any]]:
        """Fresh fixed-shape infos for every agent; ``result`` marks a reveal."""
        dice_left = self.game_state.dice_left
        dice_left_array = np.array(dice_left, dtype=np.int64)
        over = result is not None
        gainers, losers = (result.gainers, result.losers) if over else ((), ())
        return {
            agent: {
                "dice_left": dice_left_array.copy(),
                "eliminated": dice_left[seat] == 0,
                "round_over": over,
                "dice_change": (seat in gainers) - (seat in losers),
                "illegal_action": False,
            }
            for seat, agent in enumerate(self.possible_agents)
        }

    def _finish_round(self, result: RoundResult) -> None:
        self._round_ended = True
        self.last_result = result
        names = self.possible_agents
        penalty = loser_reward(self.rules.num_players)
        self.rewards = dict.fromkeys(self.agents, 0.0)
        for seat in result.eliminated:
            self.rewards[names[seat]] = penalty
        if self.game_state.winner is not None:
            self.rewards[names[self.game_state.winner]] = 1.0
            self.terminations = dict.fromkeys(self.agents, True)
        self.infos = self._make_infos(result)
        self._quiet_infos = self._make_infos(None)
        if self.rich_info:
            info = self.round_result_info(result)
            for agent in self.agents:
                self.infos[agent]["round_result"] = info

    def round_result_info(self, result: RoundResult) -> dict[str, Any]:
        """A :class:`RoundResult` with agent names (see :attr:`last_round`)."""
        names = self.possible_agents
        return {
            "call": result.call,
            "bid": result.bid,
            "bidder": names[result.bidder],
            "caller": names[result.caller],
            "dice": {names[s]: list(h) for s, h in result.dice.items()},
            "count": result.count,
            "losers": [names[s] for s in result.losers],
            "gainers": [names[s] for s in result.gainers],
            "eliminated": [names[s] for s in result.eliminated],
            "dice_left": dict(zip(names, result.dice_left, strict=True)),
            "next_opener": None if result.next_opener is None else names[result.next_opener],
        }

    def _penalize(self, offender: str, reason: str) -> None:
        """Ends the game: the offender gets −1, the others still in keep it zero-sum."""
        n = self.rules.num_players
        in_game = [a for a in self.agents if self.game_state.dice_left[self._seat[a]] > 0]
        already_out = n - len(in_game)
        others = [a for a in in_game if a != offender]
        share = (1.0 - already_out * loser_reward(n)) / len(others)
        self._cumulative_rewards[offender] = 0.0
        self.rewards = dict.fromkeys(self.agents, 0.0)
        for agent in others:
            self.rewards[agent] = share
        self.rewards[offender] = -1.0
        self.last_illegal = f"{offender}: {reason}"
        self.infos = self._make_infos(None)
        for info in self.infos.values():
            info["illegal_action"] = True
        self._round_ended = True
        self.terminations = dict.fromkeys(self.agents, True)
        self._accumulate_rewards()
        self._deads_step_first()

    def render(self) -> str | np.ndarray | None:
        """The table as a spectator sees it (dice shown only at a reveal).

        ``"ansi"`` returns it as text, ``"human"`` prints it, ``"rgb_array"`` returns an
        ``(H, W, 3)`` uint8 image (see :func:`liars_env.envs.drawing.draw_table`).
        """
        if self.render_mode is None:
            return None
        self._require_reset()
        if self.render_mode == "rgb_array":
            from liars_env.envs.drawing import draw_table

            return draw_table(self.game_state, self.game, self.possible_agents, self.last_result)
        text = render_table(self.game_state, self.game, self.possible_agents, self.last_result)
        if self.render_mode == "human":
            print(text)
            return None
        return text

    def close(self) -> None:
        """Nothing to release."""
