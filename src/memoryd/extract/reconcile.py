"""Reconciliation: each new fact against the similar memories already stored.

The outcome per fact is mem0's event vocabulary: ADD (new), UPDATE (replaces
an existing memory's text; the old text stays in history), DELETE (an
existing memory is no longer true; restorable), NONE (already known).

Two reconcilers, one interface:

* :class:`LLMReconciler` shows the model the candidates under small integer
  ids (0, 1, 2, ...), never UUIDs: models copy short numbers reliably and
  long ids badly, and a made-up id is detected instead of written.
* :class:`ThresholdReconciler` decides offline, with the words
  (:func:`memoryd.extract.claims.compare`) of each memory at least
  ``supersede_similarity`` (0.35) similar to the fact:

  - the memory already says it (a paraphrase, or a fact it contains): NONE;
  - same subject (qualifiers such as staging / production included) and
    attribute, a new value: UPDATE, which :meth:`memoryd.core.Memory.add`
    writes as a *supersession*: the new fact is a new memory, the old one is
    kept in state ``superseded``, linked both ways and closed
    (``valid_until``);
  - anything else: ADD. Distinct facts about similar things are never merged.

  It never emits DELETE: telling "no longer true" from "related" needs
  language understanding, and a wrong DELETE hides a memory.

With an LLM, its UPDATE is written the same way (a supersession), so both
paths keep the old value, closed, in history.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from memoryd.extract.ask import InvalidAnswer, ask_json
from memoryd.extract.claims import Verdict, compare, inner_claims, linked, unlike
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
    # the same fact in other words, said with it (metadata ``said_also``: "Noted, the
    # backfill window is 31 days." beside "Backfills may reprocess at most 31 days")
    wordings: tuple[str, ...] = ()
    # the older values of its subject and attribute: the superseded facts at the start of
    # its chain of changes that were found close to the new fact. A change may name the
    # attribute only where an older value did ("The new car is a Kia Niro." after "Sold
    # the Toyota Corolla, we bought a Honda Civic", which replaced "Noted, your car is a
    # Toyota Corolla.")
    replaced: tuple[str, ...] = ()


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
    # an UPDATE's other memories holding an older value of the same subject and attribute
    # (copies written before the change was recognised): superseded by the same fact
    also: list[Known] = field(default_factory=list)
    twin_of: int | None = None  # NONE: the fact of this input it says again, in other words


class Reconciler(Protocol):
    def decide(self, facts: list[NewFact]) -> list[Decision]: ...


# -- offline ---------------------------------------------------------------------------------
class ThresholdReconciler:
    def __init__(self, settings: ExtractSettings) -> None:
        self.settings = settings

    def decide(self, facts: list[NewFact]) -> list[Decision]:
        s = self.settings
        decisions: list[Decision] = []
        # ADDs of this batch, so a later duplicate in the same input is NONE
        added: list[NewFact] = []
        first_said: dict[int, Decision] = {}  # an ADD's decision, by its fact's index
        updated: set[str] = set()
        for fact in facts:
            twin = next(
                (
                    a
                    for a in added
                    if compare(fact.text, a.text, float(a.vector @ fact.vector), s.none_similarity)[
                        0
                    ]
                    == Verdict.SAME
                ),
                None,
            )
            same, newer = self._against_known(fact, updated)
            if twin is not None:
                # one fact said twice in one input ("Kafka events retention is 48 hours
                # from today." / "Got it, events retention is 48 hours."): one memory, and
                # if this wording shows it replaces a known value, the memory added does
                first = first_said[twin.index]
                if same is None and newer and first.event == Event.ADD:
                    updated.update(k.id for k, _ in newer)
                    (target, why), others = newer[0], [k for k, _ in newer[1:]]
                    first.event, first.target, first.also = Event.UPDATE, target, others
                    first.reason = f"{why} (as fact {fact.index} says it)"
                decisions.append(
                    Decision(
                        fact.index,
                        Event.NONE,
                        fact.text,
                        None,
                        f"same as fact {twin.index}",
                        twin_of=twin.index,
                    )
                )
                continue
            if same is not None:
                decisions.append(Decision(fact.index, Event.NONE, fact.text, same[0], same[1]))
            elif newer:
                updated.update(k.id for k, _ in newer)
                (target, why), others = newer[0], [k for k, _ in newer[1:]]
                decisions.append(
                    Decision(fact.index, Event.UPDATE, fact.text, target, why, also=others)
                )
            else:
                decision = Decision(fact.index, Event.ADD, fact.text, None, "new")
                decisions.append(decision)
                first_said[fact.index] = decision
                added.append(fact)
        return decisions

    def _against_known(
        self, fact: NewFact, updated: set[str]
    ) -> tuple[tuple[Known, str] | None, list[tuple[Known, str]]]:
        """The known memory ``fact`` already says (with why), else those it gives a new
        value (best first; none already updated in this input). A memory is compared in
        each of its wordings."""
        s = self.settings
        newer: list[tuple[Known, str]] = []
        for known, sim in fact.similar:
            close = sim >= s.supersede_similarity
            if not close and sim < s.linked_similarity and not known.replaced:
                continue
            verdicts = [
                compare(fact.text, said, sim, s.none_similarity)
                for said in (known.text, *known.wordings)
                # far in meaning: only a change of an attribute both name, or of the value
                # the fact names as replaced
                if close or linked(fact.text, said)
            ]
            for verdict, why in verdicts:
                if verdict == Verdict.SAME:
                    return (known, f"{why}; similarity {sim:.2f}"), []
            # a claim made within a sentence ("I told Leo, who owns the ingestion pipelines,
            # ...") is given a new value like any other, never taken as the fact said again,
            # and only when the whole sentences may be about one thing (a clause without
            # the ticket id its sentence names is not about another ticket)
            within = _within(fact.text, known.text) if unlike(fact.text, known.text) is None else []
            verdicts += [
                (verdict, f"{why} (said within: {a!r} / {b!r})")
                for a, b in within
                if close or linked(a, b)
                for verdict, why in [compare(a, b, sim, s.none_similarity)]
                if verdict == Verdict.SUPERSEDES
            ]
            changed = [why for verdict, why in verdicts if verdict == Verdict.SUPERSEDES]
            if not changed and known.replaced:
                changed = _past_changed(fact.text, known, s.none_similarity)
            if changed and known.id not in updated:
                newer.append((known, f"{changed[0]}; similarity {sim:.2f}"))
        return None, newer


def _past_changed(fact: str, known: Known, same_at: float) -> list[str]:
    """Why ``fact`` gives a new value to the attribute that ``known`` holds the current
    value of, when only an older value of the chain names that attribute: ``fact``
    supersedes one of ``known.replaced`` and the words do not tell ``fact`` and ``known``
    apart (another environment, attribute, id or kind of value). Repeating an older value
    is not a change: that is the history's, not this rule's."""
    if unlike(fact, known.text) is not None:
        return []
    for older in known.replaced:
        verdict, why = compare(fact, older, 0.0, same_at)
        if verdict == Verdict.SUPERSEDES:
            return [f"{why}, of the value it replaced: {older!r}"]
    return []


def _within(new: str, old: str) -> list[tuple[str, str]]:
    """Pairs to compare besides ``new`` and ``old`` themselves: each with the claims the
    other makes within it (:func:`claims.inner_claims`)."""
    theirs, ours = inner_claims(old), inner_claims(new)
    return [(new, a) for a in theirs] + [(a, b) for a in ours for b in (old, *theirs)]


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
