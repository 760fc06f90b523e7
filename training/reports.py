"""What a training run shows and writes: progress bar, ``metrics.csv``, curve, tables."""

from __future__ import annotations

import csv
import os
from pathlib import Path
from typing import Any


def write_metrics(path: Path, rows: list[dict[str, Any]]) -> None:
    """Writes ``metrics.csv`` anew (temp file, then rename).

    One row per evaluation; the columns are the union of all rows' keys, since league
    members join over time.
    """
    columns: list[str] = []
    for row in rows:
        columns += [key for key in row if key not in columns]
    tmp = path.with_name(f".{path.name}.tmp")
    with open(tmp, "w", newline="") as handle:
        out = csv.DictWriter(handle, fieldnames=columns)
        out.writeheader()
        out.writerows(rows)
    os.replace(tmp, path)


def tqdm_write(message: str) -> None:
    """Prints a line without breaking a progress bar."""
    from tqdm import tqdm

    tqdm.write(message)


BAR_FORMAT = (
    "{desc}: {percentage:3.0f}%|{bar}| {decisions} learner decisions "
    "[{elapsed}<{remaining}, {decisions_rate}]{postfix}"
)
"""The training bar: learner decisions done of the total, and one rate, in the same unit."""


def decisions_text(done: float, total: float | None) -> str:
    """``done/total`` in whole learner decisions, with thousands separators.

    Example:
        >>> decisions_text(16384, 999424)
        '16,384/999,424'
    """
    return f"{int(done):,}/{int(total):,}" if total else f"{int(done):,}"


def decisions_rate(rate: float | None) -> str:
    """The bar's one rate: ``2,691 learner decisions/s`` (``…`` before it is known).

    Example:
        >>> decisions_rate(2691.4), decisions_rate(None), decisions_rate(0.5)
        ('2,691 learner decisions/s', '… learner decisions/s', '0.50 learner decisions/s')
    """
    if not rate:
        return "… learner decisions/s"
    return f"{rate:,.0f} learner decisions/s" if rate >= 100 else f"{rate:.2f} learner decisions/s"


def progress_bar(enabled: bool, total: int, initial: int):
    """A tqdm bar counting learner decisions to ``total`` (disabled: a silent one).

    It shows one rate, in learner decisions a second, and the count in whole learner
    decisions up to ``total`` (what the run will reach: updates × batch size).
    """
    from tqdm import tqdm

    class DecisionsBar(tqdm):
        @property
        def format_dict(self):
            data = super().format_dict
            elapsed = data.get("elapsed") or 0.0
            rate = data.get("rate")
            if rate is None and elapsed > 0:
                rate = (data["n"] - data.get("initial", 0)) / elapsed
            data["decisions"] = decisions_text(data["n"], data["total"])
            data["decisions_rate"] = decisions_rate(rate)
            return data

    return DecisionsBar(
        total=total,
        initial=initial,
        unit="learner decision",
        disable=not enabled,
        dynamic_ncols=True,
        desc="training",
        bar_format=BAR_FORMAT,
    )


def plot_learning_curve(
    history: list[dict[str, Any]], opponents: list[str], parity: float, title: str, path: Path
) -> Path | None:
    """Writes a PNG of the win rate (95% CI band) against each opponent over training.

    Args:
        history: Rows of ``metrics.csv`` (``step``, ``win_rate_vs_X``, ``ci95_lo_vs_X``,
            ``ci95_hi_vs_X``).
        opponents: The ``X`` to plot.
        parity: Drawn as a dashed line (1 / players).
        title: The plot's title.
        path: Where the PNG goes.

    Returns:
        ``path``, or None when there is nothing to plot.
    """
    if not history:
        return None
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.4, 3.8))
    for opponent in opponents:
        rows = [r for r in history if f"win_rate_vs_{opponent}" in r]
        steps = [r["step"] for r in rows]
        rate = [r[f"win_rate_vs_{opponent}"] for r in rows]
        lo = [r[f"ci95_lo_vs_{opponent}"] for r in rows]
        hi = [r[f"ci95_hi_vs_{opponent}"] for r in rows]
        ax.plot(steps, rate, marker="o", label=f"vs {opponent}")
        ax.fill_between(steps, lo, hi, alpha=0.2)
    ax.axhline(parity, color="grey", linestyle="--", label="parity")
    ax.set_xlabel("learner decisions")
    ax.set_ylabel("win rate (95% CI)")
    ax.set_ylim(0, 1)
    ax.set_title(title)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def print_final_table(table: dict[str, Any]) -> None:
    """Prints the final evaluation table with rich."""
    from rich.console import Console
    from rich.table import Table

    out = Table(
        title="final evaluation: agent in one seat, the bot in all others", title_justify="left"
    )
    for column in ("agent", "opponents", "games", "win rate", "95% CI"):
        out.add_column(column, no_wrap=True)
    for row in table["rows"]:
        out.add_row(
            row["agent"],
            row["bot"],
            str(row["games"]),
            f"{row['win_rate']:.3f}",
            f"[{row['ci95'][0]:.3f}, {row['ci95'][1]:.3f}]",
        )
    Console(width=120).print(out)
