"""How a batched step is computed: the backend protocol, its two implementations, the choice.

:class:`~liars_env.batched.BatchedEnv` owns the state of its games, their legality tables
and its random generator; a backend computes on that state. Two implement
:class:`BatchedBackend`: :class:`~liars_env.batched.torch_backend.TorchBackend` (tensor ops,
any device) and :class:`~liars_env.batched.numba_backend.NumbaBackend` (the compiled loops of
:mod:`liars_env.batched.fused`, the CPU only). :func:`resolve_backend` says which one a
device gets.

Example:
    >>> import torch
    >>> resolve_backend("torch", torch.device("cpu"))
    'torch'
    >>> resolve_backend("numba", torch.device("meta"))
    Traceback (most recent call last):
    ...
    ValueError: backend='numba' runs on the CPU only, got device meta
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

import torch

if TYPE_CHECKING:
    from liars_env.batched.engine import BatchedEnv

BACKENDS = ("auto", "torch", "numba")
"""The values of ``BatchedEnv(backend=...)``."""


@dataclass(frozen=True)
class Transition:
    """What a step's actions did, before the env draws the new rounds and games.

    Attributes:
        rewards: ``(B, P)`` float32 rewards earned at this step.
        over: ``(B,)`` bool, the game ended.
        info: The step's ``info`` (see :func:`step_info`).
        round_rows: Games whose round ended without ending the game.
        round_opener: The next round's opener of each of ``round_rows``.
        game_rows: Games that ended (they start anew).
        bid_rows: Games where the acting player bid, whose move the env still has to
            record in ``round_moves`` (``None``: the backend recorded it).
        bids: The bid ids of ``bid_rows``.
    """

    rewards: torch.Tensor
    over: torch.Tensor
    info: dict[str, torch.Tensor]
    round_rows: torch.Tensor
    round_opener: torch.Tensor
    game_rows: torch.Tensor
    bid_rows: torch.Tensor | None = None
    bids: torch.Tensor | None = None


class BatchedBackend(Protocol):
    """What :class:`~liars_env.batched.BatchedEnv` asks of a backend.

    Every method reads the env's public state tensors and writes them in place (or
    replaces them by new tensors); none draws random numbers from the env's generator, so
    a seed plays the same games with either backend.
    """

    name: str
    """The value of ``BatchedEnv.backend`` that selects it."""

    def observe(self, env: BatchedEnv) -> torch.Tensor:
        """A fresh ``(B, size)`` float32 tensor of the acting players' observations."""
        ...

    def legal_mask(self, env: BatchedEnv) -> torch.Tensor:
        """A fresh ``(B, num_actions)`` bool tensor of the acting players' legal actions."""
        ...

    def sample_actions(
        self, env: BatchedEnv, generator: torch.Generator | None
    ) -> torch.Tensor | None:
        """One random legal action per game from ``env.sampler_tables``, or ``None``.

        ``None`` leaves the sampling to the env's own table look-ups; an implementation
        must draw the same actions for the same generator state.
        """
        ...

    def first_illegal(
        self, env: BatchedEnv, actions: torch.Tensor, active: torch.Tensor | None
    ) -> int:
        """The first game (among ``active``) whose action is not legal, or ``-1``."""
        ...

    def apply_actions(
        self, env: BatchedEnv, actions: torch.Tensor, active: torch.Tensor | None
    ) -> Transition:
        """Applies legal actions (long, ``(B,)``): bids are recorded, calls settled."""
        ...

    def start_rounds(
        self,
        env: BatchedEnv,
        rows: torch.Tensor,
        opener: torch.Tensor,
        rolled: torch.Tensor,
        first_new_game: int,
    ) -> None:
        """Writes new rounds to the state.

        ``rows`` (new games from index ``first_new_game`` on) start with their ``opener``
        and their ``rolled`` ``(n, P, D)`` dice.
        """
        ...


def resolve_backend(backend: str, device: torch.device) -> str:
    """The backend a :class:`BatchedEnv` on ``device`` runs: ``"torch"`` or ``"numba"``.

    Raises:
        ValueError: for an unknown backend, or ``"numba"`` on a device other than the CPU.
        ImportError: for ``"numba"`` where numba cannot be imported.

    Example:
        >>> resolve_backend("torch", torch.device("cpu"))
        'torch'
    """
    if backend not in BACKENDS:
        raise ValueError(
            f"backend must be one of {', '.join(map(repr, BACKENDS))}, got {backend!r}"
        )
    if backend == "torch":
        return backend
    if device.type != "cpu":
        if backend == "numba":
            raise ValueError(f"backend='numba' runs on the CPU only, got device {device}")
        return "torch"
    try:
        import liars_env.batched.fused  # noqa: F401
    except ImportError as exc:
        if backend == "numba":
            raise ImportError(f"backend='numba' needs numba (pip install numba): {exc}") from exc
        return "torch"
    return "numba"


def step_info(
    called: torch.Tensor,
    count: torch.Tensor,
    lost: torch.Tensor,
    gained: torch.Tensor,
    eliminated: torch.Tensor,
    winner: torch.Tensor,
) -> dict[str, torch.Tensor]:
    """The ``info`` of :meth:`BatchedEnv.step` (one place for its keys)."""
    return {
        "called": called,
        "count": count,
        "lost": lost,
        "gained": gained,
        "eliminated": eliminated,
        "winner": winner,
    }
