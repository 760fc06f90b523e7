"""Lab sources to student and solution versions, notebooks, and running a notebook's cells.

A lab is one Python script in sphinx-gallery's format (a docstring header, then cells
opened by ``# %%`` whose leading comment lines are the text), holding the instructor's
solution between marker lines::

    def regret_matching(regrets):
        # BEGIN SOLUTION
        positive = np.maximum(regrets, 0.0)
        ...
        # END SOLUTION

The **student version** replaces each marked block by ``raise NotImplementedError(...)``
at the block's indentation, or by the code written after ``->`` on the opening marker
(``# BEGIN SOLUTION -> SETTINGS = ...``); the **solution version** drops the marker
lines. One source, two versions, no copies to drift apart.
"""

from __future__ import annotations

import json
import re
import traceback
from dataclasses import dataclass
from pathlib import Path
from typing import Any

BEGIN = re.compile(r"^(?P<indent>\s*)# BEGIN SOLUTION(?:\s*->\s*(?P<template>.*))?$")
END = re.compile(r"^\s*# END SOLUTION\s*$")
REPOSITORY_URL = "https://github.com/OWNER/liars-dice"
"""Where ``pip install git+...`` finds the project, for the notebooks' install cell: the
one place to set it (a placeholder until the project has its public address)."""

INSTALL_CELL = f"""# Run this cell first in Colab or any fresh Jupyter (skip it where liars-dice is
# installed): liars-dice from its repository, with the CPU build of torch.
%pip install torch --index-url https://download.pytorch.org/whl/cpu
%pip install "liars-dice @ git+{REPOSITORY_URL}"
%matplotlib inline"""
"""The first cell of every notebook of the tutorials and labs."""

QUICK_ENV = "LIARS_COURSE_QUICK"
"""Set to ``1``, the labs train and iterate less: how the tests run them in seconds."""

TODO = 'raise NotImplementedError("exercise: write this part (see the text above)")'
"""What a marked block becomes in the student version, unless its marker says."""


def _versions(text: str, where: str) -> tuple[str, str]:
    student: list[str] = []
    solution: list[str] = []
    opened: int | None = None
    for number, line in enumerate(text.splitlines(), 1):
        begin = BEGIN.match(line)
        if begin:
            if opened is not None:
                raise ValueError(
                    f"{where}:{number}: BEGIN SOLUTION inside the block of line {opened}"
                )
            opened = number
            student.append(begin["indent"] + (begin["template"] or TODO))
        elif END.match(line):
            if opened is None:
                raise ValueError(f"{where}:{number}: END SOLUTION without a BEGIN SOLUTION")
            opened = None
        else:
            solution.append(line)
            if opened is None:
                student.append(line)
    if opened is not None:
        raise ValueError(f"{where}:{opened}: BEGIN SOLUTION never closed by END SOLUTION")
    return "\n".join(student) + "\n", "\n".join(solution) + "\n"


def student_version(text: str, where: str = "lab") -> str:
    r"""The lab with every solution block replaced (see the module docstring).

    Raises:
        ValueError: on unbalanced markers, naming ``where`` and the line.

    Example:
        >>> src = "def f():\n    # BEGIN SOLUTION\n    return 1\n    # END SOLUTION\n"
        >>> print(student_version(src), end="")
        def f():
            raise NotImplementedError("exercise: write this part (see the text above)")
    """
    return _versions(text, where)[0]


def solution_version(text: str, where: str = "lab") -> str:
    """The lab with the marker lines removed.

    Raises:
        ValueError: on unbalanced markers, naming ``where`` and the line.
    """
    return _versions(text, where)[1]


@dataclass
class Cell:
    """One notebook cell: ``kind`` is ``"markdown"`` or ``"code"``."""

    kind: str
    source: str


def script_cells(text: str) -> list[Cell]:
    r"""The cells of a script in sphinx-gallery's format.

    The docstring header becomes the first markdown cell (its reST title a ``#``
    heading); each ``# %%`` cell gives a markdown cell of its leading comment lines and a
    code cell of the rest. reST section underlines become ``##`` headings.

    Example:
        >>> cells = script_cells("# %%\n# Some *text*\nx = 1\n")
        >>> [(c.kind, c.source) for c in cells]
        [('markdown', 'Some *text*'), ('code', 'x = 1')]
    """
    header = re.match(r'\s*"""(.*?)"""', text, re.S)
    cells: list[Cell] = []
    body = text
    if header:
        cells.append(Cell("markdown", _markdown(header[1].strip("\n").splitlines(), "#")))
        body = text[header.end() :]
    for chunk in re.split(r"^# %%.*$", body, flags=re.M):
        lines = chunk.strip("\n").splitlines()
        comments = []
        while lines and (lines[0].startswith("# ") or lines[0] == "#"):
            comments.append(lines.pop(0)[2:])
        if comments:
            cells.append(Cell("markdown", _markdown(comments, "##")))
        code = "\n".join(lines).strip("\n")
        if code:
            cells.append(Cell("code", code))
    return cells


ROLE = re.compile(r":(\w+):`(~?)([^`<]*?)\s*(?:<[^>]*>)?`")
"""A reST role: ``:class:`~a.B```, ``:doc:`text </page>```."""


def _role(match: re.Match) -> str:
    kind, short, text = match[1], match[2], match[3]
    if kind == "doc":
        return text
    return f"`{text.split('.')[-1] if short else text}`"


def _markdown(lines: list[str], level: str) -> str:
    """reST-ish text to Markdown: underlined titles to headings, roles and ``x`` to `x`."""
    out: list[str] = []
    for line in lines:
        if out and line and set(line) <= set("=-~") and len(line) >= len(out[-1]) > 0:
            out[-1] = f"{level if set(line) == {'='} else '##'} {out[-1]}"
            continue
        line = re.sub(r"``([^`]+)``", r"`\1`", line.replace("\\ ", ""))
        out.append(ROLE.sub(_role, line))
    return "\n".join(out).strip()


def notebook(cells: list[Cell], first_cell: str | None = None, lab: str | None = None) -> dict:
    """An nbformat-4 notebook (a JSON-able dict) of ``cells``.

    Args:
        cells: The cells.
        first_cell: Code for a first cell (the install cell), if any.
        lab: The lab's name, kept in the notebook's metadata for grading.
    """
    if first_cell:
        cells = [Cell("code", first_cell), *cells]
    out = []
    for i, cell in enumerate(cells):
        entry: dict[str, Any] = {
            "cell_type": cell.kind,
            "id": f"cell-{i}",
            "metadata": {},
            "source": cell.source.splitlines(keepends=True),
        }
        if cell.kind == "code":
            entry.update(execution_count=None, outputs=[])
        out.append(entry)
    metadata: dict[str, Any] = {
        "kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"},
        "language_info": {"name": "python"},
    }
    if lab:
        metadata["liars_course"] = {"lab": lab}
    return {"cells": out, "metadata": metadata, "nbformat": 4, "nbformat_minor": 5}


def read_cells(path: str | Path) -> list[Cell]:
    """The cells of a notebook (``.ipynb``) or of a script in sphinx-gallery's format.

    Raises:
        ValueError: if the file is neither, or not a readable notebook.
    """
    path = Path(path)
    if path.suffix == ".py":
        return script_cells(path.read_text())
    if path.suffix != ".ipynb":
        raise ValueError(f"{path}: expected a .ipynb notebook or a .py script")
    try:
        data = json.loads(path.read_text())
        return [Cell(c["cell_type"], _text(c["source"])) for c in data["cells"]]
    except (ValueError, KeyError, TypeError) as exc:
        raise ValueError(f"{path}: not a readable Jupyter notebook ({exc})") from exc


def _text(source: str | list[str]) -> str:
    """A cell's source, stored as one string or as a list of lines."""
    return "".join(source) if isinstance(source, list) else source


@dataclass
class CellError:
    """A code cell that raised: its number among the code cells and the error."""

    cell: int
    error: str
    message: str


def run_cells(cells: list[Cell], namespace: dict, where: str = "notebook") -> list[CellError]:
    """Runs the code cells in order in ``namespace``, on past a cell that raises.

    IPython lines (``%pip``, ``!ls``, ``%matplotlib``) are skipped: the environment is
    the one this runs in.

    Returns:
        The cells that raised, with their errors; empty when every cell ran.
    """
    errors = []
    code_cells = [c for c in cells if c.kind == "code"]
    for n, cell in enumerate(code_cells, 1):
        lines = cell.source.splitlines()
        source = "\n".join("" if s.lstrip().startswith(("%", "!")) else s for s in lines)
        try:
            exec(compile(source, f"{where} cell {n}", "exec"), namespace)  # noqa: S102
        except Exception as exc:  # noqa: BLE001 (a student's cell may raise anything)
            last = traceback.format_exception_only(type(exc), exc)[-1].strip()
            errors.append(CellError(n, type(exc).__name__, last))
    return errors
