"""Anthropic's Messages API over plain HTTP, so no SDK is needed."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import httpx

from memoryd.errors import UpstreamError
from memoryd.llm import ChatMessage, register_llm
from memoryd.llm._http import post_json
from memoryd.settings import AnthropicLLMSettings, LLMSettings

_PREFIX = "MEMORYD_LLM__ANTHROPIC__"


class AnthropicChat:
    def __init__(self, config: AnthropicLLMSettings) -> None:
        self.config = config
        self.name = f"anthropic:{config.model}"
        headers = {"anthropic-version": config.version}
        key = config.api_key.get_secret_value()
        if key:
            headers["x-api-key"] = key
        self._client = httpx.Client(
            base_url=config.base_url.rstrip("/"), headers=headers, timeout=config.timeout_s
        )

    def complete(self, messages: Sequence[ChatMessage], *, json_output: bool = False) -> str:
        # The Messages API takes the system prompt apart from the turns.
        system = "\n\n".join(m["content"] for m in messages if m["role"] == "system")
        turns = [
            {"role": m["role"], "content": m["content"]} for m in messages if m["role"] != "system"
        ]
        payload: dict[str, Any] = {
            "model": self.config.model,
            "max_tokens": self.config.max_tokens,
            "temperature": self.config.temperature,
            "messages": turns,
        }
        if system:
            payload["system"] = system
        data = post_json(
            self._client,
            "/v1/messages",
            payload,
            what="the Anthropic API",
            settings_prefix=_PREFIX,
            retries=self.config.retries,
        )
        blocks = data.get("content")
        if not isinstance(blocks, list):
            raise UpstreamError(
                f"the Anthropic API at {self.config.base_url} answered without content blocks",
                f"check that {_PREFIX}BASE_URL speaks the Messages API",
            )
        return "".join(
            b.get("text", "") for b in blocks if isinstance(b, dict) and b.get("type") == "text"
        )


def _factory(settings: LLMSettings) -> AnthropicChat:
    return AnthropicChat(settings.anthropic)


register_llm("anthropic", _factory)
