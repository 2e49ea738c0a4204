"""Ask an LLM for JSON, check it, and ask once more if it is wrong.

The one place that turns "the model answered garbage" into either a valid
value or a clear :class:`UpstreamError`. Nothing is stored on the way, so a
failure loses nothing: the caller's input is still the caller's.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from memoryd.errors import UpstreamError
from memoryd.extract.jsonfix import loads_lenient
from memoryd.llm import LLM, ChatMessage

T = TypeVar("T")


class InvalidAnswer(ValueError):
    """Raised by a validator: the message is shown to the model on the retry."""


def ask_json(
    llm: LLM,
    messages: list[ChatMessage],
    validate: Callable[[Any], T],
    *,
    what: str,
) -> T:
    """``validate(decoded_answer)``; one corrective retry; then ``UpstreamError``."""
    answer = llm.complete(messages, json_output=True)
    try:
        return validate(loads_lenient(answer))
    except ValueError as exc:  # InvalidAnswer is a ValueError too
        problem = str(exc)
    retry: list[ChatMessage] = [
        *messages,
        {"role": "assistant", "content": answer},
        {
            "role": "user",
            "content": f"That answer cannot be used: {problem}. Answer again with only "
            "the JSON object described above, and nothing else.",
        },
    ]
    answer = llm.complete(retry, json_output=True)
    try:
        return validate(loads_lenient(answer))
    except ValueError as exc:
        raise UpstreamError(
            f"the LLM ({llm.name}) twice answered {what} with output memoryd cannot use: {exc}",
            "nothing was stored; retry, configure a stronger model, or add with infer=false "
            "to store the text as given",
        ) from None
