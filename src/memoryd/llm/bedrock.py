"""AWS Bedrock through boto3's Converse API (one shape for every Bedrock model).

boto3 is an optional extra: it is imported when a Bedrock LLM is created, and
a missing install is an error that prints the pip line.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from memoryd.errors import DependencyMissingError, UpstreamError
from memoryd.llm import ChatMessage, register_llm
from memoryd.settings import BedrockLLMSettings, LLMSettings


class BedrockChat:
    def __init__(self, config: BedrockLLMSettings) -> None:
        try:
            import boto3
            from botocore.config import Config
        except ImportError:
            raise DependencyMissingError(
                "the bedrock LLM provider needs boto3, which is not installed",
                "pip install 'memoryd[bedrock]'   (or: pip install boto3)",
            ) from None
        self.config = config
        self.name = f"bedrock:{config.model_id}"
        session = boto3.Session(profile_name=config.profile, region_name=config.region)
        self._client = session.client(
            "bedrock-runtime",
            endpoint_url=config.endpoint_url,
            config=Config(
                read_timeout=config.timeout_s,
                connect_timeout=min(10.0, config.timeout_s),
                retries={"max_attempts": config.retries + 1, "mode": "standard"},
            ),
        )

    def complete(self, messages: Sequence[ChatMessage], *, json_output: bool = False) -> str:
        from botocore.exceptions import BotoCoreError, ClientError

        system = [{"text": m["content"]} for m in messages if m["role"] == "system"]
        turns = [
            {"role": m["role"], "content": [{"text": m["content"]}]}
            for m in messages
            if m["role"] != "system"
        ]
        request: dict[str, Any] = {
            "modelId": self.config.model_id,
            "messages": turns,
            "inferenceConfig": {
                "maxTokens": self.config.max_tokens,
                "temperature": self.config.temperature,
            },
        }
        if system:
            request["system"] = system
        try:
            response = self._client.converse(**request)
        except (BotoCoreError, ClientError) as exc:
            raise UpstreamError(
                f"AWS Bedrock ({self.config.region}, {self.config.model_id}) failed: "
                f"{type(exc).__name__}: {exc}",
                "check AWS credentials, MEMORYD_LLM__BEDROCK__REGION and __MODEL_ID; "
                "nothing was stored",
            ) from exc
        try:
            blocks = response["output"]["message"]["content"]
            return "".join(b.get("text", "") for b in blocks if isinstance(b, dict))
        except (KeyError, TypeError):
            raise UpstreamError(
                "AWS Bedrock answered without output.message.content",
                "check that the model supports the Converse API",
            ) from None


def _factory(settings: LLMSettings) -> BedrockChat:
    return BedrockChat(settings.bedrock)


register_llm("bedrock", _factory)
