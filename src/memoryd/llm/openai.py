"""Chat completions from any OpenAI-compatible endpoint: OpenAI, Ollama, vLLM,
LM Studio, llama.cpp's server."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import httpx

from memoryd.errors import UpstreamError
from memoryd.llm import ChatMessage, register_llm
from memoryd.llm._http import post_json
from memoryd.settings import LLMSettings, OpenAILLMSettings

_PREFIX = "MEMORYD_LLM__OPENAI__"


class OpenAIChat:
    def __init__(self, config: OpenAILLMSettings) -> None:
        self.config = config
        self.name = f"openai:{config.model}"
        headers = {}
        key = config.api_key.get_secret_value()
        if key:
            headers["Authorization"] = f"Bearer {key}"
        self._client = httpx.Client(
            base_url=config.base_url.rstrip("/"), headers=headers, timeout=config.timeout_s
        )

    def complete(self, messages: Sequence[ChatMessage], *, json_output: bool = False) -> str:
        payload: dict[str, Any] = {
            "model": self.config.model,
            "messages": [dict(m) for m in messages],
            "temperature": self.config.temperature,
            "max_tokens": self.config.max_tokens,
        }
        if json_output and self.config.json_mode:
            payload["response_format"] = {"type": "json_object"}
        data = post_json(
            self._client,
            "/chat/completions",
            payload,
            what="the LLM",
            settings_prefix=_PREFIX,
            retries=self.config.retries,
        )
        try:
            content = data["choices"][0]["message"]["content"]
        except (KeyError, IndexError, TypeError):
            content = None
        if not isinstance(content, str):
            raise UpstreamError(
                f"the LLM at {self.config.base_url} answered without choices[0].message.content",
                f"check that {_PREFIX}BASE_URL speaks the OpenAI chat completions protocol",
            )
        return content


def _factory(settings: LLMSettings) -> OpenAIChat:
    return OpenAIChat(settings.openai)


register_llm("openai", _factory)
