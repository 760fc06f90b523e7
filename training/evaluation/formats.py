"""Printing results as a script reads them: rich tables never cut, Markdown, JSON, numbers.

Every results command (``liars-eval``, ``liars-solve``) prints through here:

* :func:`stdout_console` is a rich console that, when standard output is not a terminal
  (a log file, a pipe), is wide enough that no column is ever cut or wrapped;
* :func:`render` prints a table as a rich ``table``, GitHub ``markdown`` or ``json``
  (:data:`FORMATS`, the ``--format`` option);
* :func:`format_rate` and :func:`number` print rates and values sensibly: no ``0/s``
  for a slow run, no ``-0.000000`` or ``-3.47e-18`` for a zero.
"""

from __future__ import annotations

import json
import math
import sys
from collections.abc import Sequence
from typing import Any, TextIO

FORMATS = ("table", "markdown", "json")
"""The output formats of ``--format``."""

WIDE = 10_000
"""The console width when standard output is not a terminal: wider than any table."""


def stdout_console(file: TextIO | None = None) -> Any:
    """A rich console on standard output that never cuts a table's columns.

    On a terminal it takes the terminal's width; otherwise (a pipe, a log file) it is
    :data:`WIDE` characters wide and uses no colour codes, so each table prints at its
    natural width.
    """
    from rich.console import Console

    file = file or sys.stdout
    if file.isatty():
        return Console(file=file)
    return Console(file=file, width=WIDE, no_color=True, highlight=False, soft_wrap=True)


def stderr_console() -> Any:
    """A rich console on standard error (warnings, progress lines), never wrapping."""
    from rich.console import Console

    if sys.stderr.isatty():
        return Console(stderr=True)
    return Console(stderr=True, width=WIDE, no_color=True, highlight=False, soft_wrap=True)


def check_format(fmt: str) -> str:
    """``fmt`` if it is one of :data:`FORMATS`.

    Raises:
        ValueError: naming the bad value and the formats.
    """
    if fmt not in FORMATS:
        raise ValueError(f"unknown output format {fmt!r}; expected one of {', '.join(FORMATS)}")
    return fmt


def markdown_table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """A GitHub Markdown table (``|`` in cells escaped).

    Example:
        >>> print(markdown_table(["agent", "win rate"], [["belief", "0.512"]]))
        | agent | win rate |
        |---|---|
        | belief | 0.512 |
    """

    def cell(text: str) -> str:
        return str(text).replace("|", "\\|").replace("\n", " ")

    lines = ["| " + " | ".join(cell(h) for h in headers) + " |"]
    lines.append("|" + "---|" * len(headers))
    lines += ["| " + " | ".join(cell(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def rich_table(
    title: str, headers: Sequence[str], rows: Sequence[Sequence[str]], left: int = 1
) -> Any:
    """A rich table whose first ``left`` columns are left-aligned, the rest right; no wrap."""
    from rich.table import Table

    table = Table(title=title, title_justify="left")
    for i, header in enumerate(headers):
        table.add_column(header, justify="left" if i < left else "right", no_wrap=True)
    for row in rows:
        table.add_row(*row)
    return table


def render(
    console: Any,
    fmt: str,
    title: str,
    headers: Sequence[str],
    rows: Sequence[Sequence[str]],
    left: int = 1,
) -> None:
    """Prints one table on ``console`` as ``fmt`` (``table`` or ``markdown``)."""
    if fmt == "markdown":
        console.print(f"**{title}**\n", markup=False, highlight=False)
        console.print(markdown_table(headers, rows), markup=False, highlight=False)
        console.print("", markup=False)
    else:
        console.print(rich_table(title, headers, rows, left))


def print_json(data: Any, file: TextIO | None = None) -> None:
    """Prints ``data`` as indented JSON on standard output (the ``json`` format)."""
    print(json.dumps(data, indent=2), file=file or sys.stdout, flush=True)


def number(value: float, spec: str = ".6f", zero: float = 1e-12) -> str:
    """``value`` formatted with ``spec``, a value within ``zero`` of 0 as plain 0.

    Example:
        >>> number(-3.47e-18, ".2e"), number(-0.0000001, "+.6f"), number(-0.25, "+.4f")
        ('0.00e+00', '+0.000000', '-0.2500')
    """
    if abs(value) < zero or value == 0:
        value = 0.0
    text = format(value, spec)
    # rounding can still make a negative zero ("-0.000000"): print it as zero
    stripped = text.lstrip("+-")
    if text.startswith("-") and not any(ch in "123456789" for ch in stripped.split("e")[0]):
        text = ("+" if "+" in spec else "") + stripped
    return text


def format_rate(count: float, seconds: float, unit: str) -> str:
    """A rate that reads at any speed: ``1,234 unit/s``, ``2.50 unit/s``, ``6.85 s per unit``.

    Never ``0/s``: below one a second, the time per item.

    Example:
        >>> format_rate(178, 1218.6, "decisions")
        '6.85 s per decision'
        >>> format_rate(56000, 20.0, "decisions")
        '2,800 decisions/s'
    """
    if seconds <= 0 or count <= 0 or not math.isfinite(seconds):
        return f"no {unit} timed"
    rate = count / seconds
    if rate >= 100:
        return f"{rate:,.0f} {unit}/s"
    if rate >= 1:
        return f"{rate:.2f} {unit}/s"
    single = unit[:-1] if unit.endswith("s") else unit
    return f"{seconds / count:.3g} s per {single}"
