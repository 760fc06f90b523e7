"""``liars-course``: build the labs' student and solution notebooks, grade submissions.

Examples::

    liars-course build course-kit                 # course-kit/{student,solutions}/lab_*.ipynb
    liars-course grade submissions/ --out grades.csv
    liars-course grade alice/lab_b_cfr.ipynb --lab cfr

Grading runs each submission's code cells in a fresh Python process, in an empty
temporary folder, skipping IPython lines (``%pip``); a cell that raises is noted and the
next one runs. Then the lab's check (:func:`~liars_train.course.checks.run_check`) reads
the names the lab asks for from what the cells defined, so a student cannot change what
is checked by editing the check cell. The lab of a submission comes from its notebook's
metadata (the built notebooks carry it), else its file name (``lab_b_cfr``, ``cfr``), else
``--lab``.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from liars_train.course.checks import LABS, run_check
from liars_train.course.notebooks import (
    INSTALL_CELL,
    QUICK_ENV,
    notebook,
    read_cells,
    run_cells,
    script_cells,
    solution_version,
    student_version,
)

LAB_SOURCES = Path(__file__).resolve().parents[2] / "docs" / "labs"
"""The labs' sources in a checkout of the repository (``docs/labs/lab_*.py``)."""


def lab_of(path: Path) -> str | None:
    """The lab a submission is for: its notebook metadata, else its file name."""
    if path.suffix == ".ipynb":
        try:
            meta = json.loads(path.read_text()).get("metadata", {})
            lab = meta.get("liars_course", {}).get("lab")
        except ValueError:
            lab = None
        if lab in LABS:
            return lab
    found = [lab for lab in LABS if lab in path.stem.lower()]
    return found[0] if len(found) == 1 else None


def build(out: Path, sources: Path = LAB_SOURCES) -> list[Path]:
    """Writes ``out/student`` and ``out/solutions``: each lab as ``.py`` and ``.ipynb``.

    Raises:
        ValueError: if ``sources`` holds no ``lab_*.py`` or a lab's markers are unbalanced.
    """
    labs = sorted(Path(sources).glob("lab_*.py"))
    if not labs:
        raise ValueError(f"no lab_*.py in {sources}; pass the repository's docs/labs folder")
    written = []
    for source in labs:
        text = source.read_text()
        lab = lab_of(source)
        for kind, version in (
            ("student", student_version(text, str(source))),
            ("solutions", solution_version(text, str(source))),
        ):
            folder = out / kind
            folder.mkdir(parents=True, exist_ok=True)
            script = folder / source.name
            script.write_text(version)
            book = script.with_suffix(".ipynb")
            book.write_text(
                json.dumps(notebook(script_cells(version), INSTALL_CELL, lab), indent=1) + "\n"
            )
            written += [script, book]
    return written


def grade_one(path: Path, lab: str) -> dict:
    """Runs one submission here (in this process) and returns its report as a dict.

    The submission's own check cell (any cell calling ``check_lab``) is not run: the
    check runs once, here, on the names the cells defined.
    """
    namespace: dict = {"__name__": "__main__"}
    # the check runs below, once: the notebook's own check cell is left out
    cells = [c for c in read_cells(path) if not (c.kind == "code" and "check_lab(" in c.source)]
    errors = run_cells(cells, namespace, where=path.name)
    report = run_check(lab, namespace)
    return {
        "submission": str(path),
        "lab": lab,
        "passed": report.passed,
        "lines": report.lines,
        "figures": report.figures,
        "cell_errors": [f"cell {e.cell}: {e.message.splitlines()[0]}" for e in errors],
    }


def grade(paths: list[Path], lab: str | None = None, timeout: float = 1800, quick: bool = False):
    """Grades each submission in its own process; returns one dict per submission.

    Args:
        paths: Submissions (``.ipynb`` or ``.py``), or folders of them.
        lab: The lab, where a submission does not say.
        timeout: Seconds one submission may run.
        quick: Run the labs in their quick form (:data:`QUICK_ENV`; for testing).

    Raises:
        ValueError: for a path that is not there, or a submission whose lab is unknown.
    """
    files = []
    for path in paths:
        if path.is_dir():
            files += sorted(p for p in path.rglob("*") if p.suffix in (".ipynb", ".py"))
        elif path.is_file():
            files.append(path)
        else:
            raise ValueError(f"{path}: no such submission file or folder")
    env = {**os.environ, "MPLBACKEND": "Agg", QUICK_ENV: "1" if quick else "0"}
    results = []
    for file in files:
        which = lab_of(file) or lab
        if which not in LABS:
            raise ValueError(
                f"{file}: which lab? (no lab in its metadata or name); pass --lab, one of "
                f"{', '.join(LABS)}"
            )
        command = [sys.executable, "-m", "liars_train.course.grade", "one", str(file.resolve())]
        with tempfile.TemporaryDirectory() as folder:
            try:
                done = subprocess.run(
                    [*command, "--lab", which],
                    cwd=folder,
                    env=env,
                    capture_output=True,
                    text=True,
                    timeout=timeout,
                )
            except subprocess.TimeoutExpired:
                results.append(_failed(file, which, f"ran over {timeout:.0f} s"))
                continue
        lines = done.stdout.strip().splitlines()
        if done.returncode != 0 or not lines:
            results.append(_failed(file, which, (done.stderr.strip() or "no report")[-500:]))
            continue
        results.append(json.loads(lines[-1]))
    return results


def _failed(file: Path, lab: str, why: str) -> dict:
    return {
        "submission": str(file),
        "lab": lab,
        "passed": False,
        "lines": [f"not yet: the grader could not run it: {why}"],
        "figures": {},
        "cell_errors": [],
    }


def build_parser() -> argparse.ArgumentParser:
    """The ``liars-course`` argument parser."""
    parser = argparse.ArgumentParser(prog="liars-course", description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    make = commands.add_parser("build", help="write the student and solution notebooks")
    make.add_argument("out", type=Path, help="folder to write student/ and solutions/ into")
    make.add_argument("--labs", type=Path, default=LAB_SOURCES, help="the labs' sources")
    marking = commands.add_parser("grade", help="run the checks over submissions")
    marking.add_argument("paths", type=Path, nargs="+", help="notebooks, scripts or folders")
    marking.add_argument("--lab", choices=sorted(LABS), help="lab of unlabelled submissions")
    marking.add_argument("--timeout", type=float, default=1800, help="seconds per submission")
    marking.add_argument("--out", type=Path, help="write the grades as CSV")
    marking.add_argument("--quick", action="store_true", help="the labs' quick form (tests)")
    one = commands.add_parser("one", help=argparse.SUPPRESS)
    one.add_argument("path", type=Path)
    one.add_argument("--lab", required=True, choices=sorted(LABS))
    return parser


def main(argv: list[str] | None = None) -> int:
    """Entry point of ``liars-course``; returns the exit status (1: a submission failed)."""
    args = build_parser().parse_args(argv)
    try:
        if args.command == "build":
            for path in build(args.out, args.labs):
                print(path)
            return 0
        if args.command == "one":
            result = grade_one(args.path, args.lab)
            print(json.dumps(result))
            return 0
        results = grade(args.paths, args.lab, args.timeout, args.quick)
    except ValueError as exc:
        print(f"liars-course: {exc}", file=sys.stderr)
        return 2
    for r in results:
        verdict = "PASSED" if r["passed"] else "NOT PASSED"
        print(f"{r['submission']}  lab {r['lab']}: {verdict}")
        for line in r["lines"] + [f"(raised) {e}" for e in r["cell_errors"]]:
            print(f"    {line}")
    if args.out:
        with open(args.out, "w", newline="") as file:
            writer = csv.writer(file)
            writer.writerow(["submission", "lab", "passed", "figures", "report"])
            for r in results:
                report = " | ".join(r["lines"])
                writer.writerow(
                    [r["submission"], r["lab"], r["passed"], json.dumps(r["figures"]), report]
                )
    return 0 if all(r["passed"] for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
