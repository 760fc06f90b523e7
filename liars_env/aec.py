"""PettingZoo AEC environment for Liar's Dice / Perudo (a thin adapter over the engine).

========================  =============================================================
Import                    ``from liars_env import liars_dice_v0`` (or ``liars_env.env``)
Actions                   Discrete; one fixed space per env (see below)
Parallel API              No (turn-based AEC)
Manual control            ``liars-play`` (terminal)
Agents                    ``agents = ['player_0', …, 'player_{N-1}']`` (clockwise)
Number of agents          2–8
Action shape              ``(1,)``
Action values             ``Discrete(N·D·F + 1)`` (+1 with an exact call)
Observation shape         ``{"observation": (size,), "action_mask": (num_actions,)}``
Observation values        ``observation`` in [0, 1] (float32); ``action_mask`` 0/1 (int8)
========================  =============================================================

**Actions.** Id ``(q−1)·F + (f−1)`` bids *q dice showing f*; id ``N·D·F`` challenges the
previous bid; id ``N·D·F + 1`` is the exact call when ``exact_call`` is ``spot_on`` or
``calza``. Use :meth:`raw_env.bid_action`, :attr:`raw_env.challenge_action`,
:attr:`raw_env.exact_action` and :meth:`raw_env.describe_action` instead of arithmetic.

**Observations.** Seat-relative; layout in :mod:`liars_env.observation` (version
:data:`~liars_env.observation.OBSERVATION_VERSION`). The ``action_mask`` is all zero for
every agent but the one to act.

**Rewards.** Zero-sum: the winner gets +1 and every other player −1/(N−1), each at the
step their game ends (an eliminated player at its elimination). With
``illegal_action="penalize"`` an illegal action ends the game: the offender gets −1 and
the players still in share what keeps the game zero-sum.

**Info.** After every challenge or exact call, ``infos[agent]["round_result"]`` for every
agent of that round: ``call, bid, bidder, caller, dice, count, losers, gainers,
dice_left, next_opener`` (agent names; ``next_opener`` is ``None`` when the game is over).

**Reset options.** ``dice`` (faces per seat for the first round), ``dice_left`` (starting
dice per seat; 0 = already out), ``first_player`` (an agent name).

Version history:

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

from liars_env.engine import GameState, LiarsDiceGame, RoundResult
from liars_env.errors import IllegalActionError
from liars_env.observation import OBSERVATION_VERSION, ObservationLayout
from liars_env.render import render_table
from liars_env.rules import RuleSet, loser_reward, resolve_rules

ILLEGAL_ACTION_MODES = ("raise", "penalize")
RESET_OPTIONS = ("dice", "dice_left", "first_player")


def env(
    rules: RuleSet | str = "perudo",
    render_mode: str | None = None,
    illegal_action: str = "raise",
    **overrides: Any,
) -> AECEnv:
    """The wrapped Liar's Dice AEC env.

    Only PettingZoo's ``OrderEnforcingWrapper`` is applied: the raw env already rejects
    out-of-range and illegal actions with :class:`~liars_env.IllegalActionError`, so the
    ``assert``-based bounds wrapper and the illegal-move terminator would only add cost.

    Args:
        rules: A preset name (see :data:`liars_env.PRESETS`) or a :class:`RuleSet`.
        render_mode: ``None``, ``"ansi"`` (``render()`` returns a string) or ``"human"``
            (``render()`` prints it, and the table is printed after every step).
        illegal_action: ``"raise"`` (default) or ``"penalize"``.
        **overrides: RuleSet fields, e.g. ``num_players=4``.

    Example:
        >>> e = env("perudo", num_players=2)
        >>> e.reset(seed=1)
        >>> e.agent_selection in e.agents
        True
    """
    return _OrderEnforcingWrapper(
        raw_env(rules, render_mode=render_mode, illegal_action=illegal_action, **overrides)
    )


class _OrderEnforcingWrapper(wrappers.OrderEnforcingWrapper):
    """PettingZoo's order enforcer with a direct ``last()``.

    The inherited ``last()`` reads five attributes through ``__getattr__`` chains on every
    call; after ``reset()`` this one asks the raw env once. Behaviour is unchanged.
    """

    def last(self, observe: bool = True) -> tuple:
        """See :meth:`raw_env.last`."""
        if not self._has_reset:
            return super().last(observe)
        return self.env.last(observe)


class raw_env(AECEnv, EzPickle):  # noqa: N801 - PettingZoo's naming convention
    """The unwrapped Liar's Dice AEC env; see the module docstring for the spec."""

    metadata = {
        "render_modes": ["ansi", "human"],
        "name": "liars_dice_v0",
        "is_parallelizable": False,
    }

    def __init__(
        self,
        rules: RuleSet | str = "perudo",
        render_mode: str | None = None,
        illegal_action: str = "raise",
        **overrides: Any,
    ) -> None:
        EzPickle.__init__(self, rules, render_mode, illegal_action, **overrides)
        super().__init__()
        if render_mode not in (None, *self.metadata["render_modes"]):
            raise ValueError(f"render_mode must be None, 'ansi' or 'human', got {render_mode!r}")
        if illegal_action not in ILLEGAL_ACTION_MODES:
            raise ValueError(
                f"illegal_action must be 'raise' or 'penalize', got {illegal_action!r}"
            )
        self.rules = resolve_rules(rules, **overrides)
        self.render_mode = render_mode
        self.illegal_action = illegal_action
        self.game = LiarsDiceGame(self.rules)
        self.codec = self.game.codec
        self.layout = ObservationLayout(self.rules)
        self.observation_version = OBSERVATION_VERSION

        n = self.rules.num_players
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
        self._zero_mask = np.zeros(num_actions, dtype=np.int8)
        self._rng: np.random.Generator | None = None
        self.state: GameState | None = None
        self.last_result: RoundResult | None = None

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
        return dict(zip(self.possible_agents, self.state.dice_left, strict=True))

    def seat_of(self, agent: str) -> int:
        """Seat index of ``agent``."""
        return self._seat[agent]

    def _require_reset(self) -> None:
        if self.state is None:
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
        self.state = state
        self.last_result = None
        self.agents = [self.possible_agents[s] for s in state.active_seats]
        self.rewards = dict.fromkeys(self.agents, 0.0)
        self._cumulative_rewards = dict.fromkeys(self.agents, 0.0)
        self.terminations = dict.fromkeys(self.agents, False)
        self.truncations = dict.fromkeys(self.agents, False)
        self.infos = {a: {} for a in self.agents}
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
            if first not in self._seat:
                raise ValueError(
                    f"first_player must be one of {self.possible_agents}, got {first!r}"
                )
            kwargs["first_player"] = self._seat[first]
        return kwargs

    def observe(self, agent: str) -> dict[str, np.ndarray]:
        """What ``agent`` knows now, plus its action mask (fresh arrays each call)."""
        self._require_reset()
        state = self.state
        seat = self._seat[agent]
        if agent == self.agent_selection and not self.terminations.get(agent, True):
            mask = self.game.legal_mask(state)
        else:
            mask = self._zero_mask.copy()
        return {"observation": self.layout.encode(state, seat), "action_mask": mask}

    def step(self, action: int | None) -> None:
        """Acts for ``agent_selection``; dead agents must be stepped with ``None``.

        Raises:
            IllegalActionError: for an illegal action with ``illegal_action="raise"``
                (nothing changes; the same agent may act again).
        """
        agent = self.agent_selection
        if self.terminations[agent] or self.truncations[agent]:
            self._was_dead_step(action)
            return
        state = self.state
        if not self.game.is_legal(state, action):
            reason = self.game.illegal_reason(state, action)
            if self.illegal_action == "raise":
                raise IllegalActionError(f"{agent}: {reason}")
            self._penalize(agent, reason)
            return
        self._cumulative_rewards[agent] = 0.0
        if self._round_ended:  # rewards and infos only change at calls: reset lazily
            self.rewards = dict.fromkeys(self.agents, 0.0)
            self.infos = {a: {} for a in self.agents}
            self._round_ended = False
        result = self.game.apply(state, action, self._rng, check=False)
        self.agent_selection = self.possible_agents[state.current_player]
        if result is not None:
            self._finish_round(result)
            self._deads_step_first()
            self._accumulate_rewards()
        if self.render_mode == "human":
            self.render()

    def _finish_round(self, result: RoundResult) -> None:
        self._round_ended = True
        self.last_result = result
        names = self.possible_agents
        penalty = loser_reward(self.rules.num_players)
        for seat in result.eliminated:
            self.rewards[names[seat]] = penalty
            self.terminations[names[seat]] = True
        if self.state.winner is not None:
            self.rewards[names[self.state.winner]] = 1.0
            self.terminations = dict.fromkeys(self.agents, True)
        info = self.round_result_info(result)
        for agent in self.agents:
            self.infos[agent]["round_result"] = info

    def round_result_info(self, result: RoundResult) -> dict[str, Any]:
        """A :class:`RoundResult` with agent names, as put in ``infos``."""
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
        already_out = n - len(self.agents)
        others = [a for a in self.agents if a != offender]
        share = (1.0 - already_out * loser_reward(n)) / len(others)
        self._cumulative_rewards[offender] = 0.0
        self.rewards = dict.fromkeys(self.agents, share)
        self.rewards[offender] = -1.0
        self.infos = {a: {"illegal_action": f"{offender}: {reason}"} for a in self.agents}
        self.terminations = dict.fromkeys(self.agents, True)
        self._deads_step_first()
        self._accumulate_rewards()

    def render(self) -> str | None:
        """The table as a spectator sees it; ``"ansi"`` returns it, ``"human"`` prints it."""
        if self.render_mode is None:
            return None
        self._require_reset()
        text = render_table(self.state, self.game, self.possible_agents, self.last_result)
        if self.render_mode == "human":
            print(text)
            return None
        return text

    def close(self) -> None:
        """Nothing to release."""
