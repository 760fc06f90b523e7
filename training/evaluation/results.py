"""The results of a tournament: per-agent rows, statistics, tables, plot and JSON.

:func:`summarize` turns game records into an :class:`EvalResult`: per agent its games,
wins, win rate with a 95% Wilson interval, mean place and an openskill (Plackett-Luce)
rating, and for a text agent its fallbacks and failed requests; plus the pairwise
head-to-head rates. A text agent that fell back on more than the result's
``fallback_threshold`` of its decisions is flagged (:attr:`AgentResult.measures_fallback`):
its row measures the fallback, not the agent.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

from liars_env.rules import RuleSet
from liars_train.stats import wilson_interval

DEFAULT_FALLBACK_THRESHOLD = 0.1
"""The share of a text agent's decisions above which its row measures the fallback."""

FLAG = "(!)"
"""What marks a row that measures the fallback, beside the agent's name."""


@dataclass
class AgentResult:
    """One agent's line of the results."""

    name: str
    spec: str
    games: int
    wins: int
    win_rate: float
    ci95: tuple[float, float]
    mean_place: float
    rating: float
    rating_sigma: float
    text_usage: dict | None = None
    """For a text agent (``llm:``), its counts summed over the games: ``decisions``,
    ``requests``, ``cached``, ``reprompts``, ``request_retries``, ``failed_requests``,
    ``fallbacks`` (moves it did not choose: see :mod:`liars_env.agents.llm`),
    ``prompt_tokens``, ``completion_tokens`` and ``fallback_rate``; ``None`` for others."""
    measures_fallback: bool = False
    """A text agent whose ``fallback_rate`` is over the result's threshold: its win rate
    is the fallback's more than its own."""


@dataclass
class EvalResult:
    """A whole tournament: settings, per-agent results and head-to-head rates."""

    rules: dict
    num_players: int
    games: int
    seed: int
    agents: list[AgentResult]
    head_to_head: list[list[float | None]] = field(default_factory=list)
    """``head_to_head[i][j]``: share of games where agent i finished ahead of agent j
    (ties count half); ``None`` on the diagonal."""
    decisions: int = 0
    seconds: float = 0.0
    fallback_threshold: float = DEFAULT_FALLBACK_THRESHOLD
    """The fallback rate above which a text agent's row is flagged."""
    stopped: str | None = None
    """Why the run stopped before its last game (``--max-calls``), else ``None``; the
    results then hold the games finished before it."""
    run: dict = field(default_factory=dict)
    """How the result was made (:func:`liars_train.evaluation.provenance.run_info`):
    command, versions, seed, endpoint settings; empty from the Python API unless given."""

    def to_json(self) -> dict:
        """A JSON-able dict with ``agents: [{name, games, wins, win_rate, ci95, ...}]``."""
        return asdict(self)

    @property
    def flagged(self) -> list[AgentResult]:
        """The agents whose rows measure the fallback."""
        return [a for a in self.agents if a.measures_fallback]

    @property
    def title(self) -> str:
        """The per-agent table's title."""
        head = f"{self.games} games, {self.num_players} players, seed {self.seed}"
        return f"{head} (stopped early: {self.stopped})" if self.stopped else head

    def rows(self) -> tuple[list[str], list[list[str]]]:
        """The per-agent table as headers and rows of text (what every format prints)."""
        headers = ["agent", "games", "wins", "win rate", "95% CI", "mean place", "rating"]
        text = any(a.text_usage for a in self.agents)
        if text:  # text agents: fallbacks beside the win rates, and what they cost
            headers += ["fallbacks", "failed requests", "requests (cached)", "tokens in/out"]
        rows = []
        for a in self.agents:
            row = [
                f"{a.name} {FLAG}" if a.measures_fallback else a.name,
                str(a.games),
                str(a.wins),
                f"{a.win_rate:.3f}",
                f"[{a.ci95[0]:.3f}, {a.ci95[1]:.3f}]",
                f"{a.mean_place:.2f}",
                f"{a.rating:.1f} ± {a.rating_sigma:.1f}",
            ]
            if text:
                u = a.text_usage
                row += (
                    [
                        f"{u['fallbacks']}/{u['decisions']} ({100 * u['fallback_rate']:.1f}%)",
                        str(u.get("failed_requests", 0)),
                        f"{u['requests']} ({u['cached']})",
                        f"{u['prompt_tokens']}/{u['completion_tokens']}",
                    ]
                    if u
                    else ["", "", "", ""]
                )
            rows.append(row)
        return headers, rows

    def head_to_head_rows(self) -> tuple[list[str], list[list[str]]]:
        """The head-to-head table as headers and rows of text."""
        headers = ["", *(a.name for a in self.agents)]
        rows = [
            [a.name, *("-" if v is None else f"{v:.3f}" for v in row)]
            for a, row in zip(self.agents, self.head_to_head, strict=True)
        ]
        return headers, rows

    def table(self):
        """A rich table of the per-agent results."""
        from liars_train.evaluation.formats import rich_table

        return rich_table(self.title, *self.rows())

    def head_to_head_table(self):
        """A rich table of the pairwise rates (row finished ahead of column)."""
        from liars_train.evaluation.formats import rich_table

        return rich_table("head to head: row ahead of column", *self.head_to_head_rows())

    def warnings(self) -> list[str]:
        """One line per flagged agent: its fallback rate, the threshold, the fallback."""
        out = []
        for a in self.flagged:
            u = a.text_usage or {}
            out.append(
                f"warning: {a.name} fell back on {u.get('fallbacks', 0)} of its "
                f"{u.get('decisions', 0)} decisions ({100 * u.get('fallback_rate', 0):.1f}%, "
                f"over the threshold of {100 * self.fallback_threshold:g}%; "
                f"{u.get('failed_requests', 0)} failed requests): its row {FLAG} measures the "
                "fallback, not the agent"
            )
        return out

    def plot(self, path: str | Path) -> Path:
        """Writes a PNG bar chart of the win rates with their 95% intervals."""
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        names = [a.name for a in self.agents]
        rates = np.array([a.win_rate for a in self.agents])
        lo = np.clip(rates - np.array([a.ci95[0] for a in self.agents]), 0, None)
        hi = np.clip(np.array([a.ci95[1] for a in self.agents]) - rates, 0, None)
        fig, ax = plt.subplots(figsize=(1.6 + 1.3 * len(names), 3.6))
        ax.bar(names, rates, yerr=[lo, hi], capsize=6, color="#4c72b0")
        ax.axhline(1 / self.num_players, color="grey", linestyle="--", label="parity")
        ax.set_ylabel("win rate (95% Wilson CI)")
        ax.set_ylim(0, 1)
        ax.set_title(f"{self.games} games, {self.num_players} players")
        ax.legend()
        fig.tight_layout()
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        fig.savefig(path, dpi=110)
        plt.close(fig)
        return path


def display_names(specs: Sequence[str]) -> list[str]:
    """Unique names for the agents: repeated names get ``#2``, ``#3`` and so on.

    An ``llm:`` spec is named without its settings (``llm:MODEL``); the spec itself
    stays in the results' ``spec`` field.

    Example:
        >>> display_names(["probabilistic", "random", "random"])
        ['probabilistic', 'random', 'random#2']
        >>> display_names(["llm:qwen2.5:7b?base_url=http://127.0.0.1:8000/v1", "belief"])
        ['llm:qwen2.5:7b', 'belief']
    """
    seen: dict[str, int] = {}
    names = []
    for spec in specs:
        short = spec.rpartition("?")[0] if spec.startswith("llm:") and "?" in spec else spec
        seen[short] = seen.get(short, 0) + 1
        names.append(short if seen[short] == 1 else f"{short}#{seen[short]}")
    return names


def total_usage(records: Sequence[tuple], agent_index: int) -> dict | None:
    """An agent's text-usage counts summed over games, with its fallback rate."""
    rows = [r[3][agent_index] for r in records if len(r) > 3 and r[3][agent_index] is not None]
    if not rows:
        return None
    total: dict = {}
    for row in rows:
        for key, value in row.items():
            total[key] = total.get(key, 0) + value
    total["fallback_rate"] = total.get("fallbacks", 0) / max(1, total.get("decisions", 0))
    return total


def summarize(
    rules: RuleSet,
    specs: Sequence[str],
    records: Sequence[tuple],
    seed: int,
    seconds: float = 0.0,
    fallback_threshold: float = DEFAULT_FALLBACK_THRESHOLD,
) -> EvalResult:
    """Per-agent statistics, ratings and head-to-head rates from game records.

    Raises:
        ValueError: for a ``fallback_threshold`` outside [0, 1].
    """
    from openskill.models import PlackettLuce

    if not 0.0 <= fallback_threshold <= 1.0:
        raise ValueError(f"fallback_threshold must lie in [0, 1], got {fallback_threshold!r}")
    n = len(specs)
    names = display_names(specs)
    places = np.array([r[1] for r in records], dtype=float).reshape(len(records), n)
    model = PlackettLuce()
    ratings = [model.rating(name=name) for name in names]
    for row in places:
        rated = model.rate([[r] for r in ratings], ranks=row.tolist())
        ratings = [team[0] for team in rated]
    total = len(records)
    results = []
    for i, (name, spec) in enumerate(zip(names, specs, strict=True)):
        wins = int((places[:, i] == 1).sum())
        usage = total_usage(records, i)
        results.append(
            AgentResult(
                name=name,
                spec=spec,
                games=total,
                wins=wins,
                win_rate=wins / total if total else 0.0,
                ci95=wilson_interval(wins, total),
                mean_place=float(places[:, i].mean()) if total else 0.0,
                rating=float(ratings[i].mu),
                rating_sigma=float(ratings[i].sigma),
                text_usage=usage,
                measures_fallback=bool(usage and usage["fallback_rate"] > fallback_threshold),
            )
        )
    h2h: list[list[float | None]] = []
    for i in range(n):
        row: list[float | None] = []
        for j in range(n):
            if i == j:
                row.append(None)
                continue
            ahead = (places[:, i] < places[:, j]).sum() + 0.5 * (places[:, i] == places[:, j]).sum()
            row.append(float(ahead / total) if total else 0.0)
        h2h.append(row)
    return EvalResult(
        rules=rules.to_dict(),
        num_players=rules.num_players,
        games=total,
        seed=seed,
        agents=results,
        head_to_head=h2h,
        decisions=int(sum(r[2] for r in records)),
        seconds=seconds,
        fallback_threshold=fallback_threshold,
    )
