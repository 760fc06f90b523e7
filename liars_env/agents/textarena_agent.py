"""``textarena:CLASS``: one of TextArena's agents (``textarena.agents``) at our table.

Spec: ``textarena:CLASS?key=value&...``, e.g.
``textarena:OpenAIAgent?model_name=gpt-4o-mini`` or
``textarena:OpenRouterAgent?model_name=...``. The settings are the agent class's keyword
arguments (strings), except ours:

==================  =======  ==============================================================
``retries``         2        re-prompts after a bad reply (then the fallback move)
``api_key_env``     (none)   the environment variable whose value is passed as ``api_key``
                             (an ``api_key`` setting is refused: keys never go in specs)
==================  =======  ==============================================================

The agent is shown our prompt (:func:`liars_env.text.view.prompt_text`) as its
observation; a re-prompt appends its reply and the error. Everything else (fallback,
records, usage) is :class:`~liars_env.agents.text_agent.TextAgent`'s. Needs the
``textarena`` extra.
"""

from __future__ import annotations

import os
from typing import Any

from liars_env.agents.text_agent import ENV_NAME, TextAgent


class TextArenaAgent(TextAgent):
    """A TextArena agent (a callable ``observation -> reply``) as our player.

    Args:
        agent: The TextArena agent.
        name: Our name for it.
        retries: Re-prompts after a bad reply.
    """

    def __init__(self, agent: Any, name: str, retries: int = 2) -> None:
        super().__init__(name, "", retries=retries)
        self.agent = agent

    def complete(self, messages: list[dict[str, str]], draw: int, record: dict[str, Any]) -> str:
        """Asks the TextArena agent; a re-prompt shows its last reply and the error."""
        observation = messages[1]["content"]
        if len(messages) > 2:
            observation += (
                f"\n\nYour previous reply:\n{messages[-2]['content']}\n\n{messages[-1]['content']}"
            )
            record["prompt"] = observation
        self.count("requests")
        return str(self.agent(observation))


def make_textarena_agent(spec: str) -> TextArenaAgent:
    """The agent of a ``textarena:CLASS?key=value&...`` spec.

    Raises:
        ValueError: for a spec without a class, an unknown class, an ``api_key`` setting,
            a bad ``retries`` or ``api_key_env``, or a class that refuses the settings.
    """
    _, _, rest = spec.partition(":")
    cls_name, _, items = rest.partition("?")
    if not cls_name.isidentifier():
        raise ValueError(
            f"textarena spec {spec!r}: expected 'textarena:CLASS?key=value&...' with CLASS an "
            "agent class of textarena.agents, e.g. 'textarena:OpenAIAgent?model_name=gpt-4o-mini'"
        )
    try:
        import textarena.agents as agents
    except ImportError as exc:
        raise ImportError(
            "the textarena: agent needs the textarena package: pip install 'liars-dice[textarena]'"
        ) from exc
    cls = getattr(agents, cls_name, None)
    if not isinstance(cls, type):
        known = sorted(n for n in dir(agents) if n.endswith("Agent"))
        raise ValueError(
            f"textarena spec {spec!r}: textarena.agents has no agent class {cls_name!r}; "
            f"expected one of {', '.join(known)}"
        )
    kwargs: dict[str, Any] = {}
    retries = 2
    for item in items.split("&") if items else []:
        key, eq, value = (part.strip() for part in item.partition("="))
        if not key or not eq:
            raise ValueError(f"textarena spec {spec!r}: {item!r} is not key=value")
        if key == "api_key":
            raise ValueError(
                f"textarena spec {spec!r}: an API key never goes in a spec; put it in an "
                "environment variable and name it with api_key_env=NAME"
            )
        if key == "retries":
            if not value.isdecimal():
                raise ValueError(f"textarena spec {spec!r}: retries={value!r} is not an int >= 0")
            retries = int(value)
        elif key == "api_key_env":
            if not ENV_NAME.fullmatch(value) or not os.environ.get(value):
                raise ValueError(
                    f"textarena spec {spec!r}: api_key_env={value!r} must name a set "
                    "environment variable"
                )
            kwargs["api_key"] = os.environ[value]
        else:
            kwargs[key] = value
    try:
        agent = cls(**kwargs)
    except (TypeError, ValueError, ImportError) as exc:
        message = str(exc).replace(kwargs.get("api_key") or "\0", "***")
        raise ValueError(f"textarena spec {spec!r}: {cls_name}(...) failed: {message}") from None
    return TextArenaAgent(agent, name=spec, retries=retries)
