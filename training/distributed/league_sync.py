"""The league across processes: members as plain data, changes as deltas, results merged.

The driver's :class:`~liars_train.league.League` is the one the run saves and changes
(snapshots, exploiters, a resumed run's re-sync). Each rollout actor holds a copy bound to
its own games. :class:`LeagueMirror` remembers what the actors hold and sends only what
changed (:class:`Delta`: members that joined, with their weights, the names of those that
left, and everyone's PFSP statistics); :func:`apply_delta` replays it on an actor's copy in
the driver's order, and :func:`merge_results` and :func:`add_booked` fold the games the
actors played back into the driver's statistics.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import torch

from liars_env.agents.policy import PolicyNet
from liars_env.agents.registry import make_agent
from liars_env.rules import RuleSet
from liars_train.league import League, Member


def member_payload(member: Member) -> dict[str, Any]:
    """``member`` as plain data a Ray actor can rebuild it from (networks as weights)."""
    out: dict[str, Any] = {"name": member.name, "kind": member.kind, "spec": member.spec}
    out.update(wins=member.wins, games=member.games)
    if member.net is not None:
        out["shape"] = member.net.shape
        out["weights"] = {k: v.detach().cpu() for k, v in member.net.state_dict().items()}
    return out


def member_from_payload(payload: dict[str, Any], rules: RuleSet) -> Member:
    """The member of :func:`member_payload`, its network frozen on the CPU."""
    kind = payload["kind"]
    member = Member(payload["name"], kind, spec=payload["spec"])
    if "weights" in payload:
        net = PolicyNet(payload["shape"], rules)
        net.load_state_dict(payload["weights"])
        net.eval()
        member.net = net.requires_grad_(False)
    elif kind == "search":
        member.search = make_agent(payload["spec"], rules)
    member.wins, member.games = float(payload["wins"]), float(payload["games"])
    return member


@dataclass
class Delta:
    """What changed in the driver's league since the actors last heard."""

    joined: list[dict[str, Any]] = field(default_factory=list)
    """Payloads of the members that joined, in the order they joined."""
    left: list[str] = field(default_factory=list)
    """Names of the members that left (besides snapshots the pool pushed out)."""
    stats: dict[str, tuple[float, float]] = field(default_factory=dict)
    """``name: (wins, games)`` of every member the actors held before the delta."""


class LeagueMirror:
    """The driver's record of the league its actors hold (see the module docstring).

    Args:
        league: The driver's league.
    """

    def __init__(self, league: League) -> None:
        self.league = league
        self.names = [m.name for m in league.members]

    def full(self) -> list[dict[str, Any]]:
        """The whole league as payloads (a new or restarted actor's)."""
        return [member_payload(m) for m in self.league.members]

    def delta(self) -> Delta:
        """What the actors need to hold the driver's league; they hold it afterwards."""
        members = {m.name: m for m in self.league.members}
        held = set(self.names)
        out = Delta(stats={n: (members[n].wins, members[n].games) for n in held & set(members)})
        out.joined = [member_payload(m) for m in self.league.members if m.name not in held]
        out.left = [n for n in self.names if n not in members]
        self.names = list(members)
        return out


def apply_delta(league: League, delta: Delta) -> None:
    """Replays ``delta`` on an actor's league: statistics, then joins, then leaves."""
    for member in league.members:
        if member.name in delta.stats:
            member.wins, member.games = delta.stats[member.name]
    rules, held = league.env.rules, {m.name for m in league.members}
    for payload in delta.joined:  # (a restarted actor may hold them already)
        if payload["name"] not in held:
            league.add(member_from_payload(payload, rules))  # the pool drops old snapshots
    for name in delta.left:
        index = next((i for i, m in enumerate(league.members) if m.name == name), None)
        if index is not None:
            league.remove(index)


def league_results(league: League) -> dict[str, tuple[float, float]]:
    """``name: (wins, games)`` of an actor's league, sent back after a collection."""
    return {m.name: (m.wins, m.games) for m in league.members}


def league_booked(league: League) -> dict[str, tuple[float, float]]:
    """``name: (wins, games)`` every game booked in an actor's league so far (never halved).

    The difference of two of these is what a share played in between (:func:`booked_since`).
    """
    return {m.name: (m.booked_wins, m.booked_games) for m in league.members}


def booked_since(
    league: League, before: dict[str, tuple[float, float]]
) -> dict[str, tuple[float, float]]:
    """``name: (wins, games)`` booked in ``league`` since :func:`league_booked` gave ``before``."""
    out = {}
    for name, (wins, games) in league_booked(league).items():
        wins0, games0 = before.get(name, (0.0, 0.0))
        if games > games0:
            out[name] = (wins - wins0, games - games0)
    return out


def add_booked(league: League, booked: list[dict[str, tuple[float, float]]]) -> None:
    """Books on the driver's ``league`` the games each share played (:func:`booked_since`).

    Through :meth:`~liars_train.league.Member.record`, so the figures are halved past
    :data:`~liars_train.league.WIN_WINDOW` games as in a run of one process. Members that
    left the driver's league since are skipped.
    """
    members = {m.name: m for m in league.members}
    for share in booked:
        for name, (wins, games) in share.items():
            if name in members:
                members[name].record(wins, games)


def merge_results(
    league: League,
    results: list[dict[str, tuple[float, float]]],
    booked: list[dict[str, tuple[float, float]]],
) -> None:
    """Folds the shares of one batch, all started from the driver's figures, into them.

    The first share's figures are taken as they stand (so with one share the driver's
    are that actor's, exactly, as in a run of one process); each other share's games
    are then booked on top (:func:`add_booked`). The games, not the difference of two
    figures: a share whose window halved while it played would otherwise take back more
    than it added.
    """
    if not results:
        return
    for member in league.members:
        if member.name in results[0]:
            wins, games = results[0][member.name]
            member.wins, member.games = float(wins), float(games)
    add_booked(league, booked[1:])


def state_dict_cpu(net: torch.nn.Module) -> dict[str, torch.Tensor]:
    """A copy of ``net``'s weights of now, on the CPU (what goes into Ray's object store).

    A copy even on the CPU, where ``.cpu()`` would hand back the live parameters: the
    driver plays a launch's shares and books an evaluation's ``best`` weights after the
    optimizer has changed them in place.
    """
    return {k: v.detach().to("cpu", copy=True) for k, v in net.state_dict().items()}
