"""Masked PPO self-play for Liar's Dice, one module per role of the trainer.

One policy network plays one seat (the learner's) in every game of a
:class:`~liars_env.batched.BatchedEnv`; the other seats are filled, game by game, from a
configurable mix of opponents: the current policy itself, frozen snapshots of earlier
policies (the pool, which grows during training: fictitious self-play), exploiters, and
the heuristic bots. Logits are masked to the legal actions, and the entropy bonus counts
only legal actions.

Run ``liars-train --config configs/quickstart.yaml`` (``--set key=value`` overrides a
field, ``--resume RUN`` continues a run after a crash; the command is
``liars_train.train``). Everything lands in ``runs/<run_name>/``: TensorBoard events,
``metrics.csv``, checkpoints (``last`` few and ``best``), the learning curve PNG and the
final evaluation JSON.

==================  ======================================================================
module              role
==================  ======================================================================
``settings``        :class:`Args` (every setting, one docstring each, in groups), their
                    checks, :func:`updates_of`, :func:`last_step`, :func:`game_rules`
``loss``            :func:`ppo_loss`, the schedules, the EMA magnet (:func:`follow_ema`)
``rollout``         :class:`Rollout` collects a :class:`Batch` against the league (the
                    opponents' moves, results, dice shaping); the run's league
``update``          GAE and the minibatch epochs (:func:`ppo_update`)
``exploiters``      :func:`best_response_args` (shared with ``liars-exploit``), the
                    exploiters' settings and promotion match
``evaluate``        periodic win rates against the bots, their ``metrics.csv`` rows, the
                    final table
``checkpoints``     a run's ``step_N``/``best`` folders, the trainer's state in them, its
                    restore, the league's re-sync
``roles``           the protocols of the loop's roles (:class:`RolloutSource`,
                    :class:`EvaluationService`, :class:`ExploiterTrainer`) and
                    :class:`InProcess`, the set that runs them in this process
``trainer``         :class:`Trainer`: collect → update → league → evaluate → checkpoint;
                    :func:`train_exploiter` (a Trainer inside the Trainer)
==================  ======================================================================

Every role is given what it needs (weights, the league, a generator) as arguments, so
the same code runs in this process or as a Ray actor (:mod:`liars_train.distributed`).
Which, is chosen once where the run is built (:mod:`liars_train.runner`); the trainer
never knows.
"""

from liars_train.ppo import update
from liars_train.ppo.checkpoints import Counters, follow_league_setting
from liars_train.ppo.evaluate import Evaluation, LocalEvaluations, evaluate_weights
from liars_train.ppo.exploiters import (
    BEST_RESPONSE,
    ExploiterResult,
    LocalExploiter,
    best_response_args,
    exploiter_args,
    judge_exploiter,
)
from liars_train.ppo.loss import (
    entropy_weight,
    follow_ema,
    linear_schedule,
    magnet_weight,
    ppo_loss,
)
from liars_train.ppo.roles import (
    EvaluationService,
    ExploiterTrainer,
    InProcess,
    Roles,
    RolloutSource,
    RunContext,
)
from liars_train.ppo.rollout import Batch, Rollout
from liars_train.ppo.settings import (
    ENT_SCHEDULES,
    MAGNET_SCHEDULES,
    MAGNETS,
    Args,
    game_rules,
    last_step,
    load_args,
    make_args,
    updates_of,
    validate,
)
from liars_train.ppo.trainer import Trainer, train_exploiter
from liars_train.ppo.update import advantages, ppo_update

__all__ = [
    "BEST_RESPONSE",
    "ENT_SCHEDULES",
    "MAGNETS",
    "MAGNET_SCHEDULES",
    "Args",
    "Batch",
    "Counters",
    "Evaluation",
    "EvaluationService",
    "ExploiterResult",
    "ExploiterTrainer",
    "InProcess",
    "LocalEvaluations",
    "LocalExploiter",
    "Roles",
    "Rollout",
    "RolloutSource",
    "RunContext",
    "Trainer",
    "advantages",
    "best_response_args",
    "entropy_weight",
    "evaluate_weights",
    "exploiter_args",
    "follow_ema",
    "follow_league_setting",
    "game_rules",
    "judge_exploiter",
    "last_step",
    "linear_schedule",
    "load_args",
    "magnet_weight",
    "make_args",
    "ppo_loss",
    "ppo_update",
    "train_exploiter",
    "update",
    "updates_of",
    "validate",
]
