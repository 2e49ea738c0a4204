"""Embeddings from any OpenAI-compatible ``/embeddings`` endpoint."""

from __future__ import annotations

from collections.abc import Sequence

import httpx
import numpy as np

from memoryd.embed import normalize, register_embedder
from memoryd.errors import UpstreamError
from memoryd.settings import EmbedSettings, OpenAIEmbedSettings


class OpenAIEmbedder:
    def __init__(self, config: OpenAIEmbedSettings) -> None:
        self.config = config
        self.name = config.model
        self.max_tokens = config.max_tokens
        headers = {}
        key = config.api_key.get_secret_value()
        if key:
            headers["Authorization"] = f"Bearer {key}"
        self._client = httpx.Client(
            base_url=config.base_url.rstrip("/"), headers=headers, timeout=config.timeout_s
        )
        self.dim = config.dim or len(self.embed(["dimension probe"])[0])

    def count_tokens(self, text: str) -> int:
        # No tokenizer for a remote model: ~4 characters per token is the usual estimate.
        return max(1, len(text) // 4)

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        vectors: list[list[float]] = []
        for start in range(0, len(texts), self.config.batch_size):
            batch = list(texts[start : start + self.config.batch_size])
            try:
                response = self._client.post(
                    "/embeddings", json={"model": self.config.model, "input": batch}
                )
                response.raise_for_status()
                data = sorted(response.json()["data"], key=lambda d: d["index"])
                vectors.extend(d["embedding"] for d in data)
            except (httpx.HTTPError, KeyError, TypeError, ValueError) as exc:
                raise UpstreamError(
                    f"embedding endpoint {self.config.base_url} failed: {type(exc).__name__}",
                    "check MEMORYD_EMBED__OPENAI__BASE_URL, the model name and the key",
                ) from exc
            if len(vectors) != start + len(batch):
                raise UpstreamError(
                    "embedding endpoint returned the wrong number of vectors",
                    "check that the endpoint speaks the OpenAI embeddings protocol",
                )
        if not texts:
            return np.zeros((0, getattr(self, "dim", 0)), dtype=np.float32)
        return normalize(np.asarray(vectors, dtype=np.float32))


def _factory(settings: EmbedSettings) -> OpenAIEmbedder:
    return OpenAIEmbedder(settings.openai)


register_embedder("openai", _factory)
