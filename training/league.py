"""The league a learner trains against, and batched matches between any two players.

A *member* is anything that can play the non-learner seats of a batch of games: a
heuristic bot (by preset name), a frozen network (a snapshot of the learner, an
exploiter, or a shipped ``checkpoint:PATH``), a player with search at play time
(``search:SPEC``, see :mod:`liars_env.agents.search`), or the learner itself (``self``). The
:class:`League` gives every game slot an opponent when its game starts: the current
policy with probability ``self_play``, otherwise a member drawn by *prioritized fictitious
self-play* (PFSP): member ``m`` is drawn with weight ``(1 − w_m)^p``, where ``w_m`` is the
learner's recent win rate against it, so the members that beat the learner are drawn
more (``p = 0``: uniformly). Every finished game updates the win rate of its member.

:func:`play_match` plays one player in one seat against another in all other seats,
seats rotating over the slots, and is what evaluation and exploiter promotion use.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

import numpy as np
import torch

from liars_env.agents.batched import BATCHED_BOT_NAMES, check_batched_bot_spec, make_batched_bot
from liars_env.agents.policy import NetworkShape, PolicyNet, load_policy, sample_actions
from liars_env.agents.registry import make_agent
from liars_env.agents.search import SearchAgent, parse_search_spec
from liars_env.batched import BatchedEnv
from liars_env.batched.threads import DEFAULT_THREADS, using_threads
from liars_env.rules import RuleSet
from liars_train.stats import wilson_interval

TEXT_AGENT_KINDS = ("llm", "textarena")
"""Spec prefixes of text agents, which play as ``search`` members (through ``act_batch``)."""
TABLE_AGENT_KINDS = ("blueprint",)
"""Spec prefixes of agents that answer ``action_probabilities`` per view (a blueprint's
table), which play as ``search`` members through :class:`PerView`."""

WIN_WINDOW = 2000.0
"""Games after which a member's win counts are halved (a moving window)."""

GROUP_OF_KIND = {
    "bot": "fixed",
    "checkpoint": "fixed",
    "search": "fixed",
    "snapshot": "snapshot",
    "exploiter": "exploiter",
}
"""The group of each kind of member (``self`` has none: it gets ``self_play``)."""

DEFAULT_GROUP_SHARES = {"fixed": 0.4, "snapshot": 0.3, "exploiter": 0.3}
"""How the non-self-play games are split between the groups of members present. Without
groups, PFSP alone would hand most games to the recent snapshots: in games of three or
more, a copy of oneself wins as often as anyone, so it always looks hard."""


def _kind(spec: str) -> str:
    """The kind a spec names, before its argument or settings (``blueprint?tremble=T``)."""
    return spec.partition(":")[0].partition("?")[0]


def check_member_spec(spec: str) -> None:
    """Raises ``ValueError`` unless ``spec`` is a checkpoint, bot, search or text agent.

    A checkpoint is ``checkpoint:PATH``; a bot is ``random`` or a preset, possibly with
    settings changed (``bayes:bluff_rate=0.2``; see
    :func:`~liars_env.agents.batched.check_batched_bot_spec`); a search is
    ``search:SPEC`` (see :mod:`liars_env.agents.search`), whose settings are checked here
    and its base when it is built; a text agent is ``llm:MODEL?...`` or
    ``textarena:CLASS?...`` (see :mod:`liars_env.agents.text_agent`), checked when built.
    Searches and text agents play as ``search`` members, through their ``act_batch``.
    """
    if not isinstance(spec, str):
        raise ValueError(f"opponent spec must be a string, got {spec!r}")
    if spec.startswith("checkpoint:") and len(spec) > 11:
        return
    if _kind(spec) in (*TEXT_AGENT_KINDS, *TABLE_AGENT_KINDS):
        return
    if spec.startswith("search:"):
        parse_search_spec(spec)
        return
    if spec.partition(":")[0] not in BATCHED_BOT_NAMES:
        raise ValueError(
            f"unknown opponent {spec!r}; expected a bot ({', '.join(BATCHED_BOT_NAMES)}, "
            "or NAME:key=value,... to change a preset's settings), checkpoint:PATH, "
            "blueprint[:PATH], blueprint?tremble=T or search:SPEC"
        )
    check_batched_bot_spec(spec)  # a bad setting: its own message


@lru_cache(maxsize=16)
def _load_frozen(path: str, rules: RuleSet, device: str) -> PolicyNet:
    net, _ = load_policy(path, rules, device=device)
    return net


@dataclass
class Member:
    """One opponent of the league.

    Attributes:
        name: Unique display name (``belief``, ``snapshot@1200000``, ...).
        kind: ``self``, ``bot``, ``snapshot``, ``exploiter``, ``checkpoint`` or ``search``.
        net: The frozen network (``None`` for bots, searches and ``self``).
        spec: The bot preset or ``checkpoint:PATH`` it was made from, if any.
        wins: Recent wins of the learner against it (a moving window).
        games: Recent games of the learner against it.
        booked_wins: Every win of the learner against it booked in this process, never
            halved (with ``booked_games``: what a rollout actor's share added, which its
            halved window cannot tell).
        booked_games: Every game against it booked in this process.
    """

    name: str
    kind: str
    net: PolicyNet | None = None
    spec: str = ""
    wins: float = 0.0
    games: float = 0.0
    search: SearchAgent | None = None
    """The search agent of a ``search`` member."""
    booked_wins: float = 0.0
    booked_games: float = 0.0
    _bot: tuple = field(default=(None, None), repr=False)

    def win_rate(self, parity: float) -> float:
        """The learner's recent win rate against it (parity before any game)."""
        return (self.wins + 2 * parity) / (self.games + 2)

    def record(self, won: int, played: int) -> None:
        """Books ``played`` finished games, ``won`` of them won by the learner."""
        self.booked_wins += won
        self.booked_games += played
        self.wins += won
        self.games += played
        if self.games > WIN_WINDOW:
            self.wins *= 0.5
            self.games *= 0.5

    def bot(self, env: BatchedEnv, seed: int):
        """The batched bot of this member bound to ``env``."""
        if self._bot[0] is not env:
            self._bot = (env, make_batched_bot(env, self.spec, seed))
        return self._bot[1]


def member_from_spec(spec: str, rules: RuleSet, device: torch.device | str) -> Member:
    """A bot or checkpoint member from its spec (see :func:`check_member_spec`)."""
    check_member_spec(spec)
    if spec.startswith("search:") or spec.partition(":")[0] in TEXT_AGENT_KINDS:
        return Member(spec, "search", spec=spec, search=make_agent(spec, rules))
    if _kind(spec) in TABLE_AGENT_KINDS:
        return Member(spec, "search", spec=spec, search=PerView(make_agent(spec, rules)))
    if not spec.startswith("checkpoint:"):
        return Member(spec, "bot", spec=spec)
    net = _load_frozen(spec.partition(":")[2], rules, str(device))
    return Member(spec, "checkpoint", net=net, spec=spec)


class PerView:
    """Plays an agent with ``action_probabilities(view)`` in a batched table's games.

    Args:
        agent: The agent (e.g. a blueprint); asked once per acting player's view.
    """

    def __init__(self, agent: Any) -> None:
        self.agent = agent
        self.name = getattr(agent, "name", type(agent).__name__)
        self._rules: RuleSet | None = None

    def act_batch(self, env: BatchedEnv, rows: torch.Tensor, generator: torch.Generator):
        """Moves for the acting players of ``env``'s games ``rows``, sampled with ``generator``."""
        from liars_env.engine import LiarsDiceGame
        from liars_env.observation import ObservationLayout, view_of

        if self._rules != env.rules:
            self._game, self._layout = LiarsDiceGame(env.rules), ObservationLayout(env.rules)
            self._rules = env.rules
        probs = []
        for state in env.states(rows):
            view = view_of(self._game, self._layout, state)
            probs.append(self.agent.action_probabilities(view, state=state))
        table = torch.from_numpy(np.stack(probs))
        return torch.multinomial(table, 1, generator=generator).squeeze(1).to(env.device)


def frozen_copy(model: PolicyNet) -> PolicyNet:
    """An evaluation-mode copy of ``model`` that training will not change."""
    device = next(model.parameters()).device
    frozen = PolicyNet(model.shape, model.rules).to(device)
    frozen.load_state_dict(model.state_dict())
    frozen.eval()
    for p in frozen.parameters():
        p.requires_grad_(False)
    return frozen


@torch.no_grad()
def act_with(
    member: Member,
    policy: PolicyNet | None,
    env: BatchedEnv,
    obs: torch.Tensor,
    mask: torch.Tensor,
    rows: torch.Tensor,
    generator: torch.Generator,
    shared: tuple[NetworkShape, torch.Tensor] | None = None,
    seed: int = 0,
) -> torch.Tensor:
    """Actions of ``member`` for the acting players of games ``rows``.

    ``shared`` is ``(shape, features)``: network input features already computed for
    the whole batch by a network of that shape; a member whose network computes the
    same features uses them instead of computing its own.
    """
    if member.kind == "bot":
        return member.bot(env, seed).act(mask, rows, obs)
    if member.kind == "search":
        return member.search.act_batch(env, rows, generator)
    net = policy if member.kind == "self" else member.net
    feats = None
    if shared is not None and same_features(net.shape, shared[0]):
        feats = shared[1][rows]
    logits, _ = net(obs[rows], mask[rows], feats)
    return sample_actions(logits, generator)


def same_features(a: NetworkShape, b: NetworkShape) -> bool:
    """Whether networks of shapes ``a`` and ``b`` compute the same input features."""
    return (a.bid_features, a.belief_features) == (b.bid_features, b.belief_features)


class League:
    """Opponents for every game slot of a training batch (see the module docstring).

    Args:
        env: The training batch.
        rng: Draws the opponents.
        generator: Samples the networks' actions.
        self_play: Share of games against the current policy.
        pfsp_power: ``p`` of the PFSP weights.
        pool_size: Most snapshots of the learner kept (oldest dropped first).
        seed: Seeds the bots.
        group_shares: Relative shares of the member groups (``fixed``: bots and
            checkpoints, ``snapshot``, ``exploiter``) in the non-self-play games; see
            :data:`DEFAULT_GROUP_SHARES`.
    """

    def __init__(
        self,
        env: BatchedEnv,
        rng: np.random.Generator,
        generator: torch.Generator,
        self_play: float,
        pfsp_power: float,
        pool_size: int,
        seed: int = 0,
        group_shares: dict[str, float] | None = None,
    ) -> None:
        self.group_shares = {**DEFAULT_GROUP_SHARES, **(group_shares or {})}
        self.env, self.rng, self.generator = env, rng, generator
        self.self_play, self.pfsp_power, self.pool_size = self_play, pfsp_power, pool_size
        self.seed = seed
        self.parity = 1.0 / env.num_players
        self.members: list[Member] = [Member("self", "self")]
        self.slot = np.zeros(env.num_envs, dtype=np.int64)

    # ------------------------------------------------------------ membership
    def add(self, member: Member) -> None:
        """Adds a member (its name must be new)."""
        if any(m.name == member.name for m in self.members):
            raise ValueError(f"the league already has a member {member.name!r}")
        self.members.append(member)
        if member.kind == "snapshot":
            snapshots = [i for i, m in enumerate(self.members) if m.kind == "snapshot"]
            for index in reversed(snapshots[: max(0, len(snapshots) - self.pool_size)]):
                self.remove(index)

    def remove(self, index: int) -> None:
        """Drops member ``index``; the games it was playing get new opponents."""
        del self.members[index]
        orphans = np.flatnonzero(self.slot == index)
        self.slot[self.slot > index] -= 1
        self.assign(orphans)

    def weights(self) -> np.ndarray:
        """Probability of each member being drawn for a new game.

        ``self_play`` goes to the current policy; the rest is split between the groups
        present (fixed members, snapshots, exploiters) by ``group_shares``, and within
        a group by PFSP.
        """
        w = np.zeros(len(self.members))
        groups: dict[str, list[int]] = {}
        for i, m in enumerate(self.members):
            if m.kind != "self":
                groups.setdefault(GROUP_OF_KIND[m.kind], []).append(i)
        if not groups:
            w[0] = 1.0
            return w
        total = sum(self.group_shares[g] for g in groups)
        for group, members in groups.items():
            hard = np.array(
                [(1.0 - self.members[i].win_rate(self.parity)) ** self.pfsp_power for i in members]
            )
            hard = np.maximum(hard, 1e-6)
            share = (1.0 - self.self_play) * self.group_shares[group] / total
            w[members] = share * hard / hard.sum()
        w[0] = self.self_play
        return w / w.sum()

    def assign(self, slots: np.ndarray) -> None:
        """Draws opponents for the game slots ``slots``."""
        if len(slots):
            w = self.weights()
            self.slot[slots] = self.rng.choice(len(self.members), size=len(slots), p=w)

    def record(self, slots: np.ndarray, won: np.ndarray) -> None:
        """Books finished games: ``won[i]`` whether the learner won the game in ``slots[i]``."""
        if len(slots) == 0:
            return
        members = self.slot[slots]
        played = np.bincount(members, minlength=len(self.members))
        wins = np.bincount(members, weights=won.astype(float), minlength=len(self.members))
        for i in np.flatnonzero(played):
            self.members[i].record(float(wins[i]), float(played[i]))

    # ------------------------------------------------------------ play
    @torch.no_grad()
    def act(
        self, policy: PolicyNet, obs: torch.Tensor, mask: torch.Tensor, rows: np.ndarray
    ) -> torch.Tensor:
        """Actions of the opponents to act in games ``rows`` (a full-batch tensor)."""
        device = self.env.device
        actions = torch.zeros(self.env.num_envs, dtype=torch.long, device=device)
        owners = self.slot[rows]
        shared = None
        nets = [i for i, m in enumerate(self.members) if m.kind not in ("bot", "search")]
        net_rows = rows[np.isin(owners, nets)]
        if len(net_rows) and len(policy.features):
            idx = torch.as_tensor(net_rows, device=device)
            full = obs.new_zeros((self.env.num_envs, policy.features_size))
            full[idx] = policy.input_features(obs[idx])
            shared = (policy.shape, full)
        for k in np.unique(owners):
            idx = torch.as_tensor(rows[owners == k], device=device)
            actions[idx] = act_with(
                self.members[k],
                policy,
                self.env,
                obs,
                mask,
                idx,
                self.generator,
                shared,
                self.seed + int(k),
            )
        return actions

    # ------------------------------------------------------------ reports and state
    def table(self) -> list[dict[str, Any]]:
        """One row per member: name, kind, recent games, learner win rate, draw weight."""
        weights = self.weights()
        return [
            {
                "name": m.name,
                "kind": m.kind,
                "games": round(m.games, 1),
                "win_rate": m.win_rate(self.parity),
                "weight": float(weights[i]),
            }
            for i, m in enumerate(self.members)
        ]

    def state(self) -> dict[str, Any]:
        """Tensors and JSON for a checkpoint's ``trainer_state.pt``."""
        nets = {}
        described = []
        for i, m in enumerate(self.members):
            entry = {"name": m.name, "kind": m.kind, "spec": m.spec, "wins": m.wins}
            entry["games"] = m.games
            if m.kind in ("snapshot", "exploiter"):
                for key, value in m.net.state_dict().items():
                    nets[f"league.{i}.{key}"] = value.detach().cpu()
            described.append(entry)
        return {"league": json.dumps(described), "league_nets": nets}

    def load_state(self, state: dict[str, Any], template: PolicyNet) -> None:
        """Restores the members and their statistics from :meth:`state`.

        Bots, checkpoints and searches are made again from their specs; snapshots and exploiters
        get their saved weights (in networks shaped like ``template``).
        """
        described = json.loads(state["league"])
        nets = state["league_nets"]
        rules, device = self.env.rules, self.env.device
        members = []
        for i, entry in enumerate(described):
            kind = entry["kind"]
            if kind == "self":
                member = Member("self", "self")
            elif kind in ("bot", "checkpoint", "search"):
                member = member_from_spec(entry["spec"], rules, device)
                member.name = entry["name"]
            else:
                prefix = f"league.{i}."
                net = frozen_copy(template)
                net.load_state_dict(
                    {k[len(prefix) :]: v for k, v in nets.items() if k.startswith(prefix)}
                )
                member = Member(entry["name"], kind, net=net)
            member.wins, member.games = float(entry["wins"]), float(entry["games"])
            members.append(member)
        self.members = members
        self.assign(np.arange(self.env.num_envs))


@torch.no_grad()
def play_match(
    player: Member,
    opponent: Member,
    rules: RuleSet,
    games: int,
    seed: int,
    device: str | torch.device = "cpu",
    policy: PolicyNet | None = None,
    threads: int | None = DEFAULT_THREADS,
) -> dict[str, Any]:
    """Win rate of ``player`` in one seat against ``opponent`` in all others (batched).

    Seats rotate over the game slots; a game in which the player is eliminated counts as
    a loss at once (and the slot starts a new game). The match stops once ``games``
    games have finished (a few more may finish on the last step); the games still in
    play then are dropped, which favours short games a little. Against a protocol that
    plays every started game out (a fixed number per slot), the win rates of shipped
    models differed by 0.002 or less at 1,000–3,000 games (within the noise), and that
    protocol took 2–3 times as long (its last games run nearly alone). ``policy`` plays
    ``self`` members.
    The match runs on ``threads`` torch threads (``None``: as set; see
    :mod:`liars_env.batched.threads`).
    """
    if isinstance(games, bool) or not isinstance(games, int) or games < 1:
        raise ValueError(f"games must be a positive int, got {games!r}")
    with using_threads(threads):
        return _play_match(player, opponent, rules, games, seed, device, policy, threads)


def _play_match(
    player: Member,
    opponent: Member,
    rules: RuleSet,
    games: int,
    seed: int,
    device: str | torch.device,
    policy: PolicyNet | None,
    threads: int | None,
) -> dict[str, Any]:
    n = rules.num_players
    slots = max(n, min(games, 512) - min(games, 512) % n)
    env = BatchedEnv(
        rules, num_envs=slots, device=device, seed=seed, check_actions=False, threads=threads
    )
    gen = torch.Generator(device=env.device).manual_seed(seed)
    learner = torch.arange(slots, device=env.device) % n
    obs, mask = env.reset()
    wins = played = 0
    nets = [m.net for m in (player, opponent) if m.net is not None]
    if policy is not None:
        nets.append(policy)
    modes = [net.training for net in nets]
    for net in nets:
        net.eval()
    try:
        while played < games:
            mine = env.current_player == learner
            actions = torch.zeros(slots, dtype=torch.long, device=env.device)
            for who, rows in ((player, mine), (opponent, ~mine)):
                idx = rows.nonzero().squeeze(1)
                if len(idx):
                    actions[idx] = act_with(who, policy, env, obs, mask, idx, gen, seed=seed)
            obs, mask, _, dones, info = env.step(actions)
            out = (env.dice_left.gather(1, learner[:, None]).squeeze(1) == 0) & ~dones
            wins += int((dones & (info["winner"] == learner)).sum())
            played += int(dones.sum()) + int(out.sum())
            if bool(out.any()):
                env.reset_games(out)
                obs, mask = env.observe(), env.legal_mask()
    finally:
        for net, mode in zip(nets, modes, strict=True):
            net.train(mode)
    lo, hi = wilson_interval(wins, played)
    return {
        "opponent": opponent.name,
        "games": played,
        "wins": wins,
        "win_rate": wins / played,
        "ci95": [lo, hi],
    }
