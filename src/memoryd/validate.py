"""Input checks shared by every interface. Each failure names the fix."""

from __future__ import annotations

import json
import re
from typing import Any

from memoryd.errors import InvalidInputError, LimitExceededError
from memoryd.settings import LimitSettings

#: the whole value (``fullmatch``: ``$`` alone lets a trailing newline through)
_ID = re.compile(r"[\w.@:+-]+")


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
    if not _ID.fullmatch(value) or value.startswith(".") or value in {".", ".."}:
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
    check_category(metadata.get("category"))
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


def check_messages(messages: Any, limits: LimitSettings, field: str = "messages") -> Any:
    """At most ``limits.max_messages`` messages a request (each one is a turn to embed
    and store: 27,000 in one 1 MB body ran for 13 minutes), all of them encodable."""
    if isinstance(messages, list | tuple) and len(messages) > limits.max_messages:
        raise LimitExceededError(
            f"{field} has {len(messages)} messages; the limit is {limits.max_messages} "
            "(limits.max_messages)",
            f"send them in batches of at most {limits.max_messages}, or raise "
            "MEMORYD_LIMITS__MAX_MESSAGES",
        )
    return check_encodable(messages, field)


def check_encodable(value: Any, field: str) -> Any:
    """Refuse a lone surrogate anywhere in ``value`` (strings in lists and dicts too):
    JSON decodes ``"\\ud800"`` to a string no file or database can encode, and a write
    that fails half-way leaves an empty file behind. A loop, not recursion."""
    stack: list[tuple[Any, str]] = [(value, field)]
    while stack:
        item, at = stack.pop()
        if isinstance(item, str):
            try:
                item.encode("utf-8")
            except UnicodeEncodeError:
                raise InvalidInputError(
                    f"{at} contains an unpaired surrogate (e.g. \\ud800), which is not text",
                    "send valid Unicode: a surrogate only as half of a pair",
                ) from None
        elif isinstance(item, dict):
            stack.extend((k, f"{at} (a key)") for k in item)
            stack.extend((v, f"{at}.{k}") for k, v in item.items())
        elif isinstance(item, list | tuple):
            stack.extend((v, f"{at}[{n}]") for n, v in enumerate(item))
    return value


def check_category(category: Any) -> str | None:
    """A category is a word or a short phrase: an object, list, number or bool would be
    stored as its ``str()`` on add and break the update path, so it is refused first."""
    if category is None or isinstance(category, str):
        return category
    raise InvalidInputError(
        f"metadata.category must be a string, got {type(category).__name__}",
        'pass the category as text, e.g. {"category": "decision"}',
    )


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
