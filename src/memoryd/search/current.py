"""Newer evidence first: of two hits that answer one question differently, the newer
one ranks first.

Supersession (:mod:`memoryd.extract.claims`) retires an old *fact* when a newer one
replaces it. The conversation turns and diary lines that said the old value stay, as
evidence of what was said, and a search for "which HTTP library does ingestion use?"
still finds "ingestion makes its HTTP calls with aiohttp" from March as readily as
"the ingestion service now uses httpx" from April, and the offline comparison misses
rewordings ("Kenji takes over the pager" / "Omar is on call this week") that a search
hit shows side by side. A user asking wants what is true now first.

So, among the first ``newer_first_window`` (10) hits a search returns, a hit moves up
above an older one when

* it is newer by at least ``newer_first_gap_hours`` (what was said in one exchange
  keeps its order),
* the two are close in meaning (cosine of their stored vectors at least
  ``newer_first_similarity``) and close in relevance to the query (the older one's
  score is at most ``newer_first_margin`` higher, unless the newer one names the older
  one's value as what it replaces: "moved from Redshift to Snowflake"),
* the words do not tell them apart as different facts (:func:`claims.unlike`: another
  environment, attribute or kind of value), every name the query asks about that the
  older one mentions is in the newer one too ("Team Atlas" is not "Team Orion"),
* the newer one says every word of the query that the older one says ("who owns the
  search service?" does not put "Ravi owns the billing service" above "Ravi owns the
  search service"), or announces a change ("... is Kenji now", "took over", "switched")
  and says one of them at least ("We changed the events topic retention to 96 hours"
  does not pass "the backfill window is 11 days" for "backfill window"); words
  are compared as the keyword index stems them ("paged" says "page"), and two words side
  by side say what they say written as one ("times out" says "timeout", "set up"
  "setup"),
* the newer one states rather than asks or chats (a question, a request such as "Send
  me today's report" or "Plan dinners for this week." (:func:`asks_for`), an
  acknowledgement: :func:`~memoryd.extract.noise.is_chitchat`), and
* it does not merely repeat the value an older change set ("Here are five pescatarian
  dinners for the week." after "Actually I'm pescatarian now, not vegetarian anymore.").

An older hit that is a conversation turn or diary line whose fact the fact store has
since superseded (``Evidence.retired``: a superseded fact cites its lines) is known to
be out of date: a newer hit close in meaning passes it whatever the scores, the names
and the words ("It was posted to #data-alerts, the alerts channel" passes "Pipeline alerts go to the
#pipeline-alerts Slack channel" once "We moved pipeline alerts to #data-alerts" retired
that fact); the newer one must still state, and not be another fact by its words.

The one exception to "only the order": a retired turn among the first ten whose fact's
successor is known gets that successor (or the turn that said it) placed above it, scored
as the turn at the successor's own age, by
:meth:`Memory._current_above <memoryd.core.Memory._current_above>`, found or not
("who should I page for an alert?" matches "Noted, Omar is the platform on-call; I'll
page Omar if an alert fires." and never "Ravi takes over the platform pager"), and no
newer hit passes it here (``Evidence.current``). Otherwise which memories come back is
never changed, and neither is which ten come first, whatever ``top_k``: only their
order. Reordering deeper (a newer hit pulled from place 20 into the
first ten of a top_k 25 search) cost evidence recall@10 on conversations, where a newer
turn like an older one is usually not an update (LoCoMo messages path 0.796 -> 0.730,
agent chats 0.851 -> 0.818; with the window both are unchanged by construction). The
moved hit takes the score of the one it passes, so scores stay in rank order for what
comes after (MMR, budgets, clients that sort). An ``as_of`` search asks about the past
and is left alone.

Before newer-first, :func:`asked_attribute_first` puts a hit that states what the query
asks for ("who is on call?": the on-call) above close-scored hits that state only another
attribute ("Kenji took over the Grafana SLO dashboards": an owner), within the same first
hits and by the same convention for scores.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from itertools import pairwise

import numpy as np

from memoryd.extract.claims import Claim, claim, claims_unlike, content, names_as_old
from memoryd.extract.noise import is_chitchat, without_speaker
from memoryd.models import SearchHit
from memoryd.search.text import STOPWORDS, words
from memoryd.store.keywords import document_stems
from memoryd.store.keywords import stems as stem_words


@dataclass(frozen=True)
class Evidence:
    """What the ordering needs of one hit besides its text and score."""

    when: float  # epoch seconds of when it was said (event_at, else created_at)
    asks: bool = False  # a question
    # a turn that says what a fact since superseded says: the fact was taken from its
    # lines, says it word for word, or keeps it as another wording (Memory.says_superseded)
    retired: bool = False
    # the current value of a retired hit, placed above it (Memory._current_above): known
    # to be what is true now, so no newer hit passes it
    current: bool = False


def _mentions(text: str, name: str) -> bool:
    return name in text.casefold()


@dataclass(frozen=True)
class _Said:
    """A hit's words, sorted once per search (pairs compare them many times)."""

    claim: Claim
    words: frozenset[str]  # see :func:`said_forms`, and the attributes its claim names
    # its words but those of the value it names as replaced (", not #etl-oncall" says
    # nothing about the ETL)
    anew: frozenset[str]


def _joined(stems: Sequence[str]) -> set[str]:
    return {a + b for a, b in pairwise(stems)}


def said_forms(text: str) -> frozenset[str]:
    """Every form in which ``text`` says a word: its words' stems, its content words as
    :func:`claims.content` normalises them ("postgres" is "postgresql"), and each two
    neighbouring stems written as one ("times out" -> "timeout")."""
    stems = document_stems(text)
    return frozenset(stems) | _joined(stems) | content(text)


def query_terms(query: str) -> list[frozenset[str]]:
    """The query's content words, each as the set of forms that say it: its stem, its
    normalised form, and its stem joined to a neighbour's ("times out" -> "timeout", so
    a text that says "timeout" says "times")."""
    tokens = words(query.casefold())
    stems = stem_words(tokens)
    terms: list[frozenset[str]] = []
    for k, token in enumerate(tokens):
        if token in STOPWORDS or (len(token) < 2 and not token.isdigit()):
            continue
        forms = {stems[k], *content(token)}
        if k > 0:
            forms.add(stems[k - 1] + stems[k])
        if k + 1 < len(stems):
            forms.add(stems[k] + stems[k + 1])
        terms.append(frozenset(forms))
    return terms


def _says_more(older: frozenset[str], newer: frozenset[str], terms: list[frozenset[str]]) -> bool:
    """Does the older hit say a query word (in any of its forms) the newer one does not?"""
    return any(forms & older and not forms & newer for forms in terms)


def _says_none(older: frozenset[str], newer: frozenset[str], terms: list[frozenset[str]]) -> bool:
    """Does the older hit say query words of which the newer one says none? (A change
    about something else: "We changed the events topic retention to 96 hours" does not
    pass "the backfill window is 11 days" for "backfill window".)"""
    asked = [forms for forms in terms if forms & older]
    return bool(asked) and not any(forms & newer for forms in asked)


def _about_another(new: _Said, old: _Said, terms: list[frozenset[str]]) -> bool:
    """Is the newer hit's change about another subject than the query words it leaves out?
    The query words the older hit says and the newer does not are all the older's subject,
    and the newer names a subject of its own that shares none of its words: "The ingestion
    service's aiohttp client has a 30 second pool timeout; I lowered it to 10." says no new
    "gateway timeout" for "gateway request timeout"."""
    missing = [forms for forms in terms if forms & old.words and not forms & new.anew]
    return (
        bool(missing)
        and bool(new.claim.subject)
        and new.claim.subject.isdisjoint(old.claim.subject)
        and all(forms & old.claim.subject for forms in missing)
    )


def _agrees(newer: Claim, older: Claim) -> bool:
    """Does the newer hit repeat the value an older change set, without a change of its
    own? ("Here are five pescatarian dinners for the week." after "Actually I'm pescatarian
    now, not vegetarian anymore.": nothing newer to tell, and the change says it.)"""
    return (
        older.changes
        and not newer.changes
        and bool(older.slot)
        and older.slot <= newer.words | newer.slot
        and not older.old & (newer.words | newer.slot)
    )


def newer_first(
    hits: Sequence[SearchHit],
    evidence: Sequence[Evidence],
    vectors: Callable[[], np.ndarray],
    query_names: set[str],
    query_words: list[frozenset[str]],
    *,
    similarity: float,
    margin: float,
    gap_hours: float,
    window: int = 10,
) -> list[SearchHit]:
    """``hits`` (best first) with newer evidence of the same thing moved above older,
    within the first ``window`` hits. ``query_words``: :func:`query_terms` of the query."""
    if len(hits) < 2:
        return list(hits)
    order = list(range(len(hits)))
    reach = min(len(hits), window)
    gap = gap_hours * 3600.0
    sims: np.ndarray | None = None
    moved_score = {n: hits[n].score for n in order}
    parsed: dict[int, _Said] = {}

    def said(n: int) -> _Said:
        if n not in parsed:
            c = claim(hits[n].text)  # "belongs to Nadia" says "owner"
            forms = said_forms(hits[n].text) | c.attributes
            gone = said_forms(" ".join(sorted(c.old))) if c.old else frozenset()
            parsed[n] = _Said(c, forms, forms - gone)
        return parsed[n]

    pos = 1
    while pos < reach:
        j = order[pos]
        target = None
        if not (evidence[j].asks or asks_for(hits[j].text) or is_chitchat(hits[j].text)):
            for place in range(pos):
                i = order[place]
                if evidence[i].current or evidence[j].when < evidence[i].when + gap:
                    continue
                older, newer = hits[i].text, hits[j].text
                retired = evidence[i].retired
                too_far = moved_score[i] - moved_score[j] > margin
                if too_far and not retired and not names_as_old(newer, older):
                    continue
                if sims is None:
                    v = vectors()
                    sims = v @ v.T
                if float(sims[i, j]) < similarity:
                    continue
                if not retired and any(
                    _mentions(older, q) and not _mentions(newer, q) for q in query_names
                ):
                    continue
                new, old = said(j), said(i)
                if claims_unlike(new.claim, old.claim) is not None:
                    continue
                if not retired and _agrees(new.claim, old.claim):
                    continue
                if not retired and (
                    _says_none(old.words, new.anew, query_words)
                    or _about_another(new, old, query_words)
                    if new.claim.changes
                    else _says_more(old.words, new.words, query_words)
                ):
                    continue
                target = place
                break
        if target is None:
            pos += 1
            continue
        order.pop(pos)
        order.insert(target, j)
        moved_score[j] = max(moved_score[j], moved_score[order[target + 1]])
        pos += 1
    out: list[SearchHit] = []
    for n in order:
        hit = hits[n]
        score = moved_score[n]
        out.append(hit if score == hit.score else hit.model_copy(update={"score": score}))
    return out


def asked_attribute_first(
    hits: Sequence[SearchHit],
    asked: frozenset[str],
    *,
    margin: float,
    window: int = 10,
) -> list[SearchHit]:
    """``hits`` (best first) with each hit that states an attribute the query asks about
    moved above the hits right before it that state only other attributes, when it scores
    at most ``margin`` below them; within the first ``window`` hits.

    "who is on call for the platform team?" asks for the on-call (``asked``, the
    attributes :func:`claims.claim` finds in the query): "Understood, Bruno is now the
    platform on-call engineer." answers it and "Kenji took over the Grafana SLO dashboards
    from the platform team." names an owner, however newer it is and however many of the
    query's words it says. A hit that names no attribute is neither, and stops the move:
    only a hit known to answer another question is passed. The moved hit takes the score
    of the first one it passes, so scores stay in rank order."""
    if not asked or len(hits) < 2 or margin <= 0:
        return list(hits)
    named = [claim(h.text).attributes for h in hits[:window]]
    return _moved_above(
        hits,
        [bool(a & asked) for a in named],
        [bool(a) and not a & asked for a in named],
        margin,
    )


def _moved_above(
    hits: Sequence[SearchHit], moves: list[bool], passed: list[bool], margin: float
) -> list[SearchHit]:
    """``hits`` with each of the first ``len(moves)`` that ``moves`` moved above the hits
    right before it that it may pass (``passed``) and that score at most ``margin`` more.
    The moved hit takes the score of the first one it passes, so scores stay in rank
    order."""
    out = list(hits)
    moves, passed = list(moves), list(passed)
    for pos in range(1, len(moves)):
        if not moves[pos]:
            continue
        to = pos
        while to > 0 and passed[to - 1] and out[to - 1].score - out[pos].score <= margin:
            to -= 1
        if to == pos:
            continue
        hit = out.pop(pos)
        moves.insert(to, moves.pop(pos))
        passed.insert(to, passed.pop(pos))
        score = max(hit.score, out[to].score)
        out.insert(to, hit if score == hit.score else hit.model_copy(update={"score": score}))
    return out


#: Verbs a request to the assistant starts with ("Remind me ...", "Book the car's MOT ...").
_ASKING = re.compile(
    # one-off errands, not verbs that also start standing instructions ("Make sure ...",
    # "Check the CI before merging", "Use pnpm")
    r"^(?:please |ok,? |so,? )?(?:remind|book|plan|find|send|draft|order|schedule|call|email"
    r"|cancel|buy|look|tell|show|list|summari[sz]e|review|fix|investigate|prepare|arrange"
    r"|fetch|pull|ping|renew|can you|could you|would you|will you)\b",
    re.IGNORECASE,
)
#: ... unless it sets a standing rule ("Book easyJet from now on")
_STANDING = re.compile(
    r"\b(?:always|never|from now on|going forward|in future|every ?time|whenever|by default"
    r"|prefer\w*|instead of|rather than)\b",
    re.IGNORECASE,
)


def asks_for(text: str) -> bool:
    """Is ``text`` a question or a request ("Remind me what to pack for the gym.", "Book
    the car's MOT this week.") that states no value of its own and sets no standing rule
    ("Book easyJet from now on" does)?"""
    body = without_speaker(text).strip()
    if not (body.endswith("?") or _ASKING.match(body)) or "\n" in body:
        return False  # most hits: no question, no request (and no claim to parse)
    said = claim(body)
    # a ticket's key names what the request is about, not a value it sets ("Draft the
    # release notes for ticket PAY-465.")
    return not (said.values - said.names or _STANDING.search(body))


def stating_first(
    hits: Sequence[SearchHit],
    *,
    margin: float,
    window: int = 10,
) -> list[SearchHit]:
    """``hits`` (best first) with each hit that is not a question, a request
    (:func:`asks_for`) or chit-chat (:func:`~memoryd.extract.noise.is_chitchat`) moved
    above such hits right before it, when it scores at most ``margin`` below them; within
    the first ``window`` hits. "gym class time" wants "They moved spin to 7:30 pm" before
    "Remind me what to pack for the gym.", "swimming day" the lesson's day before "Such a
    sunny day, I might work from the park later."; what is passed stays found, one place
    lower. The moved hit takes the score of the first one it passes."""
    if len(hits) < 2 or margin <= 0:
        return list(hits)
    asking = [asks_for(h.text) or is_chitchat(h.text) for h in hits[:window]]
    return _moved_above(hits, [not a for a in asking], asking, margin)
