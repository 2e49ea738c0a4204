"""Reconciliation: each new fact against the similar memories already stored.

The outcome per fact is mem0's event vocabulary: ADD (new), UPDATE (replaces
an existing memory's text; the old text stays in history), DELETE (an
existing memory is no longer true; restorable), NONE (already known).

Two reconcilers, one interface:

* :class:`LLMReconciler` shows the model the candidates under small integer
  ids (0, 1, 2, ...), never UUIDs: models copy short numbers reliably and
  long ids badly, and a made-up id is detected instead of written.
* :class:`ThresholdReconciler` decides offline from cosine similarity and
  word overlap (thresholds in ``settings.extract``):

  - similarity >= ``update_similarity`` (0.8) and every content word of the
    fact already in the memory, or similarity >= ``none_similarity`` (0.95)
    with the same values (numbers, versions, ids): NONE. A near-identical
    sentence with another port or cluster id is *not* already known;
  - similarity >= ``update_similarity`` and the same subject (at least
    ``subject_overlap`` of the shorter text's non-numeric content words
    shared): UPDATE, the newer fact wins;
  - otherwise ADD.

  It never emits DELETE: telling "no longer true" from "related" needs
  language understanding, and a wrong DELETE hides a memory. An UPDATE keeps
  the old text in history, so nothing is lost either way.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from memoryd.extract.ask import InvalidAnswer, ask_json
from memoryd.extract.prompts import RECONCILE_PROMPT
from memoryd.llm import LLM, ChatMessage
from memoryd.models import Event
from memoryd.settings import ExtractSettings, LimitSettings


@dataclass
class Known:
    """An existing memory, as the reconciler sees it."""

    key: int  # the small integer id used in prompts
    id: str
    text: str


@dataclass
class NewFact:
    index: int
    text: str
    vector: np.ndarray
    similar: list[tuple[Known, float]] = field(default_factory=list)  # best first


@dataclass
class Decision:
    fact: int
    event: Event
    text: str  # the memory's text after the decision (the fact itself for NONE/DELETE)
    target: Known | None = None
    reason: str = ""


class Reconciler(Protocol):
    def decide(self, facts: list[NewFact]) -> list[Decision]: ...


# -- offline ---------------------------------------------------------------------------------
_TOKEN = re.compile(r"[\w][\w.:/@#+-]*[\w]|\w", re.UNICODE)
_STOPWORDS = frozenset(
    """a an the and or but if then so of to in on at by for with from into onto over under
    about as is are was were be been being am do does did doing have has had having it its
    this that these those there here i me my we our you your he him his she her they them
    their what which who whom when where why how all any both each few more most other some
    such no nor not only own same than too very can will just should now also still again
    up down out off via per using use used uses now today yesterday tomorrow""".split()  # noqa: SIM905
)


def content_tokens(text: str) -> set[str]:
    return {
        t.casefold().rstrip(".:")
        for t in _TOKEN.findall(text)
        if (t.casefold() not in _STOPWORDS and len(t) > 1) or any(ch.isdigit() for ch in t)
    }


def values(tokens: set[str]) -> set[str]:
    """The tokens carrying values: numbers, versions, ports, ids like prod-eu-1."""
    return {t for t in tokens if any(ch.isdigit() for ch in t)}


def subject_tokens(text: str) -> set[str]:
    """Content words without values (numbers, versions, times): what a fact is *about*."""
    return {t for t in content_tokens(text) if not any(ch.isdigit() for ch in t)}


class ThresholdReconciler:
    def __init__(self, settings: ExtractSettings) -> None:
        self.settings = settings

    def decide(self, facts: list[NewFact]) -> list[Decision]:
        s = self.settings
        decisions: list[Decision] = []
        # ADDs of this batch, so a later duplicate in the same input is NONE
        added: list[NewFact] = []
        added_vectors: list[np.ndarray] = []
        tokens: dict[str, set[str]] = {}  # text -> content tokens, computed once

        def words(text: str) -> set[str]:
            if text not in tokens:
                tokens[text] = content_tokens(text)
            return tokens[text]

        def already_says(memory: str, fact: str, similarity: float) -> bool:
            """Similar enough, and every content word of the fact in the memory (or,
            when nearly identical, at least the same values: numbers, versions, ids)."""
            if similarity < s.update_similarity:
                return False
            new, old = words(fact), words(memory)
            return new <= old or (similarity >= s.none_similarity and values(new) <= values(old))

        updated: set[str] = set()
        for fact in facts:
            twin = None
            if added:
                sims = np.stack(added_vectors) @ fact.vector
                for n in np.flatnonzero(sims >= s.update_similarity):
                    if already_says(added[n].text, fact.text, float(sims[n])):
                        twin = added[n]
                        break
            if twin is not None:
                decisions.append(
                    Decision(fact.index, Event.NONE, fact.text, None, f"same as fact {twin.index}")
                )
                continue
            best = fact.similar[0] if fact.similar else None
            if best is not None and already_says(best[0].text, fact.text, best[1]):
                known, sim = best
                decisions.append(
                    Decision(fact.index, Event.NONE, fact.text, known, f"similarity {sim:.2f}")
                )
            elif (
                best is not None
                and best[1] >= s.update_similarity
                and best[0].id not in updated
                and same_subject(fact.text, best[0].text, s.subject_overlap)
            ):
                known, sim = best
                updated.add(known.id)
                decisions.append(
                    Decision(
                        fact.index,
                        Event.UPDATE,
                        fact.text,
                        known,
                        f"newer fact on the same subject (similarity {sim:.2f})",
                    )
                )
            else:
                decisions.append(Decision(fact.index, Event.ADD, fact.text, None, "new"))
                added.append(fact)
                added_vectors.append(fact.vector)
        return decisions


def same_subject(a: str, b: str, overlap: float) -> bool:
    sa, sb = subject_tokens(a), subject_tokens(b)
    if not sa or not sb:
        return False
    return len(sa & sb) / min(len(sa), len(sb)) >= overlap


# -- with an LLM -------------------------------------------------------------------------------
class LLMReconciler:
    def __init__(self, llm: LLM, settings: ExtractSettings, limits: LimitSettings) -> None:
        self.llm = llm
        self.settings = settings
        self.limits = limits

    def decide(self, facts: list[NewFact]) -> list[Decision]:
        known: dict[int, Known] = {}
        by_id: dict[str, Known] = {}
        for fact in facts:
            for k, sim in fact.similar:
                if sim >= self.settings.llm_min_similarity and k.id not in by_id:
                    k = Known(len(known), k.id, k.text)
                    known[k.key] = by_id[k.id] = k
        if not known:  # nothing to compare with: no call needed
            return [Decision(f.index, Event.ADD, f.text, None, "new") for f in facts]
        payload = {
            "existing": [{"id": k.key, "text": k.text} for k in known.values()],
            "new_facts": [{"fact": n, "text": f.text} for n, f in enumerate(facts)],
        }
        messages: list[ChatMessage] = [
            {"role": "system", "content": RECONCILE_PROMPT},
            {"role": "user", "content": json.dumps(payload, ensure_ascii=False, indent=1)},
        ]

        def validate(data: Any) -> list[Decision]:
            return self._validate(data, facts, known)

        return ask_json(self.llm, messages, validate, what="a reconciliation")

    def _validate(self, data: Any, facts: list[NewFact], known: dict[int, Known]) -> list[Decision]:
        if isinstance(data, list):
            data = {"decisions": data}
        items = data.get("decisions") if isinstance(data, dict) else None
        if not isinstance(items, list):
            raise InvalidAnswer('expected an object with a "decisions" list')
        decisions: list[Decision] = []
        decided: set[int] = set()
        targeted: set[int] = set()
        for n, item in enumerate(items):
            if not isinstance(item, dict):
                raise InvalidAnswer(f"decisions[{n}] is not an object")
            fact_no = _as_int(item.get("fact"))
            if fact_no is None or not 0 <= fact_no < len(facts):
                raise InvalidAnswer(f"decisions[{n}].fact must be 0 to {len(facts) - 1}")
            event_name = str(item.get("event", "")).upper()
            if event_name not in {"ADD", "UPDATE", "DELETE", "NONE"}:
                raise InvalidAnswer(f"decisions[{n}].event must be ADD, UPDATE, DELETE or NONE")
            event = Event(event_name)
            fact = facts[fact_no]
            key = _as_int(item.get("id"))
            target = known.get(key) if key is not None else None
            if event in (Event.UPDATE, Event.DELETE):
                if target is None:
                    raise InvalidAnswer(
                        f"decisions[{n}] is {event_name} but id {item.get('id')!r} is not one of "
                        f"the existing ids {sorted(known)}"
                    )
                if target.key in targeted:
                    raise InvalidAnswer(f"existing memory {target.key} is changed twice")
                targeted.add(target.key)
            text = item.get("text")
            if event == Event.UPDATE and (not isinstance(text, str) or not text.strip()):
                raise InvalidAnswer(f"decisions[{n}] is UPDATE without the merged text")
            if event != Event.UPDATE or not isinstance(text, str) or not text.strip():
                text = fact.text  # ADD keeps the fact as extracted; NONE/DELETE name it
            text = text.strip()
            if len(text) > self.limits.max_text_chars:
                raise InvalidAnswer(f"decisions[{n}].text is too long")
            reason = item.get("reason")
            decisions.append(
                Decision(
                    fact.index,
                    event,
                    text,
                    target if event != Event.ADD else None,
                    reason if isinstance(reason, str) else "",
                )
            )
            decided.add(fact_no)
        # A fact the model did not decide on is added: a duplicate can be merged
        # later, a dropped fact cannot be recovered.
        for n, fact in enumerate(facts):
            if n not in decided:
                decisions.append(Decision(fact.index, Event.ADD, fact.text, None, "undecided"))
        return decisions


def _as_int(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str) and value.strip().isdigit():
        return int(value.strip())
    return None
