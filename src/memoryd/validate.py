"""Input checks shared by every interface. Each failure names the fix."""

from __future__ import annotations

import json
import re
from typing import Any

from memoryd.errors import InvalidInputError, LimitExceededError
from memoryd.settings import LimitSettings

_ID = re.compile(r"^[\w.@:+-]+$")


def check_id(
    value: str | None, field: str, limits: LimitSettings, *, required: bool = False
) -> str | None:
    if value is None or value == "":
        if required:
            raise InvalidInputError(f"{field} is required", f"pass a non-empty {field}")
        return None
    if not isinstance(value, str):
        raise InvalidInputError(f"{field} must be a string", f"pass {field} as text")
    if len(value) > limits.max_id_chars:
        raise InvalidInputError(
            f"{field} is {len(value)} characters long",
            f"use at most {limits.max_id_chars} characters",
        )
    if not _ID.match(value) or value.startswith(".") or value in {".", ".."}:
        raise InvalidInputError(
            f"{field} {value!r} has characters memoryd does not accept",
            "use letters, digits and . _ - @ : + (no spaces, slashes or control characters)",
        )
    return value


def check_text(text: Any, limits: LimitSettings, field: str = "text") -> str:
    if not isinstance(text, str):
        raise InvalidInputError(f"{field} must be a string", f"pass {field} as text")
    if "\x00" in text:
        text = text.replace("\x00", "")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise InvalidInputError(
            f"{field} contains unpaired surrogate characters",
            "send valid UTF-8 text",
        ) from None
    if not text.strip():
        raise InvalidInputError(f"{field} is empty", f"pass some {field} to remember")
    if len(text) > limits.max_text_chars:
        raise LimitExceededError(
            f"{field} is {len(text)} characters; the limit is {limits.max_text_chars}",
            "split it, or index it as a Markdown file in the workspace",
        )
    return text.strip()


def check_metadata(metadata: Any, limits: LimitSettings) -> dict[str, Any]:
    if metadata is None:
        return {}
    if not isinstance(metadata, dict):
        raise InvalidInputError(
            "metadata must be a JSON object", 'pass e.g. {"category": "decision"}'
        )
    try:
        encoded = json.dumps(metadata, ensure_ascii=False)
    except (TypeError, ValueError) as exc:
        raise InvalidInputError(
            f"metadata is not JSON-serialisable: {exc}", "pass plain JSON values"
        ) from None
    if len(encoded.encode("utf-8", "surrogatepass")) > limits.max_metadata_bytes:
        raise LimitExceededError(
            f"metadata is larger than {limits.max_metadata_bytes} bytes",
            "store large content as the memory text or in a workspace file",
        )
    if _depth(metadata) > limits.max_metadata_depth:
        raise LimitExceededError(
            f"metadata nests deeper than {limits.max_metadata_depth} levels",
            "flatten the metadata",
        )
    try:
        encoded.encode("utf-8")
    except UnicodeEncodeError:
        raise InvalidInputError(
            "metadata contains unpaired surrogates", "send valid UTF-8"
        ) from None
    return metadata


def _depth(value: Any) -> int:
    """Nesting depth, iteratively (a deeply nested value must not blow the stack)."""
    deepest = 0
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        deepest = max(deepest, depth)
        if isinstance(item, dict):
            stack.extend((v, depth + 1) for v in item.values())
        elif isinstance(item, list):
            stack.extend((v, depth + 1) for v in item)
    return deepest


def check_top_k(top_k: int, maximum: int) -> int:
    if not isinstance(top_k, int) or isinstance(top_k, bool) or not 1 <= top_k <= maximum:
        raise InvalidInputError(
            f"top_k must be between 1 and {maximum}, got {top_k!r}",
            f"pass top_k from 1 to {maximum}",
        )
    return top_k
