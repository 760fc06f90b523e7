"""Command-line tools around trained models.

:mod:`~liars_train.tools.exploit` (``liars-exploit``: how much a fresh adversary gains
against a frozen player), :mod:`~liars_train.tools.solve` (``liars-solve``: exact
equilibria and exact exploitability of small games), :mod:`~liars_train.tools.export`
(copies a checkpoint's policy to ship it) and :mod:`~liars_train.tools.average` (weight
averages of checkpoints of one network).
"""
