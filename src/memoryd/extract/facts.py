"""Facts from text with an LLM: the prompt, the answer format, the checks."""

from __future__ import annotations

from datetime import date
from typing import Any

from memoryd.extract.ask import InvalidAnswer, ask_json
from memoryd.extract.noise import is_chitchat
from memoryd.extract.prompts import DEFAULT_EXTRACTION_PROMPT
from memoryd.llm import LLM, ChatMessage
from memoryd.settings import ExtractSettings, LimitSettings

ANSWER_FORMAT = (
    'Answer with only a JSON object of this shape: {"facts": ["first fact", "second fact"]}. '
    'Use {"facts": []} when there is nothing to remember.'
)


def extraction_messages(text: str, prompt: str | None, today: date) -> list[ChatMessage]:
    system = f"{prompt or DEFAULT_EXTRACTION_PROMPT}\n\n{ANSWER_FORMAT}\nToday is {today:%Y-%m-%d}."
    return [
        {"role": "system", "content": system},
        {"role": "user", "content": f"Input:\n{text}"},
    ]


class LLMExtractor:
    """Extraction by an LLM; follows custom prompts."""

    follows_prompts = True

    def __init__(self, llm: LLM, settings: ExtractSettings, limits: LimitSettings) -> None:
        self.llm = llm
        self.settings = settings
        self.limits = limits

    def extract(self, text: str, prompt: str | None, today: date) -> list[str]:
        return ask_json(
            self.llm,
            extraction_messages(text, prompt, today),
            self._validate,
            what="a fact extraction",
        )

    def _validate(self, data: Any) -> list[str]:
        if isinstance(data, list):  # a bare list of facts is the same answer, unwrapped
            data = {"facts": data}
        if not isinstance(data, dict) or not isinstance(data.get("facts"), list):
            raise InvalidAnswer('expected an object with a "facts" list')
        facts: list[str] = []
        for i, fact in enumerate(data["facts"]):
            if not isinstance(fact, str):
                raise InvalidAnswer(f"facts[{i}] is not a string")
            fact = fact.strip()
            if len(fact) > self.limits.max_text_chars:
                raise InvalidAnswer(f"facts[{i}] is {len(fact)} characters; a fact must be short")
            if fact and fact not in facts and not is_chitchat(fact):  # a model's slip
                facts.append(fact)
        if len(facts) > self.settings.max_facts:
            raise InvalidAnswer(
                f"{len(facts)} facts; give at most {self.settings.max_facts}, the important ones"
            )
        return facts
