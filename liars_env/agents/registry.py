"""Turns agent spec strings into agents.

Specs:

* ``random``: uniform over legal actions.
* ``probabilistic``, ``cautious``, ``bold``: probability bots (see
  :data:`~liars_env.agents.probabilistic.BOT_PRESETS`); ``bayes``: the Bayesian one;
  ``belief``: the strongest, reading each opponent's bids as evidence about its hand.
* ``NAME:key=value,...``: a bot preset with some settings changed, e.g.
  ``probabilistic:challenge_threshold=0.4,bluff_rate=0.1``.
* ``checkpoint:PATH``: a trained policy folder (needs torch).
* ``solver``: the exact equilibrium of a small 2-player game (see :mod:`liars_env.solver`).
* ``blueprint``, ``blueprint:PATH``: the last-bid blueprint of a 2-player game at any dice
  count (:mod:`liars_env.solver.last_bid`): solved for the rules on first use and cached,
  or read from a file or a folder holding ``blueprint.npz``, e.g.
  ``blueprint:blueprints/perudo_2p`` (shipped, or rebuilt by its pipeline);
  ``blueprint?tremble=T``: the same recipe solved in the perturbed game, where each
  player plays a random action with probability ``T`` at each decision (it then answers
  mistakes; :func:`~liars_env.solver.last_bid.solve_blueprint`).
* ``search:SPEC``: the agent ``SPEC`` (any spec with ``action_probabilities``) with search
  at every decision, settings after a ``?``: ``search:checkpoint:checkpoints/perudo_3p``,
  ``search:belief?samples=128,temperature=0.05`` (see :mod:`liars_env.agents.search`).
* ``llm:MODEL?settings``: a language model behind an OpenAI-compatible endpoint, e.g.
  ``llm:gpt-4o-mini`` or ``llm:qwen2.5:7b?base_url=http://127.0.0.1:11434/v1&temperature=0``
  (needs the ``llm`` extra; see :mod:`liars_env.agents.llm`).
* ``textarena:CLASS?settings``: one of TextArena's agents, e.g.
  ``textarena:OpenAIAgent?model_name=gpt-4o-mini`` (needs the ``textarena`` extra; see
  :mod:`liars_env.agents.textarena_agent`).
* ``MODULE:ATTR``: your own agent, by import path, e.g. ``mypkg.bots:MyBot`` (see below).
* ``NAME``: your own agent, registered by an installed package under the
  ``liars_dice.agents`` entry-point group, e.g. ``--agents mybot``.

Your own agents: ``ATTR`` (or the entry point's object) is a class or a factory
function. It is called with the keyword arguments among ``rules=`` (the
:class:`~liars_env.rules.RuleSet` of the game) and ``seed=`` (an int or ``None``) that
its signature accepts (both if it takes ``**kwargs``, none if it takes neither), and
must return an agent: an object with ``act(view) -> int`` and ``reset(seed)``
(see :class:`~liars_env.agents.base.Agent`); one without a ``name`` attribute gets the
spec as its name. ``ATTR`` may be dotted (``mypkg.bots:Bots.strong``).

How a spec is read, in order:

1. the built-in forms above win: ``random``, the bot presets, ``NAME:key=value``
   settings of a bot preset, ``checkpoint:PATH``, ``blueprint:PATH``, ``search:SPEC``,
   ``llm:MODEL``, ``textarena:CLASS``; a built-in name before a ``:`` is
   never read as a module (so ``probabilistic:bluff_rate=0.1`` and ``checkpoint:a.b:c``
   keep their meaning);
2. any other spec with a ``:`` is an import path ``MODULE:ATTR``: ``MODULE`` a dotted
   Python module name, importable from ``sys.path`` (``PYTHONPATH``, installed
   packages) or, failing that, from the current directory (as with ``python -m``;
   console scripts such as ``liars-eval`` do not put it on ``sys.path`` themselves);
3. a spec without ``:`` names an entry point of the ``liars_dice.agents`` group;
   entry points named like a built-in are ignored (built-ins win).

Every process resolves the spec string again (``liars-eval`` workers too), so the
module must be importable there: the same ``PYTHONPATH`` and current directory are
inherited by worker processes. A spec that cannot be resolved (no such module or
attribute, not callable, the result not an agent) raises ``ValueError`` naming the
spec and what is expected.

Example:
    >>> agent = make_agent("liars_env.agents.base:RandomAgent", RuleSet.preset("perudo"))
    >>> type(agent).__name__
    'RandomAgent'
"""

from __future__ import annotations

import contextlib
import importlib
import inspect
import os
import sys
from importlib import metadata
from typing import Any

from liars_env.agents.base import Agent, RandomAgent
from liars_env.agents.probabilistic import (
    BOT_PRESETS,
    BayesianAgent,
    BeliefAgent,
    ProbabilisticAgent,
    bot_params,
)
from liars_env.rules import RuleSet

AGENT_NAMES = (
    "random",
    *BOT_PRESETS,
    "checkpoint:PATH",
    "solver",
    "blueprint",
    "blueprint:PATH",
    "blueprint?tremble=T",
    "search:SPEC",
    "llm:MODEL",
    "textarena:CLASS",
    "MODULE:ATTR",
)
"""Every spec form :func:`make_agent` accepts (plus installed entry-point names)."""

ENTRY_POINT_GROUP = "liars_dice.agents"
"""The entry-point group where packages register their own agents by name."""


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
    if name == "search":
        return _make_search(spec, rules, seed)
    if name == "llm":
        from liars_env.agents.llm import make_llm_agent  # openai, only when asked

        return make_llm_agent(spec, rules, seed=seed)
    if name == "textarena":
        from liars_env.agents.textarena_agent import make_textarena_agent  # textarena

        return make_textarena_agent(spec)
    if name == "random" and not arg:
        return RandomAgent(seed)
    if name == "solver" and not arg:
        from liars_env.solver import SolverAgent  # solves or loads a cached solution

        return SolverAgent(rules, seed=seed)
    if name.startswith("blueprint?") and not arg:
        from liars_env.solver.agent import BlueprintAgent  # the solver layer, when asked
        from liars_env.solver.cache import cached_blueprint

        blueprint = cached_blueprint(rules, tremble=_blueprint_tremble(spec))
        return BlueprintAgent(blueprint, rules, seed=seed, name=spec)
    if name == "blueprint":
        from liars_env.solver.agent import BlueprintAgent  # the solver layer, when asked
        from liars_env.solver.last_bid import Blueprint

        if not arg:
            return BlueprintAgent(rules=rules, seed=seed)
        path = os.path.join(arg, "blueprint.npz") if os.path.isdir(arg) else arg
        if not os.path.isfile(path):
            raise ValueError(
                f"blueprint file {path!r} does not exist ('blueprint:PATH': a blueprint's "
                ".npz file or a folder holding blueprint.npz). The project's blueprints "
                "ship in blueprints/NAME, and their pipelines rebuild them: liars-train "
                "--pipeline configs/blueprints/NAME.yaml --out blueprints/NAME (9 to 26 "
                "minutes on two cores); or play 'blueprint', solved for the rules on first "
                "use and cached"
            )
        return BlueprintAgent(Blueprint.load(path, rules), rules, seed=seed, name=spec)
    if name in BOT_PRESETS:
        _, params = bot_params(spec)
        cls = {"bayes": BayesianAgent, "belief": BeliefAgent}.get(name, ProbabilisticAgent)
        return cls(params, seed=seed, name=spec)
    custom = _make_custom_agent(spec, rules, seed)
    if custom is not None:
        return custom
    raise ValueError(
        f"unknown agent spec {spec!r}; expected one of {', '.join(AGENT_NAMES)}, or "
        f"{_entry_point_hint()}"
    )


def _blueprint_tremble(spec: str) -> float:
    """The ``T`` of a ``blueprint?tremble=T`` spec, checked.

    Example:
        >>> _blueprint_tremble("blueprint?tremble=0.02")
        0.02
        >>> _blueprint_tremble("blueprint?iterations=5")  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        ValueError: agent spec 'blueprint?iterations=5': expected 'blueprint?tremble=T' ...
    """
    from liars_env.solver.last_bid import check_tremble

    key, eq, value = (part.strip() for part in spec.partition("?")[2].partition("="))
    if key != "tremble" or not eq:
        raise ValueError(
            f"agent spec {spec!r}: expected 'blueprint?tremble=T' with T a number in [0, 1)"
        )
    try:
        tremble = float(value)
    except ValueError:
        raise ValueError(f"agent spec {spec!r}: tremble must be a number, got {value!r}") from None
    try:
        check_tremble(tremble)
    except ValueError as err:
        raise ValueError(f"agent spec {spec!r}: {err}") from None
    return tremble


def _make_search(spec: str, rules: RuleSet, seed: int | None) -> Agent:
    """``search:BASE?settings`` (see :mod:`liars_env.agents.search`)."""
    from liars_env.agents.search import SearchAgent, parse_search_spec  # torch, batched

    base_spec, settings = parse_search_spec(spec)
    if base_spec.partition(":")[0] == "search":
        raise ValueError(f"search spec {spec!r}: search over a search agent is not supported")
    base = make_agent(base_spec, rules, seed=seed)
    if not callable(getattr(base, "action_probabilities", None)):
        raise ValueError(
            f"search spec {spec!r}: the base agent {base_spec!r} has no "
            "action_probabilities(view), which the search needs (as its prior and its "
            "model of the players)"
        )
    return SearchAgent(base, rules, settings, base_spec=base_spec, seed=seed, name=spec)


# --------------------------------------------------------------------- custom agents
def _builtin_names() -> set[str]:
    """Names that always mean a built-in spec (before any ``:``)."""
    return {name.partition(":")[0] for name in AGENT_NAMES if name != "MODULE:ATTR"}


def _is_dotted_name(text: str) -> bool:
    return bool(text) and all(part.isidentifier() for part in text.split("."))


def _make_custom_agent(spec: str, rules: RuleSet, seed: int | None) -> Agent | None:
    """An agent from an import path or an entry point; ``None`` if ``spec`` is neither."""
    module_name, colon, attr = spec.partition(":")
    if module_name in _builtin_names():
        return None
    if colon:
        if not (_is_dotted_name(module_name) and _is_dotted_name(attr)):
            raise ValueError(
                f"agent spec {spec!r} is not a built-in spec nor an import path "
                "MODULE:ATTR (a dotted module name, a colon, an attribute name), e.g. "
                "'mypkg.bots:MyBot'"
            )
        target = _import_attribute(spec, module_name, attr)
        return _build_agent(spec, target, rules, seed, what=f"{module_name}:{attr}")
    entry = _find_entry_point(spec)
    if entry is None:
        return None
    try:
        target = entry.load()
    except Exception as exc:
        raise ValueError(
            f"agent spec {spec!r}: loading entry point {entry.name} = {entry.value} "
            f"(group {ENTRY_POINT_GROUP}) failed: {type(exc).__name__}: {exc}"
        ) from exc
    return _build_agent(spec, target, rules, seed, what=f"entry point {entry.value}")


def _import_attribute(spec: str, module_name: str, attr: str) -> Any:
    """``MODULE:ATTR`` resolved, trying the current directory if ``MODULE`` is missing."""
    try:
        module = _import_module(module_name)
    except ModuleNotFoundError as exc:
        if exc.name is None or not (
            module_name == exc.name or module_name.startswith(exc.name + ".")
        ):  # the module exists but imports something missing
            raise ValueError(
                f"agent spec {spec!r}: importing module {module_name!r} failed: {exc}"
            ) from exc
        raise ValueError(
            f"agent spec {spec!r}: no module named {exc.name!r}; the module of a "
            "MODULE:ATTR spec must be importable (installed, on PYTHONPATH, or in the "
            f"current directory {os.getcwd()})"
        ) from None
    except Exception as exc:
        raise ValueError(
            f"agent spec {spec!r}: importing module {module_name!r} failed: "
            f"{type(exc).__name__}: {exc}"
        ) from exc
    target: Any = module
    for i, part in enumerate(attr.split(".")):
        if not hasattr(target, part):
            where = module_name + "".join("." + p for p in attr.split(".")[:i])
            raise ValueError(
                f"agent spec {spec!r}: {where} has no attribute {part!r}; expected "
                "MODULE:ATTR naming an agent class or factory"
            )
        target = getattr(target, part)
    return target


def _import_module(module_name: str) -> Any:
    """Imports ``module_name``; if it is not found, retries with the cwd on ``sys.path``."""
    try:
        return importlib.import_module(module_name)
    except ModuleNotFoundError:
        cwd = os.getcwd()
        if cwd in sys.path or "" in sys.path:
            raise
        sys.path.append(cwd)  # after everything else, as the last resort
        importlib.invalidate_caches()
        return importlib.import_module(module_name)


def _find_entry_point(name: str) -> metadata.EntryPoint | None:
    """The first ``liars_dice.agents`` entry point called ``name``, or ``None``."""
    for entry in metadata.entry_points(group=ENTRY_POINT_GROUP):
        if entry.name == name:
            return entry
    return None


def _entry_point_hint() -> str:
    names = sorted(
        {e.name for e in metadata.entry_points(group=ENTRY_POINT_GROUP)} - _builtin_names()
    )
    installed = f"installed: {', '.join(names)}" if names else "none installed"
    return f"the name of a {ENTRY_POINT_GROUP!r} entry point ({installed})"


def _build_agent(spec: str, target: Any, rules: RuleSet, seed: int | None, what: str) -> Agent:
    """Calls a class or factory with the ``rules``/``seed`` it accepts; checks the result."""
    if not callable(target):
        raise ValueError(
            f"agent spec {spec!r}: {what} is {target!r}, not callable; expected an agent "
            "class or a factory returning an agent"
        )
    kwargs = {}
    try:
        params = inspect.signature(target).parameters
    except (TypeError, ValueError):  # no signature (some builtins): call with no args
        params = {}
    any_keyword = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values())
    for key, value in (("rules", rules), ("seed", seed)):
        param = params.get(key)
        if any_keyword or (
            param is not None
            and param.kind
            in (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
        ):
            kwargs[key] = value
    call = f"{what}({', '.join(f'{k}=...' for k in kwargs)})"
    try:
        agent = target(**kwargs)
    except TypeError as exc:
        raise ValueError(
            f"agent spec {spec!r}: calling {call} failed: {exc}; an agent class or factory "
            "must be callable with no arguments or with the keywords rules= and/or seed="
        ) from exc
    missing = [m for m in ("act", "reset") if not callable(getattr(agent, m, None))]
    if missing:
        raise ValueError(
            f"agent spec {spec!r}: {call} returned {agent!r}, which is not an agent: it "
            f"lacks {' and '.join(f'{m}()' for m in missing)}; an agent has act(view) -> int "
            "and reset(seed)"
        )
    if not isinstance(getattr(agent, "name", None), str):
        with contextlib.suppress(AttributeError, TypeError):  # slots, read-only: keep
            agent.name = spec
    return agent
