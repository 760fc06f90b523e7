"""Turns agent spec strings into agents.

Specs:

* ``random``: uniform over legal actions.
* ``probabilistic``, ``cautious``, ``bold``: probability bots (see
  :data:`~liars_env.agents.probabilistic.BOT_PRESETS`); ``bayes``: the Bayesian one;
  ``belief``: the strongest, reading each opponent's bids as evidence about its hand.
* ``NAME:key=value,...``: a bot preset with some settings changed, e.g.
  ``probabilistic:challenge_threshold=0.4,bluff_rate=0.1``.
* ``checkpoint:PATH``: a trained policy folder (needs torch).
"""

from __future__ import annotations

import dataclasses

from liars_env.agents.base import Agent, RandomAgent
from liars_env.agents.probabilistic import (
    BOT_PRESETS,
    BayesianAgent,
    BeliefAgent,
    ProbabilisticAgent,
    ProbabilisticParams,
)
from liars_env.rules import RuleSet

AGENT_NAMES = ("random", *BOT_PRESETS, "checkpoint:PATH")
"""Every spec form :func:`make_agent` accepts."""


def make_agent(spec: str, rules: RuleSet, seed: int | None = None) -> Agent:
    """Builds the agent named by ``spec`` for ``rules``.

    Args:
        spec: See the module docstring.
        rules: The variant the agent will play (checkpoints are checked against it).
        seed: Seeds the agent's randomness.

    Raises:
        ValueError: for an unknown spec or a bad setting, naming what is accepted.

    Example:
        >>> make_agent("bold", RuleSet.preset("perudo")).params.bluff_rate
        0.2
        >>> make_agent("probabilistic:bluff_rate=0.5", RuleSet.preset("perudo")).name
        'probabilistic:bluff_rate=0.5'
    """
    if not isinstance(spec, str) or not spec:
        raise ValueError(f"agent spec must be a non-empty string, got {spec!r}")
    name, _, arg = spec.partition(":")
    if name == "checkpoint":
        if not arg:
            raise ValueError("checkpoint agent spec needs a path: 'checkpoint:PATH'")
        from liars_env.agents.checkpoint import CheckpointAgent  # torch, only when asked

        return CheckpointAgent.load(arg, rules, seed=seed)
    if name == "random" and not arg:
        return RandomAgent(seed)
    if name in BOT_PRESETS:
        params = BOT_PRESETS[name]
        if arg:
            params = dataclasses.replace(params, **_parse_settings(spec, arg))
        cls = {"bayes": BayesianAgent, "belief": BeliefAgent}.get(name, ProbabilisticAgent)
        return cls(params, seed=seed, name=spec)
    raise ValueError(f"unknown agent spec {spec!r}; expected one of {', '.join(AGENT_NAMES)}")


def _parse_settings(spec: str, arg: str) -> dict[str, float]:
    known = {f.name for f in dataclasses.fields(ProbabilisticParams)}
    settings = {}
    for item in arg.split(","):
        key, eq, value = item.partition("=")
        key = key.strip()
        if not eq or key not in known:
            raise ValueError(
                f"bad setting {item!r} in agent spec {spec!r}; expected key=value with key "
                f"one of {', '.join(sorted(known))}"
            )
        try:
            settings[key] = float(value)
        except ValueError:
            raise ValueError(
                f"setting {key} in agent spec {spec!r} must be a number, got {value!r}"
            ) from None
    return settings
