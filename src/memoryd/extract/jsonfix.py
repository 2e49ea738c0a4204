"""Read JSON from an LLM answer that is *almost* JSON.

Repairs only what models commonly wrap around a valid answer: reasoning
blocks (``<think>…</think>``), Markdown code fences, prose before or after the
object, and trailing commas. Anything else is not guessed at: the caller
asks the model again or fails.
"""

from __future__ import annotations

import json
import re
from typing import Any

_THINK = re.compile(r"<think>.*?</think>", re.DOTALL | re.IGNORECASE)
_FENCE = re.compile(r"```(?:json|JSON)?\s*(.*?)```", re.DOTALL)
_TRAILING_COMMA = re.compile(r",\s*([}\]])")


def loads_lenient(text: str) -> Any:
    """Decode ``text`` as JSON after the repairs above; ``ValueError`` if it cannot."""
    text = _THINK.sub("", text).strip()
    candidates = [text]
    fenced = _FENCE.search(text)
    if fenced:
        candidates.append(fenced.group(1).strip())
    outer = _outermost(text)
    if outer:
        candidates.append(outer)
    for candidate in candidates:
        for attempt in (candidate, _TRAILING_COMMA.sub(r"\1", candidate)):
            try:
                return json.loads(attempt)
            except ValueError:
                continue
    raise ValueError("the answer is not JSON")


def _outermost(text: str) -> str | None:
    """The span from the first ``{``/``[`` to the last matching closer."""
    starts = [i for i in (text.find("{"), text.find("[")) if i >= 0]
    if not starts:
        return None
    start = min(starts)
    closer = "}" if text[start] == "{" else "]"
    end = text.rfind(closer)
    return text[start : end + 1] if end > start else None
