"""The trainer's roles on Ray: rollout actors beside a learner that stays in the driver.

``workers: N`` (``--set workers=N``) plays the ``num_envs`` games in ``N`` Ray actors of one
CPU each, while the learner (GAE, the PPO epochs, the league, evaluations, checkpoints)
stays in the process that runs ``liars-train``, on ``device``: CPU actors with a CUDA
learner is the intended shape on a GPU machine. ``workers: 0``, the default, is the
in-process run and never imports Ray. Install Ray with ``pip install -e ".[ray]"``.

==================  ======================================================================
module              role
==================  ======================================================================
``cluster``         :func:`connect`: a local Ray on 127.0.0.1 (dashboard and usage
                    statistics off), or the cluster ``RAY_ADDRESS`` names; the checks
``league_sync``     league members as plain data, changes as deltas, results merged
``rollouts``        :class:`RolloutWorker` (the actor) and :class:`RemoteRollouts` (the
                    driver's side: weights through the object store, overlap, restarts)
``evaluation``      periodic evaluations on an actor of their own (:class:`RemoteEvaluations`)
``exploiters``      an exploiter training in its own actor (:class:`RemoteExploiter`)
``roles``           :class:`OnRay`: the three as a :class:`~liars_train.ppo.roles.Roles`
                    (what :func:`liars_train.runner.roles_for` gives ``workers`` > 0)
==================  ======================================================================

The actors run the very :class:`~liars_train.ppo.rollout.Rollout` of the in-process
trainer, given the weights, the league and their generators as arguments. Without
``overlap``, ``workers: 1`` writes the same checkpoints, bit for bit, as ``workers: 0``;
with it (the default) each batch is played by the weights of the update before, whose
log-probabilities PPO's ratio is taken against.
"""

from liars_train.distributed.cluster import EXTRA, connect, require_ray
from liars_train.distributed.evaluation import RemoteEvaluations, evaluate_weights
from liars_train.distributed.exploiters import ExploiterWorker, RemoteExploiter
from liars_train.distributed.league_sync import Delta, LeagueMirror, apply_delta, merge_results
from liars_train.distributed.roles import OnRay
from liars_train.distributed.rollouts import RemoteRollouts, RolloutWorker, actor_seed, shares

__all__ = [
    "EXTRA",
    "ExploiterWorker",
    "Delta",
    "LeagueMirror",
    "OnRay",
    "RemoteEvaluations",
    "RemoteExploiter",
    "RemoteRollouts",
    "RolloutWorker",
    "actor_seed",
    "apply_delta",
    "connect",
    "evaluate_weights",
    "merge_results",
    "require_ray",
    "shares",
]
