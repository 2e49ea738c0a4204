"""Tasks end: which open task a statement of finished work closes, offline.

A task ("rotate the AWS access keys by Friday", "review PR #482 tomorrow") is
closed by the statement that finishes it ("Rotated the AWS keys", "PR #482
merged", "done with the review"). Nothing needs an LLM: a sentence is a
*completion* when it says something was done (a past-tense verb or a done-phrase,
not negated, no future or to-do marker), and it *finishes* a task when

* they name the same thing: an identifier both share (``#482``, ``v2.3``, a
  path, a number); two different identifiers and no shared one (``#482`` vs
  ``#483``) never match; or
* the completion's verb is the task's verb (``rotated`` / ``rotate``: the same
  stem) and at least one object word is shared (``keys``); or
* a done-phrase names what was done ("done with the review", "finished the
  migration") and every word of it is in the task.

Word rules, so the same statement always closes the same tasks, and the match
says why (:attr:`Match.why`). The pipelines mark a closed task
(``metadata.closed_at`` / ``closed_by``, then archived): :func:`is_closed`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from memoryd.extract.classify import DAY, STARTS, fact_class, markers

TASK_CATEGORY = "task"
#: The digest's category for short-term memory: a tier, not a topic, so the text decides.
SHORT_TERM = "short_term"

_WORD = re.compile(r"#?[\w][\w.#/-]*", re.UNICODE)
_SENTENCE = re.compile(r"(?<=[.!?;])\s+|\n+")
#: ``user: ...``, ``**Ada**: ...``: one word before the colon (two are a sentence's own).
_SPEAKER = re.compile(r"^\s*(?:[-*]\s*)?(?:\*\*)?[\w.-]{1,40}(?:\*\*)?(?: \(\w{1,20}\))?:\s+")
#: Not done: a negation or a still-open marker anywhere in the sentence.
_NOT_DONE = re.compile(
    r"\b(?:not|never|no longer|haven't|hasn't|hadn't|didn't|don't|doesn't|isn't|aren't|"
    r"wasn't|weren't|won't|can't|cannot|couldn't|yet|still|will|shall|going to|need(?:s|ed)? to|"
    r"ha(?:ve|s) to|should|must|remind|todo|to-do|tomorrow|later today|plan(?:s|ning)? to|"
    r"want(?:s)? to|let's|please|could you|can you|would you|if)\b|\w'll\b|\?",
    re.IGNORECASE,
)
#: Phrases that say work is finished; group 1, when present, is what was finished.
_DONE_PHRASE = re.compile(
    r"\b(?:(?:i'?m|we'?re|i am|we are)\s+)?(?:done with|finished(?: with)?|completed|"
    r"wrapped up|took care of|taken care of|closed out|ticked off|checked off)\s+(.+)$"
    r"|^(.+?)\s+(?:is|are|was|were|has been|have been)\s+(?:done|finished|complete|completed|"
    r"merged|closed|resolved|sorted|shipped|deployed|fixed|rotated|sent|submitted)\b"
    r"|\b(?:✅|✔|\[x\])\s*(.+)$"
    r"|^(?:all )?(?:done|finished)\b[,.!:]*\s*(.*)$",
    re.IGNORECASE,
)
#: Past tenses that are not -ed.
_IRREGULAR = {
    "done": "do",
    "did": "do",
    "sent": "send",
    "wrote": "write",
    "written": "write",
    "built": "build",
    "made": "make",
    "paid": "pay",
    "set": "set",
    "put": "put",
    "ran": "run",
    "rerun": "run",
    "shut": "shut",
    "cut": "cut",
    "spoke": "speak",
    "spoken": "speak",
    "met": "meet",
    "bought": "buy",
    "sold": "sell",
    "told": "tell",
    "gave": "give",
    "given": "give",
    "took": "take",
    "taken": "take",
    "found": "find",
    "upgraded": "upgrade",
}
#: -ed words that report trouble or a state, not finished work.
_NOT_WORK = frozenset(
    """failed crashed broke broken timed errored stuck blocked delayed postponed cancelled
    canceled skipped missed forgot forgotten need needed wanted noted named based
    related used supposed interested excited tired worried surprised scheduled planned
    expected asked""".split()  # noqa: SIM905
)
#: Words that say when or how urgent, not what: never the shared object of a match ("ll" and
#: "ve" are what is left of "I'll" and "we've").
_NOT_OBJECT = frozenset(
    """the a an and or of to for on in at by with from this that these those it its our my
    your their his her we i you they he she me us them is are was were be been being has
    have had do does did done today tomorrow yesterday tonight morning afternoon evening
    week weekend month monday tuesday wednesday thursday friday saturday sunday eod end
    next last soon now later please need needs needed must should will remind reminder
    todo to-do task tasks finally just all also already up out off over again
    finished completed complete wrapped took taken care closed ticked checked
    confirmed great thanks thank good ok okay sure noted yes cool nice perfect about
    ll ve re""".split()  # noqa: SIM905
)


@dataclass(frozen=True)
class Completion:
    """A sentence that says work was finished, cut into what a task is matched on."""

    text: str
    verbs: frozenset[str]  # stems of its past-tense verbs
    words: frozenset[str]  # stems of its object words
    ids: frozenset[str]  # identifiers: numbers, #refs, versions, paths
    done_object: frozenset[str]  # stems of what a done-phrase names ("the review")


@dataclass(frozen=True)
class Match:
    task_id: str
    score: float
    why: str


def stem(word: str) -> str:
    """A crude, deterministic stem: ``rotated``/``rotate``/``rotating`` -> ``rotat``."""
    w = word.lower().strip(".,;:!?()[]{}\"'`")
    w = _IRREGULAR.get(w, w)
    for suffix in ("ion", "ing", "ied", "ed", "es", "s", "e"):
        if w.endswith(suffix) and len(w) - len(suffix) >= 3:
            w = w[: -len(suffix)] + ("y" if suffix == "ied" else "")
            break
    if len(w) > 3 and w[-1] == w[-2] and w[-1] not in "aeiouls":
        w = w[:-1]  # merg(g)ed, plan(n)ed
    return w


_NOT_OBJECT_STEMS = frozenset(stem(w) for w in _NOT_OBJECT)


def _tokens(text: str) -> list[str]:
    return [t.strip(".,;:!?()[]{}\"'`") for t in _WORD.findall(text)]


def identifiers(text: str) -> set[str]:
    """Tokens that name one thing: with a digit, or a ``#ref``, a path, a dotted name
    (``api.orion.dev``) or an ``under_score``."""
    out: set[str] = set()
    for t in _tokens(text):
        t = t.lower().rstrip(".-/")
        if len(t) < 2:
            continue
        dotted = "." in t.strip(".")
        if any(c.isdigit() for c in t) or t.startswith("#") or "/" in t or "_" in t or dotted:
            out.add(t.lstrip("#") if t.startswith("#") else t)
    return out


def object_words(text: str) -> set[str]:
    """Stems of the words that say what the work is about."""
    out: set[str] = set()
    for t in _tokens(text):
        low = t.lower()
        if len(low) < 2 or low in _NOT_OBJECT or any(c.isdigit() for c in low):
            continue
        out.add(stem(low))
    return out - _NOT_OBJECT_STEMS


def _past_verbs(sentence: str) -> set[str]:
    out: set[str] = set()
    for t in _tokens(sentence):
        low = t.lower()
        if low in _NOT_WORK:
            continue
        if low in _IRREGULAR or (low.endswith("ed") and len(low) > 4):
            out.add(stem(low))
    return out


def sentences(text: str) -> list[str]:
    """The sentences of ``text``, each without a ``speaker:`` prefix."""
    out = []
    for part in _SENTENCE.split(text):
        part = _SPEAKER.sub("", part.strip(), count=1).strip()
        if part:
            out.append(part)
    return out


def completion(sentence: str) -> Completion | None:
    """``sentence`` as a statement of finished work, or None when it is not one."""
    s = sentence.strip().rstrip(".!")
    if not s or _NOT_DONE.search(s) or fact_class(s) == "tasks":
        return None
    verbs = _past_verbs(s)
    phrase = _DONE_PHRASE.search(s)
    done_object: set[str] = set()
    if phrase:
        named = next((g for g in phrase.groups() if g), "")
        done_object = object_words(re.split(r"[:;,(]|\s-\s", named, maxsplit=1)[0])
    if not verbs and not phrase:
        return None
    return Completion(
        text=sentence.strip(),
        verbs=frozenset(verbs),
        words=frozenset(object_words(s) - verbs),
        ids=frozenset(identifiers(s)),
        done_object=frozenset(done_object),
    )


def completions(text: str) -> list[Completion]:
    """Every statement of finished work in ``text`` (a diary turn, a fact, a message)."""
    return [c for c in (completion(s) for s in sentences(text)) if c is not None]


def finishes(done: Completion, task_text: str) -> tuple[float, str] | None:
    """How well ``done`` finishes the task ``task_text`` (score, why), or None."""
    task_ids = identifiers(task_text)
    task_words = object_words(task_text)
    shared_ids = done.ids & task_ids
    if done.ids and task_ids and not shared_ids:
        return None  # two different things: #482 is not #483
    if shared_ids:
        return 2.0 + len(shared_ids), f"same {', '.join(sorted(shared_ids))}"
    shared_words = done.words & task_words
    verb = done.verbs & task_words
    if verb and shared_words - verb:
        objects = sorted(shared_words - verb)
        return 1.0 + len(objects) / max(1, len(task_words)), (
            f"same verb {sorted(verb)[0]!r} and {', '.join(repr(w) for w in objects)}"
        )
    if done.done_object and done.done_object <= task_words:
        return 1.0, f"done with {', '.join(sorted(done.done_object))}"
    return None


SAME_TASK = 0.5  # object-word overlap (Jaccard) at which two task texts say one task


def same_task(a: str, b: str) -> bool:
    """Two wordings of one task ("Rotate the AWS keys by Friday" and "I'll rotate the AWS
    keys before Friday"): the same identifiers, and most object words shared."""
    if identifiers(a) != identifiers(b):
        return False
    wa, wb = object_words(a), object_words(b)
    return bool(wa and wb) and len(wa & wb) / len(wa | wb) >= SAME_TASK


def match_tasks(text: str, tasks: list[tuple[str, str]]) -> list[Match]:
    """The open tasks (``(id, text)``) that the statements in ``text`` finish.

    Per statement: every task that shares an identifier with it ("PR #482 merged"
    closes every task about #482); otherwise the best match and the other matches
    that are wordings of the same task (the user's "Rotate the keys by Friday" and
    the assistant's "I'll rotate the keys"). When the best matches are different
    tasks ("done with the review" with two reviews open), the statement is
    ambiguous and closes nothing. Each task once, best first.
    """
    said = dict(tasks)
    best: dict[str, Match] = {}
    for done in completions(text):
        scored = []
        for task_id, task_text in tasks:
            found = finishes(done, task_text)
            if found is not None:
                scored.append((found[0], task_id, found[1]))
        if not scored:
            continue
        scored.sort(key=lambda t: (-t[0], t[1]))
        top, lead = scored[0][0], scored[0][1]
        if top >= 2.0:  # an identifier names the task(s)
            winners = [t for t in scored if t[0] >= 2.0]
        else:
            rivals = [t for t in scored if t[0] == top and not same_task(said[t[1]], said[lead])]
            if rivals:
                continue  # which of them? the statement does not say
            winners = [t for t in scored if same_task(said[t[1]], said[lead])]
        for score, task_id, why in winners:
            if task_id not in best or best[task_id].score < score:
                best[task_id] = Match(task_id, score, f"{done.text!r}: {why}")
    return sorted(best.values(), key=lambda m: (-m.score, m.task_id))


def is_task(category: str | None, text: str) -> bool:
    """A to-do rather than a fact: stored as a task, or worded as one (uncategorised, or
    short-term memory, whose category names its tier)."""
    if category == TASK_CATEGORY:
        return True
    return category in (None, SHORT_TERM) and fact_class(text) == "tasks"


#: "I'll renew the certificate", "Will do": a promise is work still to do.
_PROMISE = re.compile(r"\b(?:I'll|I will|we'll|we will|will do|I'm going to|I am going to)\b", re.I)
#: A deadline after an imperative ("Renew the TLS certificate before the 20th"). "by" names
#: a time ("by Friday", "by the 20th"), not who did it ("is bound by the integration suite").
_DEADLINE = re.compile(
    rf"\b(?:(?:before|by|until) (?:(?:next|this|the|my|our) )?(?:{DAY})|"
    r"this week|next week|tomorrow|tonight|today|eod|end of)",
    re.I,
)
#: ... or before an event ("Fix the flaky test before the release", "Scan the tables for PII
#: before the audit"): one event, not a standing rule ("Rotate the keys before every audit",
#: "Always rebase before the merge") or an action ("before merging")
_BEFORE_EVENT = re.compile(r"\bbefore (?:the|our|my|this|next) [a-z]+\b(?<!ing)", re.I)
#: a subject's verb second ("Deploys are frozen before the release"): not an imperative
_STATED = frozenset("is are was were has have had will can should must may might".split())  # noqa: SIM905
_STANDING = re.compile(
    r"\b(?:always|never|every|each|whenever|from now on|going forward|by default"
    r"|in (?:the )?future)\b",
    re.I,
)
_NOT_IMPERATIVE = frozenset(
    """the a an this that these those it its we i you they he she our my your their there
    here all every each some no on in at for from after before when if ok okay noted sure
    yes great thanks got with by during under over of as once while since until""".split()  # noqa: SIM905
)


def wants_doing(category: str | None, text: str) -> bool:
    """Work still to do, however it was stored: a task (:func:`is_task`), any text with a
    to-do marker, a promise ("I'll renew the certificate"), or an imperative with a
    deadline ("Upgrade the staging cluster to 1.31 this week") or before an event ("Fix the
    flaky test before the release"). Facts classed by their
    topic (a task that names AWS is stored as ``system``) are found this way too."""
    if is_task(category, text) or markers(text)["tasks"] or _PROMISE.search(text):
        return True
    tokens = [t.lower() for t in _tokens(text)[:2]]
    if not tokens or tokens[0] in _NOT_IMPERATIVE:
        return False
    rest = STARTS.sub(" ", text)
    if _DEADLINE.search(rest):
        return True
    if tokens[1:] and tokens[1] in _STATED:
        return False
    return bool(_BEFORE_EVENT.search(rest)) and not _STANDING.search(text)


def is_closed(metadata: dict[str, Any]) -> bool:
    """A task a statement of finished work closed (``metadata.closed_at``)."""
    return bool(metadata.get("closed_at"))
