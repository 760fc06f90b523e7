"""Deprecated location of the batched bots: use :mod:`liars_env.agents.batched`."""

import warnings

from liars_env.agents.batched import BatchedProbabilisticBot

warnings.warn(
    "liars_env.batched_bots moved to liars_env.agents.batched",
    DeprecationWarning,
    stacklevel=2,
)

__all__ = ["BatchedProbabilisticBot"]
