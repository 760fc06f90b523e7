"""Many games at once: the batched engine and what only it uses.

:mod:`~liars_env.batched.engine` (:class:`BatchedEnv`: thousands of games stepped as
arrays, torch ops or compiled numba loops), :mod:`~liars_env.batched.kernels` (the rules of
:mod:`liars_env.rules` in array form, checked step by step against the scalar engine),
:mod:`~liars_env.batched.fused` and :mod:`~liars_env.batched.fused_belief` (the compiled
loops), :mod:`~liars_env.batched.memory` (allocator settings) and
:mod:`~liars_env.batched.threads` (torch thread settings per phase).
"""

from liars_env.batched.engine import BACKENDS, BatchedEnv, resolve_backend, sample_legal

__all__ = ["BACKENDS", "BatchedEnv", "resolve_backend", "sample_legal"]
