"""Players: one interface for bots, trained checkpoints and humans.

Example:
    >>> from liars_env.agents import make_agent
    >>> from liars_env import RuleSet
    >>> make_agent("random", RuleSet.preset("perudo")).name
    'random'
"""

from liars_env.agents.base import Agent, PlayerView, RandomAgent, view_of
from liars_env.agents.probabilistic import (
    BOT_PRESETS,
    BayesianAgent,
    BeliefAgent,
    ProbabilisticAgent,
    ProbabilisticParams,
)
from liars_env.agents.registry import AGENT_NAMES, make_agent

__all__ = [
    "AGENT_NAMES",
    "BOT_PRESETS",
    "Agent",
    "BayesianAgent",
    "BeliefAgent",
    "PlayerView",
    "ProbabilisticAgent",
    "ProbabilisticParams",
    "RandomAgent",
    "make_agent",
    "view_of",
]
