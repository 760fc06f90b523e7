"""The course kit: each lab's check fails on the student's template and passes on the
solution; the student versions hide the solutions; the grader grades a folder; the
install cell and the labs' copy of configs/course_tiny.yaml stay right."""

from __future__ import annotations

import json
import re
from pathlib import Path

import matplotlib
import numpy as np
import pytest
import yaml

from liars_env.rules import RuleSet
from liars_train.course import LabCheckError, OneRoundGame, TabularAgent, check_lab, run_check
from liars_train.course.grade import build, lab_of, main
from liars_train.course.notebooks import (
    INSTALL_CELL,
    QUICK_ENV,
    read_cells,
    run_cells,
    script_cells,
    solution_version,
    student_version,
)

ROOT = Path(__file__).resolve().parents[1]
LABS = {"bot": "lab_a_bot.py", "cfr": "lab_b_cfr.py", "ppo": "lab_c_ppo.py"}


def run_lab(lab: str, version, tmp_path: Path, monkeypatch, quick=True) -> tuple[dict, list]:
    """Runs a lab's cells in ``tmp_path``; returns its namespace and errors."""
    matplotlib.use("Agg")
    monkeypatch.setenv(QUICK_ENV, "1" if quick else "0")
    monkeypatch.chdir(tmp_path)
    source = (ROOT / "docs" / "labs" / LABS[lab]).read_text()
    namespace: dict = {"__name__": "__main__"}
    errors = run_cells(script_cells(version(source)), namespace, where=LABS[lab])
    import matplotlib.pyplot as plt

    plt.close("all")
    return namespace, errors


@pytest.mark.parametrize("lab", list(LABS))
def test_the_check_fails_on_the_template_with_a_clear_message(lab, tmp_path, monkeypatch):
    namespace, errors = run_lab(lab, student_version, tmp_path, monkeypatch)
    assert any(e.error == "NotImplementedError" for e in errors), errors
    report = run_check(lab, namespace)
    assert not report.passed
    assert re.search(r"NotImplementedError|not defined|no strategy", str(report)), report
    with pytest.raises(LabCheckError, match=f"lab {lab}: NOT PASSED"):
        check_lab(lab, namespace)


@pytest.mark.parametrize("lab", ["bot", "cfr"])
def test_the_check_passes_on_the_solution(lab, tmp_path, monkeypatch, capsys):
    namespace, errors = run_lab(lab, solution_version, tmp_path, monkeypatch)
    assert errors == [], errors  # the last cell, check_lab, raises unless it passed
    assert f"lab {lab}: PASSED" in capsys.readouterr().out


def test_lab_c_solution_runs_and_its_curve_passes_in_the_quick_form(tmp_path, monkeypatch):
    """The quick form trains 16k decisions: the curve part passes, the comparison is
    refused for the budget (the full lab: the slow test below)."""
    namespace, errors = run_lab("ppo", solution_version, tmp_path, monkeypatch)
    assert [e.error for e in errors] == ["LabCheckError"], errors  # only the check cell
    report = run_check("ppo", namespace)
    assert report.lines[0].startswith("ok: exploitability_curve matches"), report
    assert "the lab compares them at 500,000" in report.lines[1], report


@pytest.mark.slow
def test_lab_c_solution_passes_at_the_full_budget(tmp_path, monkeypatch):
    """About 5 minutes: three 500k-decision runs and their exact curves."""
    namespace, errors = run_lab("ppo", solution_version, tmp_path, monkeypatch, quick=False)
    assert errors == [], errors
    assert run_check("ppo", namespace).passed


def test_student_versions_hide_every_solution_line():
    for name in LABS.values():
        source = (ROOT / "docs" / "labs" / name).read_text()
        student, solution = student_version(source), solution_version(source)
        assert "SOLUTION" not in student and "SOLUTION" not in solution
        hidden = re.findall(r"# BEGIN SOLUTION.*?\n(.*?)# END SOLUTION", source, re.S)
        assert hidden, name
        for block in hidden:
            for line in block.strip().splitlines():
                if len(line.strip()) > 25:  # a line long enough to be the answer
                    assert line not in student, (name, line)
                    assert line in solution


def test_unbalanced_markers_are_refused_with_the_line():
    with pytest.raises(ValueError, match=r"lab.py:2: BEGIN SOLUTION never closed"):
        student_version("x = 1\n# BEGIN SOLUTION\ny = 2\n", "lab.py")
    with pytest.raises(ValueError, match=r"lab.py:1: END SOLUTION without"):
        solution_version("# END SOLUTION\n", "lab.py")


def test_build_writes_student_and_solution_notebooks(tmp_path):
    written = build(tmp_path)
    assert len(written) == 4 * len(LABS)
    for lab, name in LABS.items():
        book = tmp_path / "student" / name.replace(".py", ".ipynb")
        data = json.loads(book.read_text())
        assert data["nbformat"] == 4 and data["metadata"]["liars_course"]["lab"] == lab
        assert "".join(data["cells"][0]["source"]) == INSTALL_CELL
        assert lab_of(book) == lab
        cells = read_cells(book)
        assert cells[1].kind == "markdown" and cells[1].source.startswith("# Lab (")
        assert "NotImplementedError" in book.read_text()
        assert "BEGIN SOLUTION" not in (tmp_path / "solutions" / name).read_text()
    with pytest.raises(ValueError, match="no lab_"):
        build(tmp_path / "out", tmp_path / "nowhere")


def test_grader_grades_a_folder_and_writes_csv(tmp_path, capsys):
    build(tmp_path / "kit")
    submissions = tmp_path / "submissions"
    for who, kind in (("alice", "solutions"), ("bob", "student")):
        (submissions / who).mkdir(parents=True)
        book = tmp_path / "kit" / kind / "lab_b_cfr.ipynb"
        (submissions / who / "lab_b_cfr.ipynb").write_text(book.read_text())
    out = tmp_path / "grades.csv"
    status = main(["grade", str(submissions), "--quick", "--out", str(out)])
    text = capsys.readouterr().out
    assert status == 1, text
    assert re.search(r"alice/lab_b_cfr.ipynb  lab cfr: PASSED", text), text
    assert re.search(r"bob/lab_b_cfr.ipynb  lab cfr: NOT PASSED", text), text
    rows = out.read_text().splitlines()
    assert rows[0] == "submission,lab,passed,figures,report" and len(rows) == 3
    assert main(["grade", str(tmp_path / "missing")]) == 2


def test_the_labs_copy_of_course_tiny_is_the_config():
    source = (ROOT / "docs" / "labs" / LABS["ppo"]).read_text()
    namespace: dict = {}
    block = re.search(r"^COURSE_TINY = \{.*?^\}", source, re.S | re.M)[0]
    exec(block, namespace)  # noqa: S102
    config = yaml.safe_load((ROOT / "configs" / "course_tiny.yaml").read_text())
    assert namespace["COURSE_TINY"] == config


def test_one_round_game_and_tabular_agent_refuse_bad_input():
    with pytest.raises(ValueError, match="one die each"):
        OneRoundGame(RuleSet.preset("perudo", num_players=3, dice_per_player=1))
    with pytest.raises(ValueError, match="can lead to another round"):
        OneRoundGame(RuleSet.preset("perudo_calza", num_players=2, dice_per_player=1))
    game = OneRoundGame(RuleSet.preset("perudo", num_players=2, dice_per_player=1, faces=4))
    with pytest.raises(ValueError, match=r"information set \(2, \(\)\).*expected 6"):
        TabularAgent(game, {(2, ()): np.ones(3) / 3})
    with pytest.raises(ValueError, match="after at least one bid"):
        game.payoff(1, 2, (), 8)
    with pytest.raises(ValueError, match="unknown lab 'go'"):
        run_check("go", {})


def test_the_checks_report_a_wrong_regret_matching_and_a_weak_bot():
    uniform = lambda r: np.full(len(r), 1 / len(r))  # noqa: E731
    report = run_check("cfr", {"regret_matching": uniform, "STRATEGY": {}})
    assert "wrong on" in report.lines[0] and "0.7" in report.lines[1], report

    class Lowest:
        def reset(self, seed=None):
            pass

        def act(self, view):
            return int(view.legal_actions[0])

    from liars_train.course.checks import check_bot

    report = check_bot(Lowest, games=30)
    assert not report.passed and "lower end must be above 1/3" in report.lines[0], report
