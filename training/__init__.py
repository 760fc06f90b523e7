"""Self-play training and evaluation for liars-dice (PyTorch), installed as ``liars_train``.

==========================  ==========================================================
module                      what lives there
==========================  ==========================================================
``ppo/``                    the masked PPO trainer, one module per role: ``settings``
                            (``Args``), ``loss``, ``rollout``, ``update``, ``exploiters``,
                            ``evaluate``, ``checkpoints`` (a run's folders and state),
                            ``roles`` (the protocols), ``trainer`` (the loop)
``distributed/``            the same roles on Ray (rollout actors, evaluation tasks, an
                            exploiter actor)
``runner``                  picks the roles once (in-process or Ray) and builds the trainer
``train``                   ``liars-train``: a run from a YAML config (PPO or RLlib)
``config``                  settings from YAML and ``key=value`` items, checked first
``league``                  the opponents a learner meets, batched matches
``reports``                 progress bar, ``metrics.csv``, curves, tables
``stats``                   intervals of match results
``rllib``                   the same env on Ray RLlib (the ``rllib`` extra)
``evaluation/``             ``tournament`` (``liars-eval``), ``ladder`` (a cross table on
                            the batched engine), ``policy_eval`` (a network against bots)
``tools/``                  ``exploit`` (``liars-exploit``), ``solve`` (``liars-solve``),
                            ``export`` (ship a checkpoint), ``average`` (weight averages)
==========================  ==========================================================

Layers: ``config``/``stats``/``reports`` → ``league`` → ``evaluation`` → ``ppo`` →
``distributed`` → ``runner`` → ``train``, ``pipeline``, ``rllib``, ``tools``
(``tests/test_packaging.py`` checks it). Old module paths (``liars_train.evaluate``,
``liars_train.exploit``, ``liars_train.checkpoints``, ...) still import, with a
``DeprecationWarning``.
"""

from liars_env import moved as _moved

MOVED = {
    "liars_train.evaluate": "liars_train.evaluation.tournament",
    "liars_train.ladder": "liars_train.evaluation.ladder",
    "liars_train.policy_eval": "liars_train.evaluation.policy_eval",
    "liars_train.exploit": "liars_train.tools.exploit",
    "liars_train.solve": "liars_train.tools.solve",
    "liars_train.export": "liars_train.tools.export",
    "liars_train.average": "liars_train.tools.average",
    "liars_train.train_cli": "liars_train.train",
    "liars_train.rllib_backend": "liars_train.rllib",
    "liars_train.checkpoints": "liars_train.ppo.checkpoints",
}
"""Old module path → new module path (0.3.0; ``checkpoints``: 0.4, one home per word)."""

_moved.install(MOVED)
