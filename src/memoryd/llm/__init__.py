"""LLMs: a one-method protocol and a registry.

Core code only sees :class:`LLM`. Providers register a factory under a name
and own their settings section in :class:`memoryd.settings.LLMSettings`
(``settings.llm.openai``, ``settings.llm.anthropic``, ``settings.llm.bedrock``).
The ``none`` provider means "no LLM": extraction and reconciliation then run
offline (see :mod:`memoryd.extract`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Protocol, TypedDict, runtime_checkable

from memoryd.errors import InvalidInputError
from memoryd.settings import LLMSettings


class ChatMessage(TypedDict):
    role: str  # "system", "user" or "assistant"
    content: str


@runtime_checkable
class LLM(Protocol):
    """Answers a chat. ``json_output`` asks the provider for a JSON answer when it
    can enforce one; callers still validate, because not every provider can."""

    name: str

    def complete(self, messages: Sequence[ChatMessage], *, json_output: bool = False) -> str: ...


LLMFactory = Callable[[LLMSettings], LLM | None]
_REGISTRY: dict[str, LLMFactory] = {}


def register_llm(name: str, factory: LLMFactory) -> None:
    _REGISTRY[name] = factory


def available_llms() -> list[str]:
    _load_builtins()
    return sorted(_REGISTRY)


def create_llm(settings: LLMSettings) -> LLM | None:
    """The configured LLM, or ``None`` when the provider is ``none``."""
    _load_builtins()
    try:
        factory = _REGISTRY[settings.provider]
    except KeyError:
        raise InvalidInputError(
            f"unknown LLM provider {settings.provider!r}",
            f"set MEMORYD_LLM__PROVIDER to one of {', '.join(sorted(_REGISTRY))}",
        ) from None
    return factory(settings)


def _load_builtins() -> None:
    if "none" in _REGISTRY:
        return
    from memoryd.llm import anthropic, bedrock, openai  # noqa: F401  (they register themselves)

    register_llm("none", lambda _settings: None)
