"""The course kit: the labs' checks, the grading of submissions, and the helpers of lab (b).

* :mod:`~liars_train.course.checks`: each lab's check (:func:`check_lab` in a notebook's
  last cell), which measures a student's answer and never shows one;
* :mod:`~liars_train.course.one_round`: a one-die game as a tree for tabular CFR, and a
  table of probabilities as an agent (lab b);
* :mod:`~liars_train.course.notebooks`: one lab source to a student and a solution
  version, notebooks, and running a notebook's cells;
* :mod:`~liars_train.course.grade`: ``liars-course``, to build the labs and grade a
  folder of submissions.

The course page of the docs (``docs/course.md``) says what each lab teaches.
"""

from liars_train.course.checks import LabCheckError, check_lab, run_check
from liars_train.course.one_round import OneRoundGame, TabularAgent

__all__ = ["LabCheckError", "OneRoundGame", "TabularAgent", "check_lab", "run_check"]
