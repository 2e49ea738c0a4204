"""Facts from text, and reconciliation with what is already remembered.

``Memory.add(..., infer=True)`` runs: extract facts (an LLM when one is
configured, else :class:`~memoryd.extract.offline.OfflineExtractor`), find
similar memories in the fact's dedup scope, then decide ADD / UPDATE / DELETE
/ NONE for each fact (:mod:`memoryd.extract.reconcile`). Prompts by name are
in :mod:`memoryd.extract.prompts`.
"""

from __future__ import annotations

from datetime import date
from typing import Protocol

from memoryd.extract.facts import LLMExtractor
from memoryd.extract.offline import OfflineExtractor
from memoryd.extract.prompts import (
    DEFAULT_EXTRACTION_PROMPT,
    DIGEST_EXTRACTION_PROMPT,
    PROMPTS,
    TASK_EXTRACTION_PROMPT,
    get_prompt,
)
from memoryd.extract.reconcile import (
    Decision,
    Known,
    LLMReconciler,
    NewFact,
    Reconciler,
    ThresholdReconciler,
)
from memoryd.llm import LLM
from memoryd.settings import ExtractSettings, LimitSettings


class Extractor(Protocol):
    follows_prompts: bool  # False: a custom prompt cannot steer it (offline)

    def extract(self, text: str, prompt: str | None, today: date) -> list[str]: ...


def make_extractor(llm: LLM | None, settings: ExtractSettings, limits: LimitSettings) -> Extractor:
    return LLMExtractor(llm, settings, limits) if llm else OfflineExtractor(limits)


def make_reconciler(
    llm: LLM | None, settings: ExtractSettings, limits: LimitSettings
) -> Reconciler:
    return LLMReconciler(llm, settings, limits) if llm else ThresholdReconciler(settings)


__all__ = [
    "DEFAULT_EXTRACTION_PROMPT",
    "DIGEST_EXTRACTION_PROMPT",
    "PROMPTS",
    "TASK_EXTRACTION_PROMPT",
    "Decision",
    "Extractor",
    "Known",
    "LLMExtractor",
    "LLMReconciler",
    "NewFact",
    "OfflineExtractor",
    "Reconciler",
    "ThresholdReconciler",
    "get_prompt",
    "make_extractor",
    "make_reconciler",
]
