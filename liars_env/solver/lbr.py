"""Local best response (LBR): a sound lower bound on the exploitability of any 2-player agent.

After Lisý & Bowling (2017), who audited no-limit poker agents this way. LBR is a fixed
strategy that knows the agent's strategy (its ``action_probabilities``) and exploits it:

1. **The agent's range.** Before each of its decisions LBR weighs every hand the agent
   may hold (a multiset of its dice; 252 for 5 dice of 6 faces) by its chance
   probability times the agent's own probability of each bid it made this round, asked
   at the position the bid was made in with that hand (Bayes' rule). Bids of earlier
   rounds say nothing: every die is rerolled between rounds.
2. **Action values under a continuation assumption** (``response``):

   - ``"call"``: every bid LBR makes is challenged at once; a call LBR makes is settled
     at once. A bid is then worth the chance that it holds against the agent's range.
   - ``"policy"`` (the default): after a bid of LBR the agent answers by its own policy,
     asked with every hand of its range: a call is settled; after a raise LBR takes the
     better of the actions valued by ``"call"`` against the range that raise leaves.
     Only the ``candidates`` bids ranked best by ``"call"`` (and every call) are
     considered, each costing one query of the agent per hand.

   A settled call is worth what its outcome is worth to LBR: ±1 when it ends the game,
   otherwise the value of the next round's start (``values``; by default
   :func:`race_value`). Perudo's calls have two outcomes (one side loses a die), so its
   rounds are played alike whatever the values are.
3. LBR takes the action of highest value (the lowest action id among ties): a
   deterministic strategy of the whole game, every round by the same rule.

Because LBR is a legitimate strategy and a best response gains at least as much as any
strategy, LBR's expected payoff against the agent, over both seats, is a lower bound on
the agent's exploitability in the units of :func:`~liars_env.solver.exploit` (NashConv
/ 2: the mean over seats of a best responder's return, +1 for a win and −1 for a loss).
:func:`local_best_response` plays the games and gives the mean payoff with a 95% Wilson
interval. The assumption only decides how tight the bound is, never whether it holds.

The agent is played by sampling its ``action_probabilities`` (what the exact
exploitability measures), not by its ``act``. This module imports the game, the solver's
query helpers and numpy only.
"""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from liars_env.engine import GameState, LiarsDiceGame
from liars_env.observation import ObservationLayout, PlayerView, view_of
from liars_env.rules import RuleSet, counts_as_match, dice_lost, settle_call
from liars_env.solver.cfr import _traverse
from liars_env.solver.exploitability import AgentTables
from liars_env.solver.graph import _components, hands_of, round_states

RESPONSES = ("call", "policy")
"""Continuation assumptions of LBR's action values (see the module docstring)."""

RoundValue = Callable[[int, int, bool], float]
"""``values(lbr_dice, agent_dice, lbr_opens)``: LBR's value of a round start, in [−1, 1]."""


def race_value(mine: int, theirs: int, opens: bool = False) -> float:
    """A round start's value when each round is a fair coin for who loses a die.

    The chance of taking the other's ``theirs`` dice before losing ``mine``, as a
    return in [−1, 1]; who opens is ignored. Exact for ±1 at the game's end and 0 at
    equal dice; a stand-in elsewhere (LBR's bound holds with any values).

    Example:
        >>> race_value(1, 1), race_value(2, 1), round(race_value(5, 4), 4)
        (0.0, 0.5, 0.2734)
    """
    if mine <= 0 or theirs <= 0:
        if mine == theirs:
            raise ValueError(f"one side must hold dice, got mine={mine}, theirs={theirs}")
        return 1.0 if mine > 0 else -1.0
    win = sum(math.comb(theirs - 1 + k, k) / 2.0 ** (theirs + k) for k in range(mine))
    return 2.0 * win - 1.0


def wilson(wins: int, games: int, z: float = 1.959963984540054) -> tuple[float, float]:
    """The Wilson score interval of a win rate (95% by default); ``(0, 1)`` with no games.

    Example:
        >>> [round(x, 4) for x in wilson(8, 10)]
        [0.4902, 0.9433]
    """
    if games == 0:
        return 0.0, 1.0
    p = wins / games
    denom = 1.0 + z * z / games
    centre = (p + z * z / (2 * games)) / denom
    half = z * math.sqrt(p * (1 - p) / games + z * z / (4 * games * games)) / denom
    return max(0.0, centre - half), min(1.0, centre + half)


def check_lbr_target(agent: Any, rules: RuleSet) -> None:
    """Raises ``ValueError`` unless LBR can exploit ``agent`` in ``rules``.

    LBR needs a 2-player rule set and an agent with ``action_probabilities(view)``.
    """
    if not isinstance(rules, RuleSet):
        raise ValueError(f"rules must be a RuleSet, got {rules!r}")
    if rules.num_players != 2:
        raise ValueError(
            f"local best response needs a 2-player game, got num_players={rules.num_players}"
        )
    if not callable(getattr(agent, "action_probabilities", None)):
        name = getattr(agent, "name", type(agent).__name__)
        raise ValueError(
            f"local best response needs an agent exposing action_probabilities(view) (its "
            f"strategy); agent {name!r} of type {type(agent).__name__} has none"
        )


class LocalBestResponse:
    """The LBR player against one agent (see the module docstring).

    It is an agent itself (``act``, ``action_probabilities``, ``reset``), so it can sit
    at any table against the agent it was built for.

    Args:
        agent: The exploited agent; must expose ``action_probabilities(view)``
            (``action_probabilities_batch(views)`` is used when present).
        rules: A 2-player rule set.
        response: The continuation assumption, one of :data:`RESPONSES`.
        candidates: With ``response="policy"``, how many bids (the best by
            ``"call"``) are valued by the agent's answer; ``None`` for every legal bid.
        values: LBR's value of a round start (:data:`RoundValue`); default
            :func:`race_value`.

    Raises:
        ValueError: for a game that is not 2-player, an agent without
            ``action_probabilities``, or a bad setting, naming it.
    """

    def __init__(
        self,
        agent: Any,
        rules: RuleSet,
        *,
        response: str = "policy",
        candidates: int | None = 8,
        values: RoundValue | None = None,
    ) -> None:
        check_lbr_target(agent, rules)
        if response not in RESPONSES:
            raise ValueError(f"response must be one of {', '.join(RESPONSES)}, got {response!r}")
        if candidates is not None and (type(candidates) is not int or candidates < 1):
            raise ValueError(f"candidates must be a positive int or None, got {candidates!r}")
        self.agent = agent
        self.rules = rules
        self.response = response
        self.candidates = candidates
        self.values = values or race_value
        self.name = f"lbr:{response}"
        self.game = LiarsDiceGame(rules)
        self.codec = self.game.codec
        self.layout = ObservationLayout(rules)
        self.queries = 0
        self._hands: dict[int, tuple[list[tuple[int, ...]], np.ndarray, dict]] = {}
        self._matches: dict[tuple[int, bool], np.ndarray] = {}
        self._tables: dict[tuple, np.ndarray] = {}
        self._round: tuple | None = None
        faces = rules.faces
        bids = np.arange(self.codec.num_bids)
        self._bid_q = bids // faces + 1
        self._bid_f = bids % faces + 1

    # -------------------------------------------------------------- agent interface
    def reset(self, seed: int | None = None) -> None:
        """Forgets the round's cached agent tables (LBR itself draws nothing)."""
        self._tables.clear()
        self._round = None

    def act(self, view: PlayerView) -> int:
        """The legal action of highest value (lowest id among ties)."""
        return int(np.argmax(self.action_values(view)))

    def action_probabilities(self, view: PlayerView) -> np.ndarray:
        """One-hot on :meth:`act`'s action (LBR is deterministic)."""
        out = np.zeros(self.codec.num_actions)
        out[self.act(view)] = 1.0
        return out

    # -------------------------------------------------------------- the agent's side
    def hands(self, dice: int) -> tuple[list[tuple[int, ...]], np.ndarray, dict]:
        """Every hand of ``dice`` dice, their chance probabilities, and hand → row."""
        if dice not in self._hands:
            hands, probs = hands_of(dice, self.rules.faces)
            self._hands[dice] = (hands, probs, {h: i for i, h in enumerate(hands)})
        return self._hands[dice]

    def matches(self, dice: int, palifico: bool) -> np.ndarray:
        """``M[hand, face − 1]``: each hand's dice counting toward a bid on each face."""
        key = (dice, palifico)
        if key not in self._matches:
            faces = self.rules.faces
            face = range(1, faces + 1)
            die = np.array(
                [
                    [counts_as_match(self.rules, d, f, palifico=palifico) for f in face]
                    for d in face
                ],
                dtype=np.int64,
            )
            hands = np.array(self.hands(dice)[0], dtype=np.int64).reshape(-1, dice)
            self._matches[key] = die[hands - 1].sum(axis=1)
        return self._matches[key]

    def agent_table(self, state: GameState, seat: int) -> np.ndarray:
        """``P[hand, action]``: the agent's probabilities at ``state`` with every hand.

        ``state`` is a position where the agent, in ``seat``, is to act; its own dice
        are replaced by each hand of its dice count in turn. Kept for the round.
        """
        return self.agent_tables([state], seat)[0]

    def agent_tables(self, states: list[GameState], seat: int) -> list[np.ndarray]:
        """:meth:`agent_table` of several positions of one round, in one query of the agent.

        Raises:
            ValueError: if the agent's answers are not distributions over the legal
                actions, naming the agent.
        """
        self._new_round(states[0])
        keys = [(seat, tuple(state.bids)) for state in states]
        todo = {k: s for k, s in zip(keys, states, strict=True) if k not in self._tables}
        if todo:
            hands = self.hands(states[0].dice_left[seat])[0]
            views, masks = [], []
            for state in todo.values():
                held = state.clone() if state.current_player != seat else state
                held.current_player = seat
                base = view_of(self.game, self.layout, held, seat)
                views += [dataclasses.replace(base, dice=hand) for hand in hands]
                masks.append(base.mask > 0)
            probs = self._ask(views, np.repeat(np.stack(masks), len(hands), axis=0))
            for k, block in zip(todo, np.split(probs, len(todo)), strict=True):
                self._tables[k] = block
            self.queries += len(views)
        return [self._tables[k] for k in keys]

    def _ask(self, views: list[PlayerView], mask: np.ndarray) -> np.ndarray:
        """The agent's distributions at ``views`` as ``(views, actions)``, checked."""
        agent = self.agent
        if hasattr(agent, "action_probabilities_batch"):
            probs = np.asarray(agent.action_probabilities_batch(views), dtype=np.float64)
        else:
            probs = np.stack(
                [
                    np.asarray(agent.action_probabilities(v), dtype=np.float64).reshape(-1)
                    for v in views
                ]
            )
        name = getattr(agent, "name", type(agent).__name__)
        if probs.shape != mask.shape or (probs < -1e-9).any():
            raise ValueError(
                f"agent {name!r} gave action probabilities of shape {probs.shape} with minimum "
                f"{probs.min():.3g}; expected {mask.shape} non-negative numbers (one row per view)"
            )
        illegal = np.where(mask, 0.0, probs).sum(axis=1)
        total = probs.sum(axis=1)
        bad = np.flatnonzero((illegal > 1e-6) | (np.abs(total - 1.0) > 1e-4))
        if len(bad):
            i = int(bad[0])
            raise ValueError(
                f"agent {name!r} gave probabilities summing to {total[i]:.6f} with "
                f"{illegal[i]:.3g} on illegal actions at {views[i]!r}; expected a "
                "distribution over the legal actions"
            )
        probs = np.where(mask, np.maximum(probs, 0.0), 0.0)
        return probs / probs.sum(axis=1, keepdims=True)

    def agent_range(self, view: PlayerView) -> np.ndarray:
        """The agent's hands' probabilities given its bids this round (LBR's view)."""
        other = 1 - view.seat
        _, prior, _ = self.hands(view.dice_left[other])
        weights = prior.copy()
        for t, (seat, quantity, face) in enumerate(view.bids):
            if seat != other:
                continue
            table = self.agent_table(_position(view, t), other)
            weights = weights * table[:, self.codec.encode_bid(quantity, face)]
        total = weights.sum()
        return weights / total if total > 0 else prior.copy()

    def _new_round(self, state: GameState | PlayerView) -> None:
        """Drops the cached tables when the round has changed.

        A round is told by its dice counts, opener and palifico flag, and by the last
        call's reveal (a calza can leave the counts and the opener as they were).
        """
        key = (tuple(state.dice_left), state.opener, state.palifico, repr(state.last_reveal))
        if key != self._round:
            self._tables.clear()
            self._round = key

    # -------------------------------------------------------------- values
    def _outcome_value(self, view: PlayerView, call: str, lbr_bids: bool, count: int, q: int):
        """LBR's value of a settled call of quantity ``q`` with ``count`` matches."""
        me, other = view.seat, 1 - view.seat
        bidder, caller = (me, other) if lbr_bids else (other, me)
        dice = list(view.dice_left)
        outcome = settle_call(
            self.rules,
            call,
            q,
            count,
            bidder=bidder,
            caller=caller,
            active=[0, 1],
            caller_dice=dice[caller],
        )
        for seat in outcome.losers:
            dice[seat] -= dice_lost(self.rules, dice[seat])
        for seat in outcome.gainers:
            dice[seat] += 1
        if dice[me] == 0 or dice[other] == 0:
            return 1.0 if dice[me] > 0 else -1.0
        opener = outcome.losers[0] if call == "challenge" else caller
        return float(self.values(dice[me], dice[other], opener == me))

    def _settle_tables(self, view: PlayerView) -> dict[tuple[str, bool], np.ndarray]:
        """Per call kind and bidder, ``V[bid, agent hand]``: LBR's value of the call settled.

        ``(call, lbr_bids)`` keys: ``("challenge", True)`` is the agent challenging a
        bid of LBR, ``("challenge", False)`` LBR challenging the agent's bid, and the
        same with ``"exact"`` where the rules have an exact call.
        """
        other = 1 - view.seat
        m_agent = self.matches(view.dice_left[other], view.palifico)  # (H, F)
        faces = self.rules.faces
        own = np.array(
            [
                sum(counts_as_match(self.rules, d, f, palifico=view.palifico) for d in view.dice)
                for f in range(1, faces + 1)
            ],
            dtype=np.int64,
        )
        q, f = self._bid_q, self._bid_f - 1
        individual = self.rules.hand == "individual"
        calls = ["challenge"] + (["exact"] if self.rules.exact_call != "none" else [])
        most = sum(view.dice_left)
        out = {}
        for lbr_bids in (True, False):
            if individual:  # only the bidder's dice count
                count = (
                    np.broadcast_to(own[f][:, None], (len(q), len(m_agent)))
                    if lbr_bids
                    else m_agent[:, f].T
                )
            else:
                count = own[f][:, None] + m_agent[:, f].T  # (bids, H)
            for call in calls:
                table = np.array(
                    [
                        [self._outcome_value(view, call, lbr_bids, c, qq) for c in range(most + 1)]
                        for qq in range(1, int(q.max()) + 1)
                    ]
                )
                out[call, lbr_bids] = table[q[:, None] - 1, count]
        return out

    def action_values(self, view: PlayerView) -> np.ndarray:
        """LBR's value of every action at ``view`` (``-inf`` where not considered).

        Raises:
            ValueError: if ``view`` is not of a 2-player game of these rules.
        """
        if view.rules != self.rules:
            raise ValueError(f"view of {view.rules}, but this LBR plays {self.rules}")
        self._new_round(view)
        r = self.agent_range(view)
        settle = self._settle_tables(view)
        codec = self.codec
        nb = codec.num_bids
        legal = view.mask > 0
        out = np.full(codec.num_actions, -np.inf)
        call_value = {"challenge": codec.challenge, "exact": codec.exact}
        if view.bids:
            last = codec.encode_bid(*view.bids[-1][1:])
            for call, a in call_value.items():
                if a is not None and a < len(legal) and legal[a]:
                    out[a] = float(settle[call, False][last] @ r)
        bids = np.flatnonzero(legal[:nb])
        if not len(bids):
            return out
        called = settle["challenge", True][bids] @ r  # (bids,)
        if self.response == "call":
            out[bids] = called
            return out
        if self.candidates is not None and len(bids) > self.candidates:
            order = np.argsort(-called, kind="stable")[: self.candidates]
            bids = np.sort(bids[order])
        me, other = view.seat, 1 - view.seat
        states = []
        for b in bids:
            state = _position(view, len(view.bids))
            state.bids.append((me, *codec.decode_bid(int(b))))
            state.current_player = other
            states.append(state)
        tables = self.agent_tables(states, other)
        answers = self._answer_masks(view)
        for b, table in zip(bids, tables, strict=True):
            out[b] = self._answered_value(int(b), table, r, settle, answers)
        return out

    def _answer_masks(self, view: PlayerView) -> np.ndarray:
        """``legal[bid, action]``: LBR's legal actions after the agent bids ``bid``."""
        key = ("answers", view.seat)
        if key not in self._tables:
            codec = self.codec
            state = _position(view, 0)
            rows = []
            for b in range(codec.num_bids):
                state.bids = [(1 - view.seat, *codec.decode_bid(b))]
                state.current_player = view.seat
                rows.append(self.game.legal_mask(state) > 0)
            self._tables[key] = np.stack(rows)
        return self._tables[key]

    def _answered_value(
        self,
        bid: int,
        table: np.ndarray,
        r: np.ndarray,
        settle: dict[tuple[str, bool], np.ndarray],
        answers: np.ndarray,
    ) -> float:
        """The value of ``bid`` when the agent answers by its policy (``"policy"``).

        Args:
            bid: LBR's bid.
            table: The agent's ``P[hand, action]`` after it.
            r: The agent's range before it.
            settle: :meth:`_settle_tables`.
            answers: :meth:`_answer_masks`.
        """
        codec = self.codec
        nb = codec.num_bids
        calls = [("challenge", codec.challenge)]
        if codec.exact is not None:
            calls.append(("exact", codec.exact))
        value = sum(float((r * table[:, a]) @ settle[call, True][bid]) for call, a in calls)
        w = r[:, None] * table[:, :nb]  # (H, bids): each raise's share of the range
        raised = np.flatnonzero(w.sum(axis=0) > 0)
        if not len(raised):
            return value
        w = w[:, raised]
        # LBR's answers to each raise, valued by the "call" rule against what it leaves
        answer = np.full((codec.num_actions, len(raised)), -np.inf)
        answer[:nb] = settle["challenge", True] @ w
        for call, a in calls:
            answer[a] = (settle[call, False][raised] * w.T).sum(axis=1)
        answer = np.where(answers[raised].T, answer, -np.inf)
        return value + float(answer.max(axis=0).sum())


def _position(view: PlayerView, t: int) -> GameState:
    """The round's position after its first ``t`` bids, as a state (hidden dice dummy).

    The player to act is the one after the ``t``-th bid's bidder (the opener at 0).
    """
    bids = list(view.bids[:t])
    player = view.opener if t == 0 else 1 - bids[-1][0]
    return GameState(
        dice=[list(view.dice) if s == view.seat else [1] * n for s, n in enumerate(view.dice_left)],
        dice_left=list(view.dice_left),
        current_player=player,
        opener=view.opener,
        bids=bids,
        palifico=view.palifico,
        had_palifico=[False, False],
        last_reveal=view.last_reveal,
    )


@dataclass
class LocalBestResponseResult:
    """What LBR won against an agent over games with both seats rotated.

    Attributes:
        agent: The agent's name.
        rules: The rule set, as a dict.
        response: The continuation assumption.
        candidates: Bids valued by the agent's answer (``None``: all).
        games: Games played (LBR in seat 0 in the even ones, seat 1 in the odd ones).
        wins: Games LBR won.
        win_rate: ``wins / games``, with ``win_ci95`` its 95% Wilson interval.
        payoff: LBR's mean return per game (+1 a win, −1 a loss: ``2·win_rate − 1``),
            with ``ci95`` the Wilson interval mapped the same way. In the units of the
            exact exploitability, of which it is a lower bound.
        seat_payoff: LBR's mean return against the agent in seat 0 and in seat 1.
        decisions: LBR's decisions.
        queries: The agent's ``action_probabilities`` answers read (hands × positions).
        seconds: Wall time.
    """

    agent: str
    rules: dict
    response: str
    candidates: int | None
    games: int
    wins: int
    win_rate: float
    win_ci95: tuple[float, float]
    payoff: float
    ci95: tuple[float, float]
    seat_payoff: tuple[float, float]
    decisions: int
    queries: int
    seconds: float

    def to_dict(self) -> dict[str, Any]:
        """A JSON-able dict."""
        out = dict(self.__dict__)
        for key in ("win_ci95", "ci95", "seat_payoff"):
            out[key] = list(out[key])
        return out


def local_best_response(
    agent: Any,
    rules: RuleSet,
    games: int = 1000,
    *,
    seed: int = 0,
    response: str = "policy",
    candidates: int | None = 8,
    values: RoundValue | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> LocalBestResponseResult:
    """Plays LBR against ``agent`` over ``games`` whole games, seats rotated.

    Game ``g`` is dealt from ``numpy.random.default_rng([seed, g])`` (dice, the first
    opener when the rules draw one, the agent's sampled moves), LBR sits in seat
    ``g % 2``, and the agent is ``reset`` to ``seed + g`` before it.

    Args:
        agent: Any agent exposing ``action_probabilities(view)``.
        rules: A 2-player rule set (any dice count; every option of the engine).
        games: Games to play (a positive int).
        seed: Seeds every game.
        response: LBR's continuation assumption (see :class:`LocalBestResponse`).
        candidates: Bids valued by the agent's answer with ``response="policy"``.
        values: LBR's value of a round start (default :func:`race_value`).
        progress: Called with ``(games done, games)`` after each game.

    Returns:
        The :class:`LocalBestResponseResult`: LBR's mean payoff and its interval, a lower
        bound on the agent's exploitability.

    Raises:
        ValueError: for a game that is not 2-player, an agent without
            ``action_probabilities``, a bad count or setting, naming it.

    Example:
        >>> from liars_env.agents import make_agent
        >>> rules = RuleSet.preset("perudo", num_players=2, dice_per_player=1, faces=4)
        >>> result = local_best_response(make_agent("random", rules), rules, 20)
        >>> result.payoff > 0.5
        True
    """
    check_lbr_target(agent, rules)
    if type(games) is not int or games < 1:
        raise ValueError(f"games must be a positive int, got {games!r}")
    if type(seed) is not int:
        raise ValueError(f"seed must be an int, got {seed!r}")
    lbr = LocalBestResponse(agent, rules, response=response, candidates=candidates, values=values)
    game, layout = lbr.game, lbr.layout
    t0 = time.perf_counter()
    wins = [0, 0]
    played = [0, 0]
    decisions = 0
    for g in range(games):
        me = g % 2
        rng = np.random.default_rng([seed, g])
        if hasattr(agent, "reset"):
            agent.reset(seed + g)
        lbr.reset()
        state = game.new_game(rng)
        while state.winner is None:
            seat = state.current_player
            if seat == me:
                action = lbr.act(view_of(game, layout, state, seat))
                decisions += 1
            else:
                table = lbr.agent_table(state, seat)
                row = lbr.hands(state.dice_left[seat])[2][tuple(sorted(state.dice[seat]))]
                action = int(rng.choice(len(table[row]), p=table[row]))
            game.apply(state, action, rng)
        played[me] += 1
        wins[me] += int(state.winner == me)
        if progress:
            progress(g + 1, games)
    total = sum(wins)
    lo, hi = wilson(total, games)
    return LocalBestResponseResult(
        agent=str(getattr(agent, "name", type(agent).__name__)),
        rules=rules.to_dict(),
        response=response,
        candidates=candidates if response == "policy" else None,
        games=games,
        wins=total,
        win_rate=total / games,
        win_ci95=(lo, hi),
        payoff=2.0 * total / games - 1.0,
        ci95=(2.0 * lo - 1.0, 2.0 * hi - 1.0),
        seat_payoff=tuple(
            2.0 * w / n - 1.0 if n else float("nan") for w, n in zip(wins, played, strict=True)
        ),
        decisions=decisions,
        queries=lbr.queries,
        seconds=time.perf_counter() - t0,
    )


def exact_lbr_value(agent: Any, rules: RuleSet, **settings: Any) -> float:
    """LBR's exact expected payoff against ``agent``, averaged over both seats.

    For games small enough for the solver: LBR is deterministic, so both players' tables
    are read at every information state of every round (as
    :func:`~liars_env.solver.exploit` reads the agent's) and every round state is valued
    for LBR when it opens and when the agent opens, from the last rounds back. In the
    units of the exact exploitability, which it never exceeds; the played
    :func:`local_best_response` estimates it.

    Args:
        agent: Any agent exposing ``action_probabilities(view)``.
        rules: A 2-player rule set small enough for the solver, whose rounds do not
            repeat (not ``calza``).
        **settings: :class:`LocalBestResponse` settings (``response``, ``candidates``,
            ``values``).

    Raises:
        ValueError: for rules too large for the solver, rounds that can repeat, or what
            :class:`LocalBestResponse` refuses.
    """
    check_lbr_target(agent, rules)
    start, trees = round_states(rules)
    order = _components(trees)
    if any(len(c) > 1 or c[0] in trees[c[0]].successors() for c in order):
        raise ValueError(
            f"exact_lbr_value needs rounds that do not repeat, got exact_call={rules.exact_call!r}"
        )
    per_seat = []
    for lbr_seat in (0, 1):
        lbr = LocalBestResponse(agent, rules, **settings)
        lbr_tables = AgentTables(trees, lbr, lbr_seat, start)
        agent_tables = AgentTables(trees, agent, 1 - lbr_seat, start)
        value: dict[tuple[Any, int], float] = {}  # (round state, LBR's role) → its return
        for (key,) in order:
            tree = trees[key]
            for role in (0, 1):
                payoffs = tree.payoffs(_lbr_payoff(value, role))
                mine, theirs = lbr_tables(key, role), agent_tables(key, 1 - role)
                sigma = [
                    mine[d] if depth.actor == role else theirs[d]
                    for d, depth in enumerate(tree.depths)
                ]
                v = _traverse(tree, sigma, (payoffs, payoffs), roles=(role,))[role]
                value[key, role] = float(tree.probs[role] @ v)
        if rules.first_opener == "player_0":  # seat 0 opens: LBR opens when in seat 0
            per_seat.append(value[start, lbr_seat])
        else:
            per_seat.append(0.5 * (value[start, 0] + value[start, 1]))
    return 0.5 * (per_seat[0] + per_seat[1])


def _lbr_payoff(value: dict[tuple[Any, int], float], role: int) -> Callable[[str, Any], float]:
    """LBR's payoff of a call's outcome when it holds ``role`` (for :func:`exact_lbr_value`)."""

    def payoff(kind: str, key: Any) -> float:
        if kind == "end":
            return 1.0 if key == role else -1.0
        lbr_opens = (kind == "same") == (role == 0)
        return value[key, 0 if lbr_opens else 1]

    return payoff
