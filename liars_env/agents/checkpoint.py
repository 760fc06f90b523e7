"""A trained policy as an agent: ``checkpoint:PATH`` in agent specs."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch

from liars_env.agents.base import PlayerView
from liars_env.agents.policy import load_policy, masked_probabilities
from liars_env.rules import RuleSet


class CheckpointAgent:
    """Plays a checkpoint's policy: samples from its masked action distribution.

    Args:
        model: The network.
        meta: The checkpoint's ``meta.json`` content.
        seed: Seeds the sampling.
        greedy: Always play the most likely action instead of sampling.
        name: Display name.
    """

    def __init__(
        self,
        model,
        meta: dict,
        seed: int | None = None,
        greedy: bool = False,
        name: str = "checkpoint",
    ) -> None:
        self.model = model
        self.meta = meta
        self.greedy = greedy
        self.name = name
        self.generator = torch.Generator()
        self.generator.manual_seed(0 if seed is None else seed)

    @classmethod
    def load(cls, path: str | Path, rules: RuleSet, seed: int | None = None) -> CheckpointAgent:
        """Loads ``path`` for ``rules``.

        Raises:
            CheckpointError: if it was trained for other rules or is corrupt.
        """
        model, meta = load_policy(path, rules)
        return cls(model, meta, seed=seed, name=f"checkpoint:{path}")

    def reset(self, seed: int | None = None) -> None:
        """Reseeds the sampling."""
        if seed is not None:
            self.generator.manual_seed(seed)

    def action_probabilities(self, view: PlayerView) -> torch.Tensor:
        """The policy's probability of every action for ``view``."""
        with torch.inference_mode():
            obs = torch.from_numpy(view.observation)[None]
            mask = torch.from_numpy(view.mask > 0)[None]
            logits, _ = self.model(obs, mask)
            return self._distribution(logits)[0]

    def action_probabilities_batch(self, views: list[PlayerView]) -> np.ndarray:
        """:meth:`action_probabilities` of many views in one network call, ``(len, A)``.

        The exact exploitability of :func:`liars_env.solver.exploit` asks a whole tree
        depth at once through this method.
        """
        with torch.inference_mode():
            obs = torch.from_numpy(np.stack([v.observation for v in views]))
            mask = torch.from_numpy(np.stack([v.mask > 0 for v in views]))
            logits, _ = self.model(obs, mask)
            return self._distribution(logits).double().numpy()

    def _distribution(self, logits: torch.Tensor) -> torch.Tensor:
        """What :meth:`act` plays: the masked softmax, or one-hot on its argmax if greedy."""
        probs = masked_probabilities(logits)
        if self.greedy:
            return torch.nn.functional.one_hot(probs.argmax(-1), probs.shape[-1]).to(probs.dtype)
        return probs

    def act(self, view: PlayerView) -> int:
        """Samples (or, if greedy, picks the top) legal action."""
        probs = self.action_probabilities(view)
        if self.greedy:
            return int(probs.argmax())
        return int(torch.multinomial(probs, 1, generator=self.generator))
