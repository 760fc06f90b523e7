"""Our game, any RuleSet, as an OpenSpiel Python game (optional: needs ``open_spiel``).

:func:`register` registers ``python_liars_env`` with ``pyspiel.register_game``; then
``pyspiel.load_game("python_liars_env", {...})`` takes every :class:`RuleSet` field as a
parameter, plus ``first_player`` (``-1``, the default: the rules' ``first_opener``, so a
chance node draws the first opener as in real games, or ``player_0`` opens; else that
seat opens) and ``max_rounds`` (a game still going
after that many rounds ends with every return 0; only ``calza`` games can go on for
ever). OpenSpiel's algorithms (CFR, ``exploitability.nash_conv``, NFSP, PSRO, ...) then
run on Perudo.

* Chance nodes deal each active seat's whole hand at the start of every round; outcome
  ``i`` is the ``i``-th sorted multiset of :func:`liars_env.solver.hands_of`, with its
  multinomial probability.
* Actions are :class:`~liars_env.actions.ActionCodec` ids; legality and settlement are
  the engine's (:class:`~liars_env.engine.LiarsDiceGame`).
* Information states (strings) have perfect recall: the player's own hand and the public
  bids and reveals of every round so far. Observations (strings and the tensor) cover
  the current round, as the PettingZoo env's; the information-state tensor is the
  observation tensor plus one-hots of the round number and of each seat's palifico
  flag.

OpenSpiel's own ``liars_dice`` is our ``openspiel_liars_dice`` preset:
:func:`liars_dice_rules` names the preset of a native game, :func:`liars_dice_state`
replays a native state on our engine, and :func:`to_liars_dice_policy` turns any of our
agents into a policy of the native game, for OpenSpiel's own exploitability.

Example:
    >>> import pyspiel
    >>> register()
    >>> game = pyspiel.load_game("python_liars_env", {"faces": 3, "first_player": 0})
    >>> state = game.new_initial_state()
    >>> state.is_chance_node(), len(state.chance_outcomes())
    (True, 3)
"""

from __future__ import annotations

import dataclasses
import json
from functools import lru_cache
from typing import Any

import numpy as np
import pyspiel

from liars_env.engine import GameState, LiarsDiceGame
from liars_env.observation import ObservationLayout
from liars_env.rules import RuleSet, loser_reward
from liars_env.solver.graph import hands_of

SHORT_NAME = "python_liars_env"
"""The name to pass to ``pyspiel.load_game``."""

DEFAULTS: dict[str, Any] = {
    **dataclasses.asdict(RuleSet(num_players=2, dice_per_player=1)),
    "first_player": -1,
    "max_rounds": 100,
}
"""Game parameters and their defaults: 2-player one-die Perudo, random first opener."""


def rules_of(params: dict[str, Any]) -> RuleSet:
    """The RuleSet named by game parameters (unknown keys are an error)."""
    fields = {f.name for f in dataclasses.fields(RuleSet)}
    return RuleSet(**{k: v for k, v in params.items() if k in fields})


def _game_type() -> pyspiel.GameType:
    return pyspiel.GameType(
        short_name=SHORT_NAME,
        long_name="Liar's Dice / Perudo (liars_env, any RuleSet)",
        dynamics=pyspiel.GameType.Dynamics.SEQUENTIAL,
        chance_mode=pyspiel.GameType.ChanceMode.EXPLICIT_STOCHASTIC,
        information=pyspiel.GameType.Information.IMPERFECT_INFORMATION,
        utility=pyspiel.GameType.Utility.ZERO_SUM,
        reward_model=pyspiel.GameType.RewardModel.TERMINAL,
        max_num_players=8,
        min_num_players=2,
        provides_information_state_string=True,
        provides_information_state_tensor=True,
        provides_observation_string=True,
        provides_observation_tensor=True,
        parameter_specification=DEFAULTS,
    )


@dataclasses.dataclass
class _Context:
    """What every state of one parameter set shares (states, copied often, hold a key)."""

    rules: RuleSet
    first_player: int
    max_rounds: int
    engine: LiarsDiceGame
    layout: ObservationLayout
    hands: list


_CONTEXTS: dict[str, _Context] = {}
_RNG = np.random.default_rng(0)  # the engine's own rolls are replaced by chance nodes


def _context(key: str) -> _Context:
    if key not in _CONTEXTS:
        params = json.loads(key)
        rules = rules_of(params)
        first, rounds = int(params["first_player"]), int(params["max_rounds"])
        n = rules.num_players
        if not -1 <= first < n:
            raise ValueError(f"first_player must be -1 or a seat 0–{n - 1}, got {first}")
        if rounds < 1:
            raise ValueError(f"max_rounds must be at least 1, got {rounds}")
        _CONTEXTS[key] = _Context(
            rules=rules,
            first_player=first,
            max_rounds=rounds,
            engine=LiarsDiceGame(rules),
            layout=ObservationLayout(rules),
            hands=[hands_of(d, rules.faces) for d in range(rules.dice_per_player + 1)],
        )
    return _CONTEXTS[key]


class LiarsEnvGame(pyspiel.Game):
    """The OpenSpiel game of one RuleSet.

    Args:
        params: Game parameters (see :data:`DEFAULTS`).
    """

    def __init__(self, params: dict[str, Any] | None = None) -> None:
        merged = {**DEFAULTS, **(params or {})}
        self.key = json.dumps(merged, sort_keys=True)
        ctx = _context(self.key)
        self.rules = ctx.rules
        self.first_player = ctx.first_player
        self.max_rounds = ctx.max_rounds
        n = self.rules.num_players
        codec = ctx.engine.codec
        info = pyspiel.GameInfo(
            num_distinct_actions=codec.num_actions,
            max_chance_outcomes=max(n, len(ctx.hands[-1][0])),
            num_players=n,
            min_utility=loser_reward(n),
            max_utility=1.0,
            utility_sum=0.0,
            max_game_length=self.max_rounds * (codec.num_bids + 2),
        )
        super().__init__(_game_type(), info, merged)

    def new_initial_state(self) -> LiarsEnvState:
        """A new game: chance draws the opener (if random), then deals."""
        return LiarsEnvState(self)

    def make_py_observer(self, iig_obs_type=None, params=None) -> LiarsEnvObserver:
        """Observer of observations, or of information states for perfect recall."""
        perfect = bool(iig_obs_type and iig_obs_type.perfect_recall)
        return LiarsEnvObserver(_context(self.key), perfect_recall=perfect)


class _Play:
    """The mutable part of a state, with a fast copy (OpenSpiel copies on every child)."""

    def __init__(self) -> None:
        self.engine_state: GameState | None = None
        self.to_deal: list[int] = []
        self.history: list[dict[str, Any]] = []  # per round: opener, hands, bids, reveal
        self.stopped = False

    def __deepcopy__(self, memo: dict) -> _Play:
        new = _Play()
        es = self.engine_state
        if es is not None:
            new.engine_state = dataclasses.replace(
                es,
                dice=[list(h) for h in es.dice],
                dice_left=list(es.dice_left),
                bids=list(es.bids),
                had_palifico=list(es.had_palifico),
                out_order=[list(g) for g in es.out_order],
                actions=list(es.actions),
            )
        new.to_deal = list(self.to_deal)
        if self.history:  # finished rounds never change: share them
            last = self.history[-1]
            copy = {**last, "hands": dict(last["hands"]), "bids": list(last["bids"])}
            new.history = [*self.history[:-1], copy]
        new.stopped = self.stopped
        return new


class LiarsEnvState(pyspiel.State):
    """A game in progress: an engine :class:`GameState` plus the chance deals pending."""

    def __init__(self, game: LiarsEnvGame) -> None:
        super().__init__(game)
        self._key = game.key
        self._play = _Play()
        if game.first_player >= 0:
            self._start(game.first_player)
        elif game.rules.first_opener == "player_0":
            self._start(0)

    @property
    def _game(self) -> _Context:
        return _context(self._key)

    @property
    def engine_state(self) -> GameState | None:
        """The engine's state (``None`` before the first opener is drawn)."""
        return self._play.engine_state

    def _start(self, opener: int) -> None:
        self._play.engine_state = self._game.engine.new_game(_RNG, first_player=opener)
        self._new_round()

    def _new_round(self) -> None:
        state = self._play.engine_state
        self._play.to_deal = list(state.active_seats)
        self._play.history.append(
            {
                "opener": state.opener,
                "dice_left": list(state.dice_left),
                "palifico": state.palifico,
                "hands": {},
                "bids": [],
            }
        )

    # -------------------------------------------------------------- OpenSpiel API
    def current_player(self) -> int:
        """The seat to act, CHANCE or TERMINAL."""
        if self._play.stopped or (
            self._play.engine_state is not None and self._play.engine_state.is_over
        ):
            return pyspiel.PlayerId.TERMINAL
        if self._play.engine_state is None or self._play.to_deal:
            return pyspiel.PlayerId.CHANCE
        return self._play.engine_state.current_player

    def _legal_actions(self, player: int) -> list[int]:
        return self._game.engine.legal_actions(self._play.engine_state)

    def chance_outcomes(self) -> list[tuple[int, float]]:
        """The first opener (uniform), or the next seat's hand (multinomial)."""
        if self._play.engine_state is None:
            n = self._game.rules.num_players
            return [(s, 1.0 / n) for s in range(n)]
        seat = self._play.to_deal[0]
        _, probs = self._game.hands[self._play.engine_state.dice_left[seat]]
        return [(i, float(p)) for i, p in enumerate(probs)]

    def _apply_action(self, action: int) -> None:
        if self._play.engine_state is None:
            self._start(int(action))
            return
        state = self._play.engine_state
        if self._play.to_deal:
            seat = self._play.to_deal.pop(0)
            hand = self._game.hands[state.dice_left[seat]][0][action]
            state.dice[seat] = list(hand)
            self._play.history[-1]["hands"][seat] = hand
            return
        record = self._play.history[-1]
        record["bids"].append((state.current_player, int(action)))
        result = self._game.engine.apply(state, int(action), _RNG)
        if result is None:
            return
        record["reveal"] = {s: tuple(sorted(h)) for s, h in result.dice.items()}
        if state.is_over:
            return
        if len(self._play.history) >= self._game.max_rounds:
            self._play.stopped = True
            return
        self._new_round()

    def _action_to_string(self, player: int, action: int) -> str:
        if player == pyspiel.PlayerId.CHANCE:
            if self._play.engine_state is None:
                return f"opener:{action}"
            seat = self._play.to_deal[0]
            hand = self._game.hands[self._play.engine_state.dice_left[seat]][0][action]
            return f"deal p{seat}:{''.join(map(str, hand))}"
        return self._game.engine.codec.describe(action)

    def is_terminal(self) -> bool:
        """Whether the game is over (or stopped at ``max_rounds``)."""
        return self.current_player() == pyspiel.PlayerId.TERMINAL

    def returns(self) -> list[float]:
        """Winner +1, every other seat −1/(N−1); all 0 before the end or if stopped."""
        n = self._game.rules.num_players
        state = self._play.engine_state
        if state is None or not state.is_over:
            return [0.0] * n
        return [1.0 if s == state.winner else loser_reward(n) for s in range(n)]

    def information_state_string(self, player: int | None = None) -> str:
        """Perfect recall: own hands and every public bid and reveal so far."""
        player = self.current_player() if player is None else player
        return _history_string(self, player, perfect_recall=True)

    def observation_string(self, player: int | None = None) -> str:
        """The current round as ``player`` sees it."""
        player = self.current_player() if player is None else player
        return _history_string(self, player, perfect_recall=False)

    def __str__(self) -> str:
        rounds = []
        for r in self._play.history:
            hands = " ".join(f"p{s}:{''.join(map(str, h))}" for s, h in sorted(r["hands"].items()))
            bids = " ".join(str(a) for _, a in r["bids"])
            rounds.append(f"[{hands} | {bids}]")
        return " ".join(rounds)


def _history_string(state: LiarsEnvState, player: int, *, perfect_recall: bool) -> str:
    rounds = state._play.history if perfect_recall else state._play.history[-1:]
    parts = [f"p{player}"]
    for r in rounds:
        hand = r["hands"].get(player, ())
        bids = ",".join(f"{s}:{a}" for s, a in r["bids"])
        text = (
            f"o{r['opener']} d{''.join(map(str, r['dice_left']))}"
            f"{' P' if r['palifico'] else ''} h{''.join(map(str, hand))} b{bids}"
        )
        if "reveal" in r:
            text += " r" + "/".join("".join(map(str, h)) for _, h in sorted(r["reveal"].items()))
        parts.append(text)
    return "|".join(parts)


class LiarsEnvObserver:
    """Tensors and strings for OpenSpiel's observation API.

    The tensor is :class:`~liars_env.observation.ObservationLayout`'s vector of the
    current round (relative seats, own dice, bids); with ``perfect_recall`` it also
    one-hot encodes the round number (capped at ``max_rounds``) and holds each seat's
    palifico flag.
    """

    def __init__(self, game: _Context, *, perfect_recall: bool) -> None:
        self.game = game
        self.perfect_recall = perfect_recall
        n = game.rules.num_players
        size = game.layout.size + ((game.max_rounds + n) if perfect_recall else 0)
        self.tensor = np.zeros(size, np.float32)
        self.dict = {"observation": self.tensor}

    def set_from(self, state: LiarsEnvState, player: int) -> None:
        """Fills ``tensor`` for ``player``."""
        self.tensor.fill(0.0)
        es = state._play.engine_state
        if es is None:
            return
        layout = self.game.layout
        self.tensor[: layout.size] = layout.encode(es, player)
        if self.perfect_recall:
            k = min(len(state._play.history), self.game.max_rounds) - 1
            self.tensor[layout.size + k] = 1.0
            flags = np.array(es.had_palifico, dtype=np.float32)
            self.tensor[layout.size + self.game.max_rounds :] = flags

    def string_from(self, state: LiarsEnvState, player: int) -> str:
        """The information-state or observation string of ``player``."""
        return _history_string(state, player, perfect_recall=self.perfect_recall)


def register() -> None:
    """Registers :data:`SHORT_NAME` with OpenSpiel (safe to call more than once)."""
    if SHORT_NAME not in pyspiel.registered_names():
        pyspiel.register_game(_game_type(), LiarsEnvGame)


def load(rules: RuleSet, **options: Any) -> LiarsEnvGame:
    """The OpenSpiel game of ``rules`` (``options``: ``first_player``, ``max_rounds``)."""
    register()
    return pyspiel.load_game(SHORT_NAME, {**dataclasses.asdict(rules), **options})


# ------------------------------------------------------------------------ policies
def to_openspiel_policy(game: LiarsEnvGame, agent: Any):
    """An agent's action distributions as an OpenSpiel ``TabularPolicy`` of ``game``.

    Every information state of the game is visited, so keep ``game`` small. The agent
    sees each state through :func:`~liars_env.agents.base.view_of`.
    """
    from open_spiel.python import policy as os_policy

    from liars_env.observation import view_of
    from liars_env.solver.exploitability import agent_probabilities

    ctx = _context(game.key)

    def probabilities(state: LiarsEnvState) -> dict[int, float]:
        view = view_of(ctx.engine, ctx.layout, state.engine_state)
        probs = agent_probabilities(agent, view)
        return {int(a): float(probs[a]) for a in state.legal_actions()}

    return os_policy.tabular_policy_from_callable(game, probabilities)


class OpenSpielPolicyAgent:
    """An OpenSpiel policy of :func:`load`'s game as one of our agents (first round only).

    The view is replayed on a fresh OpenSpiel state (the opener drawn, the viewer's hand
    dealt, any hand for the others, the bids applied), so only views of a game's first
    round are meaningful: later rounds' information states hold earlier rounds too.

    Args:
        game: The OpenSpiel game (from :func:`load`).
        policy: An OpenSpiel policy of it, e.g. a CFR solver's ``average_policy()``.
        name: Display name.
    """

    def __init__(self, game: LiarsEnvGame, policy: Any, name: str = "openspiel") -> None:
        self.game = game
        self.policy = policy
        self.name = name

    def reset(self, seed: int | None = None) -> None:
        """Nothing to reset: the policy is fixed."""

    def action_probabilities(self, view) -> np.ndarray:
        """The policy's distribution at ``view``'s information state."""
        ctx = _context(self.game.key)
        state = self.game.new_initial_state()
        if state.is_chance_node() and state.engine_state is None:
            state.apply_action(view.opener)
        while state.is_chance_node():
            seat = state._play.to_deal[0]
            hands = ctx.hands[view.dice_left[seat]][0]
            hand = tuple(sorted(view.dice)) if seat == view.seat else hands[0]
            state.apply_action(hands.index(hand))
        for _, quantity, face in view.bids:
            state.apply_action(view.codec.encode_bid(quantity, face))
        out = np.zeros(view.codec.num_actions)
        for action, p in self.policy.action_probabilities(state).items():
            out[action] = p
        return out

    def act(self, view) -> int:
        """The most likely action (use :meth:`action_probabilities` for the rest)."""
        return int(np.argmax(self.action_probabilities(view)))


# ------------------------------------------------------------------ OpenSpiel's liars_dice
def liars_dice_rules(game: pyspiel.Game) -> RuleSet:
    """Our rules of OpenSpiel's native ``liars_dice`` game: the ``openspiel_liars_dice`` preset.

    Raises:
        ValueError: for another game, or a ``liars_dice`` with other than 2 players or
            the ``reset-face`` bidding rule (OpenSpiel's default, the only one we play).

    Example:
        >>> native = pyspiel.load_game("liars_dice", {"numdice": 2, "dice_sides": 3})
        >>> rules = liars_dice_rules(native)
        >>> rules == RuleSet.preset("openspiel_liars_dice", dice_per_player=2, faces=3)
        True
    """
    if game.get_type().short_name != "liars_dice":
        raise ValueError(f"expected OpenSpiel's liars_dice, got {game.get_type().short_name!r}")
    params = game.get_parameters()
    players, rule = params.get("players", 2), params.get("bidding_rule", "reset-face")
    if players != 2 or rule != "reset-face":
        raise ValueError(
            "openspiel_liars_dice is liars_dice with players=2 and bidding_rule='reset-face', "
            f"got players={players}, bidding_rule={rule!r}"
        )
    return RuleSet.preset(
        "openspiel_liars_dice", dice_per_player=params["numdice"], faces=params["dice_sides"]
    )


def liars_dice_state(game: pyspiel.Game, state: pyspiel.State) -> GameState:
    """Our engine's state of a native ``liars_dice`` state whose dice are dealt.

    OpenSpiel deals player 0's dice, then player 1's, one chance outcome ``face − 1``
    each; the actions after the deal are the same ids in both games (bid
    ``(q, f)`` is ``(q − 1)·F + (f − 1)``, the challenge ``2·D·F``).

    Raises:
        ValueError: if the dice are not all dealt yet.
    """
    rules = liars_dice_rules(game)
    d = rules.dice_per_player
    history = state.history()
    if len(history) < 2 * d:
        raise ValueError(f"the dice are not dealt yet (history {history})")
    engine = _native(rules)[0]
    dice = [[a + 1 for a in history[:d]], [a + 1 for a in history[d : 2 * d]]]
    ours = engine.new_game(_RNG, dice=dice)
    for action in history[2 * d :]:
        engine.apply(ours, action, _RNG)
    return ours


@lru_cache(maxsize=16)
def _native(rules: RuleSet) -> tuple[LiarsDiceGame, ObservationLayout]:
    """The engine and observation layout of a native game's rules (built once)."""
    return LiarsDiceGame(rules), ObservationLayout(rules)


def to_liars_dice_policy(game: pyspiel.Game, agent: Any):
    """An agent of ``openspiel_liars_dice`` as a ``TabularPolicy`` of OpenSpiel's ``liars_dice``.

    Every information state of the native game is visited (keep it small); the agent
    sees each through our engine's state (:func:`liars_dice_state`) and
    :func:`~liars_env.observation.view_of`. Then OpenSpiel's ``exploitability`` or
    ``pyspiel.nash_conv`` measure our agents on OpenSpiel's own game.
    """
    from open_spiel.python import policy as os_policy

    from liars_env.observation import view_of
    from liars_env.solver.exploitability import agent_probabilities

    engine, layout = _native(liars_dice_rules(game))

    def probabilities(state: pyspiel.State) -> dict[int, float]:
        view = view_of(engine, layout, liars_dice_state(game, state))
        probs = agent_probabilities(agent, view)
        return {int(a): float(probs[a]) for a in state.legal_actions()}

    return os_policy.tabular_policy_from_callable(game, probabilities)
