"""Where a run's roles are chosen, once: in this process, or on Ray (``workers`` > 0).

:func:`roles_for` reads the settings and returns the
:class:`~liars_train.ppo.roles.Roles` to build the run with;
:func:`make_trainer` builds the :class:`~liars_train.ppo.trainer.Trainer` with them.
``liars-train``, the pipeline and the benchmarks build their runs here; the trainer itself
never knows which roles it was given (Sample Factory's serial and parallel runners).
``workers: 0`` never imports :mod:`liars_train.distributed` or Ray.

Example:
    >>> from liars_train.ppo import Args
    >>> type(roles_for(Args())).__name__
    'InProcess'
"""

from __future__ import annotations

from typing import Any

from liars_train.ppo.roles import InProcess, Roles
from liars_train.ppo.settings import Args
from liars_train.ppo.trainer import Trainer


def roles_for(args: Args) -> Roles:
    """The roles ``args`` asks for, chosen here once.

    :class:`~liars_train.ppo.roles.InProcess` for ``workers: 0``;
    :class:`~liars_train.distributed.roles.OnRay` otherwise.
    """
    if not args.workers:
        return InProcess()
    from liars_train.distributed.roles import OnRay  # Ray only when asked for

    return OnRay()


def make_trainer(args: Args, **kwargs: Any) -> Trainer:
    """A :class:`~liars_train.ppo.trainer.Trainer` for ``args`` with :func:`roles_for`'s roles.

    Args:
        args: The settings.
        **kwargs: ``resume``, ``opponents``, ``init``, as the trainer takes them.

    Raises:
        ValueError: As the trainer does (Ray missing or unreachable, too few CPUs, a run
            folder that holds checkpoints).
    """
    return Trainer(args, roles_for(args), **kwargs)
