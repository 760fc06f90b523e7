"""Many games at once: the batched engine and what only it uses.

:mod:`~liars_env.batched.engine` (:class:`BatchedEnv`: thousands of games stepped as
arrays), :mod:`~liars_env.batched.backends` (the protocol of what computes a step, and the
choice of one: :mod:`~liars_env.batched.torch_backend`, torch ops on any device, or
:mod:`~liars_env.batched.numba_backend`, compiled loops on the CPU),
:mod:`~liars_env.batched.positions` (games put at given positions and read back),
:mod:`~liars_env.batched.kernels` (the rules of
:mod:`liars_env.rules` in array form, checked step by step against the scalar engine),
:mod:`~liars_env.batched.fused` and :mod:`~liars_env.batched.fused_belief` (the compiled
loops), :mod:`~liars_env.batched.memory` (allocator settings) and
:mod:`~liars_env.batched.threads` (torch thread settings per phase).
"""

from liars_env.batched.engine import BACKENDS, BatchedEnv, resolve_backend, sample_legal

__all__ = ["BACKENDS", "BatchedEnv", "resolve_backend", "sample_legal"]
