"""The checks of the course's three labs: they measure a student's answer, never show one.

Each check returns a :class:`CheckReport` (what was measured, passed or not, and why);
:func:`check_lab` prints it and raises :class:`LabCheckError` when it failed, which is
what a lab notebook's last cell calls. A check never prints the expected answer: it
reports the student's own figures against the lab's threshold.

* :func:`check_bot` (lab a): the bot against two ``probabilistic`` bots at 3 players,
  seats rotated (``liars-eval``'s :func:`~liars_train.evaluation.play.evaluate`);
  passes when the lower end of the 95% Wilson interval of its win rate is above 1/3.
* :func:`check_cfr` (lab b): ``regret_matching`` on hidden cases, then the exact
  exploitability (:func:`liars_env.solver.exploit`) of the student's CFR strategy on
  perudo 1×4; passes below :data:`CFR_TARGET`.
* :func:`check_ppo` (lab c): the student's ``exploitability_curve`` against exact values
  on the student's own run, then the regularized run against the league run of
  ``configs/course_tiny.yaml`` at the same budget; passes when the regularized run's last
  checkpoint is below :data:`PPO_TARGET` and below the league's.
"""

from __future__ import annotations

import functools
import itertools
import json
import math
import sys
import types
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from liars_env.rules import RuleSet
from liars_env.solver import exploit

BOT_RULES = RuleSet.preset("perudo", num_players=3)
"""Lab (a)'s game: 3-player perudo, five dice each."""
BOT_OPPONENT = "probabilistic"
"""The bot in the two other seats of lab (a)."""
BOT_GAMES = 600
"""Games of lab (a)'s match (a multiple of 3, so every seat is played equally)."""

CFR_RULES = RuleSet.preset("perudo", num_players=2, dice_per_player=1, faces=4)
"""Lab (b)'s game: perudo, 2 players, one four-faced die each."""
CFR_TARGET = 0.01
"""Lab (b) passes below this exact exploitability."""

PPO_RULES = RuleSet.preset("perudo", num_players=2, dice_per_player=1)
"""Lab (c)'s game, the one of ``configs/course_tiny.yaml``: perudo, 2 players, one die."""
PPO_STEPS = 500_000
"""Learner decisions each of lab (c)'s runs must have trained (course_tiny's budget)."""
PPO_TARGET = 0.35
"""Lab (c)'s regularized run passes below this exact exploitability."""


_SUBMISSIONS = itertools.count()


class LabCheckError(AssertionError):
    """A lab's check did not pass; the message says what to fix."""


@dataclass
class CheckReport:
    """What a check measured.

    Attributes:
        lab: ``"bot"``, ``"cfr"`` or ``"ppo"``.
        passed: Whether every part passed.
        lines: One line per part, ``"ok: ..."`` or ``"not yet: ..."``.
        figures: The measured numbers, by name (for a grading table).
    """

    lab: str
    passed: bool = True
    lines: list[str] = field(default_factory=list)
    figures: dict[str, float] = field(default_factory=dict)

    def ok(self, text: str) -> None:
        """Records a part that passed."""
        self.lines.append(f"ok: {text}")

    def fail(self, text: str) -> None:
        """Records a part that did not pass."""
        self.passed = False
        self.lines.append(f"not yet: {text}")

    def __str__(self) -> str:
        verdict = "PASSED" if self.passed else "NOT PASSED"
        return "\n".join([f"lab {self.lab}: {verdict}", *(f"  {line}" for line in self.lines)])


def _error(exc: BaseException, what: str) -> str:
    """A student-facing sentence for an exception raised by the student's code."""
    if isinstance(exc, NotImplementedError):
        return f"{what} raised NotImplementedError: that exercise is not written yet"
    return f"{what} raised {type(exc).__name__}: {exc}"


# ---------------------------------------------------------------- lab (a): a bot


def check_bot(bot: Any, games: int = BOT_GAMES, seed: int = 0) -> CheckReport:
    """Lab (a): does ``bot`` beat two ``probabilistic`` bots at 3-player perudo?

    Args:
        bot: The bot's class or factory (called as :func:`~liars_env.agents.make_agent`
            calls one: with the ``rules=`` and ``seed=`` it accepts).
        games: Games to play, seats rotated.
        seed: Seeds every game and bot (the same figures for everyone).
    """
    from liars_train.evaluation.tournament import evaluate

    report = CheckReport("bot")
    if not callable(bot):
        report.fail(f"expected your bot's class, got {bot!r}")
        return report
    # a new module name per call: the tournament keeps a process's agents by spec
    module = types.ModuleType(f"liars_course_submission_{next(_SUBMISSIONS)}")
    module.Bot = bot
    sys.modules[module.__name__] = module
    try:
        result = evaluate(
            BOT_RULES,
            [f"{module.__name__}:Bot", BOT_OPPONENT, BOT_OPPONENT],
            games=games,
            seed=seed,
            progress=False,
        )
    except Exception as exc:  # noqa: BLE001 (the student's code may raise anything)
        report.fail(_error(exc, "your bot"))
        return report
    finally:
        sys.modules.pop(module.__name__, None)
    mine = result.agents[0]
    low, high = mine.ci95
    report.figures.update(win_rate=mine.win_rate, ci95_low=low, ci95_high=high)
    text = (
        f"win rate {mine.win_rate:.3f} over {mine.games} games, 95% interval "
        f"{low:.3f}-{high:.3f}, against two {BOT_OPPONENT} bots (a fair share is 0.333)"
    )
    if low > 1 / 3:
        report.ok(text)
    else:
        report.fail(f"{text}: the interval's lower end must be above 1/3")
    return report


# ---------------------------------------------------------------- lab (b): CFR


_RM_CASES = [
    [2.0, -1.0, 2.0],
    [-1.0, -2.0],
    [0.0, 0.0, 0.0, 0.0],
    [0.0, 3.0, 1.0],
    [5.0],
]


def _regret_matching_reference(regrets: np.ndarray) -> np.ndarray:
    positive = np.maximum(regrets, 0.0)
    total = positive.sum()
    return positive / total if total > 0 else np.full(len(regrets), 1.0 / len(regrets))


def check_regret_matching(regret_matching: Callable, report: CheckReport) -> None:
    """Adds to ``report`` whether ``regret_matching`` is right on hidden cases."""
    wrong = 0
    for case in _RM_CASES:
        regrets = np.array(case)
        try:
            got = np.asarray(regret_matching(regrets.copy()), dtype=float)
        except Exception as exc:  # noqa: BLE001
            report.fail(_error(exc, "regret_matching"))
            return
        if got.shape != regrets.shape or not np.allclose(
            got, _regret_matching_reference(regrets), atol=1e-9
        ):
            wrong += 1
    if wrong:
        report.fail(
            f"regret_matching is wrong on {wrong} of {len(_RM_CASES)} hidden cases (think of "
            "regrets that are all zero or negative)"
        )
    else:
        report.ok(f"regret_matching is right on {len(_RM_CASES)} hidden cases")


def check_cfr(regret_matching: Callable, strategy: Any) -> CheckReport:
    """Lab (b): regret matching, and the exact exploitability of a CFR strategy.

    Args:
        regret_matching: ``regrets → probabilities`` (exercise 1).
        strategy: The average strategy, ``(die, bids) → probabilities over
            game.legal_actions(bids)`` (a dict, or a
            :class:`~liars_train.course.one_round.TabularAgent`).
    """
    from liars_train.course.one_round import OneRoundGame, TabularAgent

    report = CheckReport("cfr")
    check_regret_matching(regret_matching, report)
    if strategy is None or strategy is Ellipsis:
        report.fail("no strategy yet: run CFR and pass its average strategy")
        return report
    try:
        agent = strategy if isinstance(strategy, TabularAgent) else None
        agent = agent or TabularAgent(OneRoundGame(CFR_RULES), strategy, name="your CFR")
        value = exploit(agent, CFR_RULES).exploitability
    except Exception as exc:  # noqa: BLE001
        report.fail(_error(exc, "measuring your strategy"))
        return report
    report.figures["exploitability"] = value
    text = f"your strategy's exact exploitability is {value:.4f}"
    if value < CFR_TARGET:
        report.ok(f"{text} (below {CFR_TARGET})")
    else:
        report.fail(f"{text}; the lab asks below {CFR_TARGET} (more iterations, or CFR+)")
    return report


# ---------------------------------------------------------------- lab (c): PPO


def last_checkpoint(run: str | Path) -> Path:
    """The ``step_*`` checkpoint of a run with the most learner decisions.

    Raises:
        ValueError: if the run folder has no ``checkpoints/step_*``.
    """
    steps = sorted(Path(run).glob("checkpoints/step_*"))
    if not steps:
        raise ValueError(f"{run}: no checkpoints/step_* folder; train the run first")
    return steps[-1]


def checkpoint_exploitability(path: str | Path, rules: RuleSet = PPO_RULES) -> float:
    """The exact exploitability of a checkpoint.

    Its tables are read from seat 0: the policy is seat-relative, so they stand for both.
    A checkpoint measured before (same folder, same modification time) is not measured
    again: the lab's curves and its check ask for the same checkpoints.
    """
    path = Path(path)
    return _exploitability(str(path.resolve()), path.stat().st_mtime_ns, rules)


@functools.lru_cache(maxsize=256)
def _exploitability(path: str, mtime_ns: int, rules: RuleSet) -> float:
    from liars_env.agents.checkpoint import CheckpointAgent

    return exploit(CheckpointAgent.load(path, rules), rules, seats=(0,)).exploitability


def _run_settings(run: Path) -> dict:
    path = run / "config.json"
    if not path.is_file():
        raise ValueError(f"{run}: no config.json; is this a liars-train run folder?")
    return json.loads(path.read_text())


def check_ppo(exploitability_curve: Callable, league_run: Any, regularized_run: Any) -> CheckReport:
    """Lab (c): the measured curve, and a regularized run against the league run.

    Args:
        exploitability_curve: ``run folder → [(learner decisions, exploitability)]``
            (exercise 1), one pair per ``step_*`` checkpoint, by decisions.
        league_run: The run folder of ``configs/course_tiny.yaml``.
        regularized_run: The run folder trained with the student's settings (exercise 2).
    """
    report = CheckReport("ppo")
    try:
        league, regularized = Path(league_run), Path(regularized_run)
        last = last_checkpoint(league)
        settings = {run: _run_settings(run) for run in (league, regularized)}
        last_regularized = last_checkpoint(regularized)
    except (TypeError, ValueError) as exc:
        report.fail(f"the run folders: {exc}")
        return report
    exact = checkpoint_exploitability(last)
    try:
        curve = [(int(d), float(e)) for d, e in exploitability_curve(league)]
    except Exception as exc:  # noqa: BLE001
        report.fail(_error(exc, "exploitability_curve"))
        curve = None
    if curve is not None:
        decisions = int(last.name.split("_")[1])
        count = len(list(league.glob("checkpoints/step_*")))
        if len(curve) != count or curve[-1][0] != decisions or curve != sorted(curve):
            report.fail(
                f"exploitability_curve gave {len(curve)} points; expected one per step_* "
                f"checkpoint ({count}), sorted by decisions, the last at {decisions:,}"
            )
        elif not math.isclose(curve[-1][1], exact, abs_tol=1e-6):
            report.fail(
                f"exploitability_curve's last value {curve[-1][1]:.4f} is not the checkpoint's "
                "exact exploitability (use liars_env.solver.exploit)"
            )
        else:
            report.ok(f"exploitability_curve matches the exact values ({count} checkpoints)")
    mine = checkpoint_exploitability(last_regularized)
    report.figures.update(league=exact, regularized=mine)
    same = ("rules", "rule_overrides", "num_players", "seed", "total_steps")
    differ = [k for k in same if settings[league].get(k) != settings[regularized].get(k)]
    steps = settings[regularized].get("total_steps", 0)
    if differ:
        report.fail(f"the two runs differ in {', '.join(differ)}; compare them on equal terms")
    elif steps < PPO_STEPS:
        report.fail(f"the runs trained {steps:,} decisions; the lab compares them at {PPO_STEPS:,}")
    elif mine < min(exact, PPO_TARGET):
        report.ok(
            f"the regularized run is at {mine:.3f}, the league run at {exact:.3f} "
            f"(the lab asks below {PPO_TARGET} and below the league)"
        )
    else:
        report.fail(
            f"the regularized run is at {mine:.3f}, the league run at {exact:.3f}; the lab "
            f"asks below {PPO_TARGET} and below the league"
        )
    return report


# ---------------------------------------------------------------- by lab name


LABS: dict[str, tuple[Callable[..., CheckReport], tuple[str, ...]]] = {
    "bot": (check_bot, ("MyBot",)),
    "cfr": (check_cfr, ("regret_matching", "STRATEGY")),
    "ppo": (check_ppo, ("exploitability_curve", "LEAGUE_RUN", "REGULARIZED_RUN")),
}
"""Each lab's check and the names it reads from the lab notebook's namespace."""


def run_check(lab: str, namespace: Mapping[str, Any]) -> CheckReport:
    """Runs lab ``lab``'s check on the names a lab notebook defined.

    Raises:
        ValueError: for an unknown lab.
    """
    if lab not in LABS:
        raise ValueError(f"unknown lab {lab!r}; expected one of {', '.join(LABS)}")
    check, names = LABS[lab]
    missing = [name for name in names if name not in namespace]
    if missing:
        report = CheckReport(lab)
        report.fail(
            f"{', '.join(missing)} not defined: run every cell above (a cell that raised "
            "NotImplementedError is an exercise still to write)"
        )
        return report
    return check(*(namespace[name] for name in names))


def check_lab(lab: str, namespace: Mapping[str, Any]) -> CheckReport:
    """A lab notebook's last cell: ``check_lab("cfr", globals())``.

    Prints the report.

    Raises:
        LabCheckError: if the check did not pass (its message is the report).
        ValueError: for an unknown lab.
    """
    report = run_check(lab, namespace)
    print(report)
    if not report.passed:
        raise LabCheckError(str(report))
    return report
