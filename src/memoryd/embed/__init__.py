"""Embedders: a tiny protocol and a registry.

Core code only sees :class:`Embedder`; providers register a factory under a
name and own their config section in :class:`memoryd.settings.EmbedSettings`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Protocol, runtime_checkable

import numpy as np

from memoryd.errors import InvalidInputError
from memoryd.settings import EmbedSettings


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into L2-normalised float32 vectors of shape ``(n, dim)``."""

    name: str
    dim: int
    max_tokens: int

    def embed(self, texts: Sequence[str]) -> np.ndarray: ...

    def count_tokens(self, text: str) -> int: ...


EmbedderFactory = Callable[[EmbedSettings], Embedder]
_REGISTRY: dict[str, EmbedderFactory] = {}


def register_embedder(name: str, factory: EmbedderFactory) -> None:
    _REGISTRY[name] = factory


def available_embedders() -> list[str]:
    _load_builtins()
    return sorted(_REGISTRY)


def create_embedder(settings: EmbedSettings) -> Embedder:
    _load_builtins()
    try:
        factory = _REGISTRY[settings.provider]
    except KeyError:
        raise InvalidInputError(
            f"unknown embedding provider {settings.provider!r}",
            f"set MEMORYD_EMBED__PROVIDER to one of {', '.join(sorted(_REGISTRY))}",
        ) from None
    return factory(settings)


def _load_builtins() -> None:
    if "onnx" in _REGISTRY:
        return
    from memoryd.embed import onnx, openai  # noqa: F401  (they register themselves)


def normalize(vectors: np.ndarray) -> np.ndarray:
    vectors = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return vectors / norms
