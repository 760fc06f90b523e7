"""How strong a player is: tournaments (``liars-eval``), ladders, a network against bots.

:mod:`~liars_train.evaluation.tournament` (any agents on any preset, with intervals and
ratings; its parts in :mod:`~liars_train.evaluation.play`,
:mod:`~liars_train.evaluation.records`, :mod:`~liars_train.evaluation.results`,
:mod:`~liars_train.evaluation.progress`, :mod:`~liars_train.evaluation.formats`,
:mod:`~liars_train.evaluation.provenance` and :mod:`~liars_train.evaluation.cli`),
:mod:`~liars_train.evaluation.ladder` (a fast cross table on the batched engine) and
:mod:`~liars_train.evaluation.policy_eval` (a policy network's win rates against bots
and checkpoints, as training reports them).
"""
