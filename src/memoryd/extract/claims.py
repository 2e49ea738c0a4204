"""Same subject, same attribute, new value? The offline test for supersession.

Without an LLM, :class:`~memoryd.extract.reconcile.ThresholdReconciler` asks
:func:`compare` of a new fact and each similar memory. Cosine similarity says
two facts are *about* similar things; it cannot tell "staging moved to port
6432" (a change of the staging port) from "production PostgreSQL port 5432"
(another database). The words can:

* **qualifiers** (``staging`` / ``production``, ``EU`` / ``US``, ``dev``): a
  fact about another environment or region is another subject: ADD;
* **attributes** (port, version, timeout, replicas, owner, ...): two different
  attributes of one subject are two facts: ADD;
* the other **content words** split in two places by the fact's relation verb
  ("The ingestion service | uses | aiohttp"; "Ravi | owns | the search service"
  reversed): words that differ on the subject side are another subject (ADD),
  words that differ on the value side are a new value (UPDATE). For relations
  that hold many values at once (uses, prefers, likes) a new value is a change
  only when the fact says so ("now", "switched", "instead", "over", "from X");
* **values** (numbers, versions, times, percentages, ids like prod-eu-2) that
  differ, of the same kind, with the subject and attribute unchanged: UPDATE; an id
  on the subject side names the subject ("PAY-100 is fixed", "PR #482 was merged"),
  so two ids there are two subjects: ADD;
* nothing differs (a paraphrase, or a fact the memory already says): NONE.

Words of everyday life need four more things: a name of several capitalised words is one
value ("Virgin Media", "Dr. Okoye"); with no relation word, the verb after a pronoun is the
relation ("I bank with Barclays": the speaker is the subject, so a fact that names
Barclays as replaced changes it); a clause that says a value ended ("No more Tesco, ...",
"Dr. Okoye retired, so ...") names the old value; and a sentence of several clauses that
announces a change is compared clause by clause ("The council changed collection, bins
go out on Thursday night now.").

Measured on ``tests/data/supersede_pairs.json`` (labelled pairs) by
``tests/test_supersede.py``; the figures are in the README ("How memoryd
decides what is current").
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from enum import StrEnum
from functools import lru_cache

import Stemmer


class Verdict(StrEnum):
    SAME = "same"  # the memory already says it (NONE)
    SUPERSEDES = "supersedes"  # same subject and attribute, a new value (UPDATE)
    DISTINCT = "distinct"  # another fact (ADD)


_STEMMER = Stemmer.Stemmer("english")


@lru_cache(maxsize=65536)
def _stem(word: str) -> str:
    """``word`` as the keyword index stems it ("swims", "swimming": "swim"); values and
    names are kept whole."""
    return word if not word.isalpha() or len(word) < 4 else _STEMMER.stemWord(word)


_RAW = re.compile(r"[\w#][\w.:/@#%+-]*[\w%]|[\w#]", re.UNICODE)
_STOP = frozenset(
    """a an the and or but if then so of to in on at by for with from into onto over under
    about as it its this that these those there here i me my we our you your he him his
    she her they them their what which who whom when where why how all any both each few
    more most other some such no nor not only own same than too very can will just should
    also still again up down out off via per now today currently instead anymore longer
    please do does did be been being am have having current new latest active ll re ve
    morning afternoon evening tonight yesterday isn doesn don aren won wasn weren didn hasn
    haven actually""".split()  # noqa: SIM905
)
#: Verbs that say a value changed; the new fact carrying one is a change, not an addition.
_CHANGE = frozenset(
    """moved move switched switch changed change migrated migrate upgraded upgrade downgraded
    raised lowered increased decreased reduced bumped scaled replaced became become updated
    rotated renamed extended extend shortened shorten doubled halved""".split()  # noqa: SIM905
)
#: Relation verbs: the words after one are the value ("X is on port 5432").
_RELATION = frozenset(
    """is are was were runs run running listens listen lives live sits hosted deployed located
    set starts start begins ends gets get has have had go goes built owned maintained led
    managed called named costs takes points lands serves post posts posted belong belongs
    belonged""".split()  # noqa: SIM905
)
#: Relations that hold many values at once: a new value is a change only when said to be.
_MULTI = frozenset(
    """uses use using prefers prefer preferred likes like loves love enjoys enjoy hates
    hate supports support includes include wants want""".split()  # noqa: SIM905
)
_BE = frozenset(["is", "was", "are"])
_ARTICLES = frozenset(["the", "a", "an"])
#: Attributes a person holds: "X is the owner" names X as the value.
_ROLES = frozenset(["owner", "manager", "lead", "on-call"])
#: Relations whose value comes first ("Ravi owns the search service").
_INVERSE = frozenset(["owns", "own", "maintains", "maintain", "leads", "lead", "manages", "manage"])
#: Words that say an old value is being replaced ("now", "instead", "over", "not").
_SIGNAL = frozenset(["now", "instead", "anymore", "longer", "over", "not", "no"])
_QUALIFIERS = frozenset(
    """staging production dev development test testing qa uat local sandbox preview demo
    eu emea apac asia europe americas primary secondary""".split()  # noqa: SIM905
)
_UPPER_QUALIFIERS = frozenset({"US", "UK"})  # only when written in capitals (not "us")
_ATTRIBUTES = frozenset(
    """port version owner manager lead timeout ttl limit replica broker node partition row
    connection memory size disk cpu region zone branch host hostname url address endpoint
    theme language editor font timezone schedule deadline budget price quota retention
    interval threshold latency throughput rate password key token shard worker thread
    on-call""".split()  # noqa: SIM905
)
_UNITS = frozenset(
    """second seconds sec secs s minute minutes min mins hour hours h day days week weeks
    ms gb mb kb tb million thousand k m request requests rps qps percent utc pm""".split()  # noqa: SIM905
)
_SYNONYMS = {
    "db": "database",
    "prod": "production",
    "stage": "staging",
    "postgres": "postgresql",
    "pg": "postgresql",
    "k8s": "kubernetes",
    "repo": "repository",
    "config": "configuration",
    "svc": "service",
    "likes": "prefers",
    "pager": "on-call",
}
#: Verbs that name their attribute ("is owned by Ravi" is about the owner).
_VERB_ATTRIBUTE = {
    "owned": "owner",
    "owns": "owner",
    "own": "owner",
    "maintained": "owner",
    "maintains": "owner",
    "maintain": "owner",
    "managed": "manager",
    "manages": "manager",
    "manage": "manager",
    "belong": "owner",  # "the SLO dashboards belong to Nadia now"
    "belongs": "owner",
    "belonged": "owner",
    "led": "lead",
    "leads": "lead",
    "limited": "limit",  # "the build cache is limited to 10 GB"
    "capped": "limit",
}
#: Verbs that name their attribute when a word after them says so: "kept for 14 days" is a
#: retention (so is "keeps 72 hours", a duration right after), "expire after 30 minutes" a
#: timeout, "every 6 hours" an interval.
_RETAIN = ("keep", "keeps", "kept", "retain", "retains", "retained", "store", "stores", "stored")
_VERB_ATTRIBUTE_BEFORE = {
    **dict.fromkeys(_RETAIN, ("for", "retention")),
    **dict.fromkeys(("expire", "expires", "expired"), ("after", "timeout")),
}
#: Values that are a way of writing something: naming one names its format ("short prose
#: paragraphs", "numbered checklists", "bullet lists")
_FORMATS = frozenset(
    ["bullet", "checklist", "paragraph", "prose", "markdown", "json", "yaml", "csv", "html", "pdf"]
)
#: A generic word that names any of these: "the staging database" is "staging PostgreSQL".
_KINDS = {_stem("database"): frozenset({"postgresql", "mysql", "mariadb", "mongodb", "sqlite"})}


@dataclass
class Claim:
    """A fact's words, sorted into the parts :func:`compare` weighs."""

    qualifiers: set[str] = field(default_factory=set)
    attributes: set[str] = field(default_factory=set)
    values: set[str] = field(default_factory=set)
    words: set[str] = field(default_factory=set)  # other content words, stemmed ("swims": "swim")
    slot: set[str] = field(default_factory=set)  # the words on the value side of the relation
    purpose: set[str] = field(default_factory=set)  # "... for HTTP calls": what the value is for
    old: set[str] = field(default_factory=set)  # "from X": the value the fact replaces
    names: set[str] = field(default_factory=set)  # ids on the subject side ("PAY-100 is fixed")
    subject: set[str] = field(default_factory=set)  # the other words, on the subject side
    multi: bool = False  # its relation holds many values (uses, prefers)
    changes: bool = False  # it says a value changed (moved, now, instead, ...)
    # the habit or state a pronoun's verb names ("I drive a ...": "household:drive:a"), or ""
    verb: str = ""
    standing: bool = False  # an order from now on ("Book easyJet from now on")


def _norm(token: str) -> str:
    t = token.casefold().rstrip(".:,;")
    t = t.removesuffix("'s").removesuffix("’s")
    t = _SYNONYMS.get(t, t)
    if len(t) > 4 and t.endswith("s") and not t.endswith(("ss", "us", "is")) and t.isalpha():
        t = t[:-1]  # brokers -> broker, replicas -> replica
    return t


#: (no "may": it is a verb far more often than a month)
_DAYS = frozenset(
    """monday tuesday wednesday thursday friday saturday sunday january february march april
    june july august september october november december""".split()  # noqa: SIM905
)


def _is_value(token: str) -> bool:
    """Numbers, versions, ids (with a digit, or snake_case: "gold_tables", a dataset's or a
    table's name), names of more than one word ("Virgin Media", "Dr. Okoye": see
    :func:`_tokens`) and the names of days and months (a schedule's value)."""
    return (
        any(ch.isdigit() for ch in token)
        or "_" in token.strip("_")
        or " " in token
        or token in _DAYS
    )


def value_kind(token: str) -> str:
    """time, percent, version, number, name or id: two values are comparable when of one
    kind."""
    if re.fullmatch(r"\d{1,2}:\d{2}(?::\d{2})?", token) or token in _DAYS:
        return "time"
    if token.endswith("%"):
        return "percent"
    if re.fullmatch(r"v?\d+(?:\.\d+)+", token):
        return "version"
    if re.fullmatch(r"\d+(?:[.,]\d+)?[kmgt]?b?", token):
        return "number"
    if " " in token:
        return "name"
    return "id"


#: A ticket's or a pull request's key ("PAY-470", "#482"): wherever it stands it names what
#: the sentence is about, never a value that another key replaces. "Release notes for
#: PAY-470: ... fixed timezone handling ..." and the same for API-932 are two facts, though
#: "timezone" reads as an attribute and the keys as its two values.
_TICKET = re.compile(r"[A-Z][A-Z0-9]*-\d+|#\d+")
#: An acknowledgement in front of a fact ("Noted, ...", "Got it: ..."): not part of it.
_ACK_PREFIX = re.compile(
    r"^\s*(?:(?:ok(?:ay)?|sure|noted|got it|understood|great|yes|yep|right|perfect|thanks"
    r"|thank you|good|cool|will do|done|alright|all right)\b[\s,.:;!-]*)+",
    re.IGNORECASE,
)
_UNIT_AFTER = re.compile(r"(\d[\w.:/%-]*)\s+([a-zA-Z]+)")


#: "X, not Y" / "X rather than Y": Y is the value the fact replaces.
_NOT_OLD = re.compile(r"(?:,\s*(?:and\s+|but\s+)?not|\brather than)\s+([^,.;:!?]+)", re.IGNORECASE)
#: Phrases that name a relation or an attribute in other words.
_PHRASES = (
    (re.compile(r"\b(?:took|takes|take|taken|taking) over\b", re.IGNORECASE), "owns now"),
    (re.compile(r"\b(?:at most|no more than|at the most)\b", re.IGNORECASE), "limit"),
    (re.compile(r"\bon[- ]call\b", re.IGNORECASE), "on-call"),
    # "give me status updates as prose", "written as checklists": the form is the value
    (
        re.compile(r"\b(?i:give|write|send|format)\s+(?:me\s+|your\s+|my\s+)?(.{1,40}?)\s+as\b"),
        r"\1 is",
    ),
    (
        re.compile(
            r"\b(?:will be\s+|are\s+|be\s+)?(?:written|formatted|given|sent)\s+as\b", re.IGNORECASE
        ),
        "is",
    ),
    # "Ask Leo about ingestion": Leo is who owns it
    (re.compile(r"\b(?i:ask|ping|contact)\s+([A-Z]\w+)\s+(?i:about|for)\b"), r"\1 owns"),
    # a change said by when it began or by what it replaced: "I've gone vegetarian", "...
    # since the start of the month", "The new car is a Kia Niro"
    (re.compile(r"(?:'ve|\bhave|\bhas)\s+gone\b", re.IGNORECASE), " became"),
    (
        re.compile(
            r"\bsince\s+(?:the\s+(?:start|beginning)\s+of\s+(?:the\s+|this\s+)?"
            r"(?:month|week|year)|last\s+(?:week|month|year)|(?:mon|tues|wednes|thurs|fri|satur"
            r"|sun)day|january|february|march|april|may|june|july|august|september|october"
            r"|november|december)\b",
            re.IGNORECASE,
        ),
        "now",
    ),
    (re.compile(r"^(?:the|our|my)\s+new\s+(\w+)\s+(is|are)\b", re.IGNORECASE), r"the \1 \2 now"),
    (re.compile(r"\b(?:these\s+days|nowadays)\b", re.IGNORECASE), "now"),
)


#: "We finished the migration: the warehouse is Redshift now": what comes before the colon
#: introduces the fact (no digits: "10:30" is a time)
_PREAMBLE = re.compile(r"^[^:\d]{1,60}:\s+(?=\S)")
_VERBS = _RELATION | _MULTI | _CHANGE | _INVERSE


def _plain(text: str) -> str:
    """``text`` without an acknowledgement or a preamble in front, and with phrases named
    by one word."""
    text = _ACK_PREFIX.sub("", text)
    intro = _PREAMBLE.match(text)
    if intro and any(t.casefold() in _VERBS for t in _RAW.findall(text[intro.end() :])):
        text = text[intro.end() :]
    for pattern, word in _PHRASES:
        text = pattern.sub(word, text)
    return text


#: "Leo, who owns the ingestion pipelines, ...", "Omar, the platform on-call, ...": a claim
#: about a name said in passing, inside a sentence about something else
_ASIDE = re.compile(
    r"\b(?P<name>[A-Z][\w-]*),\s+(?:(?P<who>who)\s+|(?:the|our)\s+)(?P<what>[^,;.!?]+)"
)


def inner_claims(text: str) -> list[str]:
    """The claims ``text`` makes besides the one it is, each as a sentence of its own:
    each clause of a sentence joined by semicolons ("Omar is the platform on-call; I'll
    page Omar if an alert fires."), and what it says about a name in passing ("I told
    Leo, who owns the ingestion pipelines, and opened a ticket." says "Leo owns the
    ingestion pipelines"; "I paged Omar, the platform on-call, ..." says "Omar is the
    platform on-call": an appositive counts only when it names a role)."""
    plain = _plain(text)
    clauses = [c.strip() for c in plain.split(";")]
    out = [c for c in clauses if c] if len(clauses) > 1 else []
    for m in _ASIDE.finditer(plain):
        name, what = m["name"], m["what"].strip()
        if m["who"]:
            out.append(f"{name} {what}")
        elif any(_norm(t) in _ROLES for t in _RAW.findall(what)):
            out.append(f"{name} is the {what}")
    return out


#: Words that open a name ("Dr. Okoye"), kept with it.
_TITLES = frozenset(["dr", "mr", "mrs", "ms", "prof", "st"])


def _capital(token: str) -> bool:
    """Could ``token`` be a word of a name: capitalised, not a stop word, no digit."""
    low = token.casefold()
    return (
        token[:1].isupper()
        and token != "I"
        and low not in _STOP
        and low not in _QUALIFIERS
        and token not in _UPPER_QUALIFIERS
        and not any(ch.isdigit() for ch in token)
    )


def _tokens(text: str, fragment: bool = False) -> list[str]:
    """The words of ``text``, a name of two or more capitalised words kept as one token
    ("Virgin Media", "Dr. Okoye", "the Old Mill"): one value, not several words. A single
    capitalised word stays a word, and so does a sentence's first (a name and the first
    word of a sentence look alike) unless ``text`` is a fragment cut from a sentence."""
    found = list(_RAW.finditer(text))
    raw = [m.group() for m in found]
    out: list[str] = []
    n = 0
    while n < len(raw):
        end = n
        while end < len(raw) and _capital(raw[end]):
            end += 1
        # a sentence's first word is capitalised anyway ("Send Ravi the plan"): it starts a
        # name only as a title ("Dr. Okoye retired")
        before = text[: found[n].start()].rstrip(" \"'(")
        opens = (not before and not fragment) or before[-1:] in (".", "!", "?", ":", ";")
        name = end - n >= 2 and not (opens and _norm(raw[n]) not in _TITLES)
        out.append(" ".join(raw[n:end]) if name else raw[n])
        n = end if name else n + 1
    return out


#: Who a sentence can be about without naming a subject: "I drive a Honda Civic", "we pay
#: for Netflix": the word after one is the relation, everything after it the value.
_PRONOUNS = frozenset(["i", "we", "you", "they", "he", "she", "it"])
#: Between a pronoun and its verb: "have" ("I've gone") and adverbs; "I'll send" is an
#: intention, not a state, so "will" ends the search.
_BETWEEN = frozenset(
    "ve also usually always just still often never really actually currently".split()  # noqa: SIM905
)
_CONTRACTED_BE = frozenset(["m", "re", "s"])  # "I'm vegan", "we're with EDF", "it's Padella"
#: Who a pronoun is, as far as a fact's subject goes: the user speaks of "I" and "we", the
#: assistant says "you" of the user; anyone else is another subject.
_HOUSEHOLD = "household"
_PERSON = {"i": _HOUSEHOLD, "we": _HOUSEHOLD, "you": _HOUSEHOLD}
#: Words that join a habit's verb to its value ("live in", "bank with", "drive to").
_LINKS = frozenset("in at to with for on from by into near".split())  # noqa: SIM905
#: Verbs too general to name what a value is of ("I have a Honda", "we got a new router").
_GENERAL_VERBS = frozenset("have has had get gets got go goes gone do does did".split())  # noqa: SIM905


def _pronoun_verb(raw: list[str]) -> int | None:
    """Where the verb of "<pronoun> <verb> ..." is, when nothing else names a relation."""
    for n, token in enumerate(raw[:-1]):
        if token.casefold() not in _PRONOUNS:
            continue
        k = n + 1
        while k < len(raw) and raw[k].casefold() in _BETWEEN:
            k += 1
        if k >= len(raw):
            return None
        low = raw[k].casefold()
        if low in _CONTRACTED_BE:
            return k
        # a habit or a state ("I drive", "we pay", "I've gone"), not an event ("I paged
        # Omar, the platform on-call, ...": what follows is not a value of the speaker)
        perfect = raw[k - 1].casefold() == "ve"
        if (
            low.isalpha()
            and low.islower()
            and low not in _STOP
            and (perfect or not low.endswith("ed"))
        ):
            return k
        return None
    return None


def _habit(raw: list[str], pivot: int) -> str:
    """:attr:`Claim.verb` of the verb at ``pivot`` when a pronoun says it: who, what and
    how its value follows ("household:drive:a" for "I drive a ...", "you drive a ..." and
    "we drive a ..."; "household:live:in"); "" for a form of "be", a general verb, or a
    verb of a named subject."""
    low = raw[pivot].casefold()
    if low in _CONTRACTED_BE or low in _BE or low in _GENERAL_VERBS:
        return ""
    k = pivot - 1
    while k > 0 and raw[k].casefold() in _BETWEEN:
        k -= 1
    who = raw[k].casefold() if k >= 0 else ""
    if who not in _PRONOUNS:
        return ""
    # and how the value follows it: "drive a Kia Niro" and "drive to work" are two habits
    after = raw[pivot + 1].casefold() if pivot + 1 < len(raw) else ""
    how = "a" if after in _ARTICLES else after if after in _LINKS else ""
    return f"{_PERSON.get(who, who)}:{_stem(_norm(low))}:{how}"


#: A clause that says a value ended: "No more flat white, ...", "Dr. Okoye retired, so
#: ...", "We're not meeting at Cafe Lune anymore, ...", "ext 214 doesn't work anymore".
_ENDED = re.compile(
    r"\b(?:not|no more|no longer|anymore|retired|sold|cancell?ed|quit|done with|stopped"
    r"|gave up)\b|n't\b",
    re.IGNORECASE,
)
_ENDED_WORDS = frozenset(
    "not no more longer anymore retired sold cancelled canceled quit done stopped gave".split()  # noqa: SIM905
)
_CLAUSE = re.compile(r"\s*[,;]\s*(?:so\s+|and\s+|but\s+)?")


def _ended_clause(text: str) -> tuple[set[str], str, str] | None:
    """The values a clause of ``text`` says ended, ``text`` without that clause, and the
    clause; None when no clause does, or when nothing else is left to say the new value."""
    clauses = [c for c in _CLAUSE.split(text) if c.strip()]
    if len(clauses) < 2:
        return None
    for n, clause in enumerate(clauses):
        if not _ENDED.search(clause):
            continue
        rest = [c for m, c in enumerate(clauses) if m != n]
        if any(_ENDED.search(c) for c in rest):
            return None
        tokens = [_norm(t) for t in _tokens(clause, fragment=n > 0)]
        said = {t for t in tokens if _is_value(t)}
        if not said:  # "No more flat white": the words left once the signal is gone
            said = {
                _stem(t)
                for t in tokens
                if t not in _STOP
                and t not in _ATTRIBUTES
                and t not in _VERBS
                and t not in _ENDED_WORDS
                and len(t) > 1
            }
        if said:
            return said, ", ".join(rest), clause
    return None


def units(text: str) -> set[str]:
    """The words right after a number ("40 seconds", "12 GB", "9 parallel jobs")."""
    return {_norm(u) for _, u in _UNIT_AFTER.findall(_plain(text))}


@lru_cache(maxsize=4096)
def claim(text: str) -> Claim:
    """Sort the words of ``text``: qualifiers, attributes, values, other words, the value side.

    Cached (a search reads the same hits' texts again and again, and :func:`compare` reads
    each clause of two texts): the claim returned is shared, read it, never change it."""
    text = _plain(text)
    c = Claim()
    replaced = _NOT_OLD.search(text)
    if replaced is not None:  # "..., not #pipeline-alerts": the old value, said outright
        said = {_norm(t) for t in _tokens(replaced.group(1), fragment=True)} - _STOP
        c.old = {_stem(t) for t in said}
        c.changes = True
        text = text[: replaced.start()] + text[replaced.end() :]
    ended = _ended_clause(text)
    if ended is not None:  # "No more flat white, I'm on oat latte now"
        c.old |= ended[0]
        c.changes = True
        text = ended[1]
        # what the ended clause says it is about stays ("Staging Postgres is no longer on
        # 6543, it's on port 5433 now": staging, PostgreSQL)
        about = claim(ended[2])
        c.qualifiers |= about.qualifiers
        c.attributes |= about.attributes
        c.names |= about.names - c.old
        c.subject |= about.subject - c.old
        c.words |= about.subject - c.old
    raw = _tokens(text)
    pivot: int | None = None
    inverse = False
    naming: set[int] = set()  # verbs that name the attribute ("kept for 14 days")
    for n, token in enumerate(raw):
        low = token.casefold()
        # after an article a verb's form is a noun ("since the start of the month")
        noun = n > 0 and raw[n - 1].casefold() in _ARTICLES
        if pivot is None and not noun and (low in _RELATION or low in _MULTI or low in _CHANGE):
            pivot, c.multi = n, low in _MULTI
        if pivot is None and low in _INVERSE:
            pivot, inverse = n, True
        if low in _CHANGE or low in _SIGNAL:
            c.changes = True
        if low in _VERB_ATTRIBUTE:
            c.attributes.add(_VERB_ATTRIBUTE[low])
        said_by = _VERB_ATTRIBUTE_BEFORE.get(low)
        if said_by is not None and (
            _value_after(raw, n + 1, said_by[0]) or (low in _RETAIN and _duration_at(raw, n + 1))
        ):
            c.attributes.add(said_by[1])
            naming.add(n)
        if low == "every" and _value_after(raw, n, "every"):
            c.attributes.add("interval")
    if pivot is None:
        pivot = _pronoun_verb(raw)
    if pivot is not None:
        c.verb = _habit(raw, pivot)
    # "Book easyJet from now on, ...": a standing instruction; its verb is what the value is
    # for (the subject: "When you book flights, I prefer KLM" names it too), what it names
    # next the value
    if pivot is None and _standing_order(raw, text):
        pivot, c.standing = 0, True
        c.subject.add(_stem(raw[0].casefold()))
        c.words.add(_stem(raw[0].casefold()))
    # "Kenji is the ingestion pipeline owner", "Omar is on call": a name before "is" and a
    # role after it; the role is the subject, who holds it the value (as in "Kenji owns ...")
    if (
        pivot == 1
        and not inverse
        and raw[1].casefold() in _BE
        and raw[0][:1].isupper()
        and any(_norm(t) in _ROLES for t in raw[2:])
    ):
        inverse = True
    # "We bumped the CI runners to 7 jobs": after a change verb the value starts at "to";
    # what comes between is the subject
    value_start = pivot + 1 if pivot is not None else len(raw)
    changed_to: int | None = None  # where "to" follows a change verb
    if pivot is not None and not inverse and raw[pivot].casefold() in _CHANGE:
        changed_to = next(
            (n for n in range(pivot + 1, len(raw)) if raw[n].casefold() == "to"), None
        )
        value_start = changed_to + 1 if changed_to is not None else value_start
        # "I've switched dentists, I see Dr. Moreau now": a change verb's plural object with
        # no "to" names what changed, the subject, not the value
        if changed_to is None and pivot + 1 < len(raw) and _plural_noun(raw[pivot + 1]):
            value_start = pivot + 2
    # "from X to Y" / "instead of X": X is the value being replaced
    after_from = False
    purpose = False
    for n, token in enumerate(raw):
        low = token.casefold()
        if low in ("from", "of") and n > 0 and raw[n - 1].casefold() in _CHANGE | {"instead"}:
            after_from = True
            continue
        if (
            low == "from"
            and changed_to is not None
            and pivot is not None
            and pivot < n < changed_to
        ):
            after_from = True  # "We switched the ingestion service from httpx to pycurl"
            continue
        if low == "to" and after_from:
            after_from = False
            continue
        if low == "for" and pivot is not None and n > pivot + 1:
            purpose = True  # "uses pydantic for validation": what it is for is subject
        t = _norm(token)
        if after_from and t not in _STOP:
            c.old.add(_stem(t))
            continue
        if n == pivot or n in naming or low in _STOP or low in _VERBS or low in _VERB_ATTRIBUTE:
            continue
        if len(t) < 2 and not _is_value(t):
            continue
        if t in _FORMATS:  # a value that names its attribute
            c.attributes.add("format")
        if _is_value(t):
            c.values.add(t)
            on_subject_side = pivot is not None and (n > pivot if inverse else n < pivot)
            if on_subject_side and value_kind(t) in ("id", "name") and t not in _DAYS:
                c.names.add(t)
            elif _TICKET.fullmatch(token):
                c.names.add(t)  # "Release notes for PAY-470: ...", "The OPS-612 review ..."
        elif t in _QUALIFIERS or token in _UPPER_QUALIFIERS:
            c.qualifiers.add(t)
        elif t in _ATTRIBUTES:
            c.attributes.add(t)
        elif t in _UNITS:
            continue
        else:
            t = _stem(t)
            c.words.add(t)
            on_value_side = pivot is not None and (n < pivot if inverse else n >= value_start)
            if on_value_side and not purpose:
                c.slot.add(t)
            elif purpose:
                c.purpose.add(t)
            else:
                c.subject.add(t)
    # "Let's look at WEB-212, the slow search on the admin page.": with no relation and no
    # attribute to hold a value, an id names what the sentence is about (a ticket, a PR)
    if pivot is None and not c.attributes:
        c.names |= {v for v in c.values if value_kind(v) == "id" and v not in _DAYS}
    return c


def _value_after(raw: list[str], start: int, word: str) -> bool:
    """Is ``word`` among the three tokens from ``start``, with a value right after it
    ("kept | for 14 days", "every 6 hours")?"""
    for n in range(start, min(start + 3, len(raw) - 1)):
        if raw[n].casefold() == word:
            return _is_value(_norm(raw[n + 1]))
    return False


_DURATION_UNITS = frozenset(
    "second seconds minute minutes hour hours day days week weeks month months year years".split()  # noqa: SIM905
)


def _duration_at(raw: list[str], n: int) -> bool:
    """Is a duration said at ``n`` ("keeps | 72 hours of data")?"""
    return (
        n + 1 < len(raw) and _is_value(_norm(raw[n])) and raw[n + 1].casefold() in _DURATION_UNITS
    )


_STANDING = re.compile(r"(?i)\b(?:from now on|going forward|from today|in future)\b")


def _standing_order(raw: list[str], text: str) -> bool:
    """Does ``text`` open with a verb and a name, said as a rule from now on ("Book
    easyJet from now on", "Fly KLM from today")? Only a sentence whose first word is no
    other part of speech we know, and whose second is a value or a name."""
    if len(raw) < 2 or not _STANDING.search(text):
        return False
    first, second = raw[0], raw[1]
    low = first.casefold()
    return (
        first.isalpha()
        and first[:1].isupper()
        and low not in _STOP
        and low not in _PRONOUNS
        and low not in _QUALIFIERS
        and low not in _ATTRIBUTES
        and not _plural_noun(low)
        and (_is_value(_norm(second)) or any(ch.isupper() for ch in second))
    )


def _plural_noun(token: str) -> bool:
    """A lower-case word written as a plural ("dentists", "phones"), not a verb's "-ss"
    or "-us"."""
    return (
        token.isalpha()
        and token.islower()
        and len(token) > 4
        and token.endswith("s")
        and not token.endswith(("ss", "us", "is"))
        and token not in _STOP
        and token not in _VERBS
    )


def _kinds(values: set[str]) -> set[str]:
    return {value_kind(v) for v in values} | (
        {"number"} if any(value_kind(v) == "version" for v in values) else set()
    )


#: Head nouns a subject is named with or without ("ingestion" / "the ingestion pipelines").
_HEADS = frozenset(
    _stem(w)
    for w in """service pipeline system app application job server engineer library client
    framework tool""".split()  # noqa: SIM905
)


def _drop_kinds(a: set[str], b: set[str], x: Claim, y: Claim) -> tuple[set[str], set[str]]:
    """Words ``a`` of claim ``x`` and ``b`` of ``y`` less those one side names by kind
    ("database" / "postgresql"), and less head nouns said by one side only ("the
    ingestion service" / "ingestion"). A head noun stays when the other side's subject
    names something else in its place: "application logs" and "audit logs" are two kinds
    of logs."""
    named_a, named_b = (a & x.subject) - _HEADS, (b & y.subject) - _HEADS
    a, b = (a if named_b else a - _HEADS), (b if named_a else b - _HEADS)
    for kind, names in _KINDS.items():
        if kind in a and b & names:
            a.discard(kind)
            b -= names
        elif kind in b and a & names:
            b.discard(kind)
            a -= names
    return a, b


def compare(
    new: str, old: str, similarity: float = 0.0, same_at: float = 1.0
) -> tuple[Verdict, str]:
    """What ``new`` does to the memory ``old``, and why (for the history's reason).

    ``similarity`` (cosine of the two) at or above ``same_at`` makes a fact that only
    rewords the memory, with no new value, the same fact ("happens on Tuesday").

    A sentence of several clauses that announces a change ("The council changed
    collection, bins go out on Thursday night now.") is compared clause by clause too
    when the whole finds another fact: a clause that gives the memory's subject a new
    value (against the memory or a clause of it: "I'm vegan, please keep that in mind")
    supersedes it."""
    verdict, why = _compare(new, old, similarity, same_at)
    if verdict != Verdict.DISTINCT or not announces_change(new):
        return verdict, why
    ours, theirs = _clauses(new), _clauses(old)
    if len(ours) < 2 and len(theirs) < 2:
        return verdict, why
    whole_new, whole_old = claim(new), claim(old)
    if _another_subject(whole_new, whole_old) is not None:  # "PAY-101" / "PAY-100"
        return verdict, why
    if whole_old.attributes and not whole_new.attributes & whole_old.attributes:
        return verdict, why  # "Chidi is the platform on-call; I'll page Chidi if ..."
    for a in ours:
        x = claim(a)
        for b in theirs:
            y = claim(b)
            if (a, b) == (new, old) or _another_subject(x, y) is not None:
                continue
            # a clause is short: it must name something the other names ("bins", the
            # attribute, the value it replaces), not only share the shape of a change
            if not (x.words | x.old | x.attributes) & (y.words | y.attributes | y.values):
                continue
            if _compare(a, b, 0.0, 1.0)[0] == Verdict.SUPERSEDES:
                return Verdict.SUPERSEDES, f"a clause gives a new value: {a!r} / {b!r}"
    return verdict, why


_RELATIVE = re.compile(r"(?i:who|whom|whose|which|that|where|when|while)\b")


def _clauses(text: str) -> list[str]:
    """``text`` and, when it has several, its clauses of three words or more."""
    plain = _plain(text)
    # (not a relative clause: "who owns the ingestion pipelines" is about a name)
    parts = [
        c.strip()
        for c in _CLAUSE.split(plain)
        if len(_RAW.findall(c)) >= 3 and not _RELATIVE.match(c.strip())
    ]
    return [text, *parts] if len(parts) > 1 else [text]


def _names_within(part: Claim, whole: Claim, extra: set[str]) -> bool:
    """Does ``whole`` name all of ``part``'s subject, its other words (``extra``) besides
    its value and purpose being more of the subject ("repeat prescription" /
    "prescriptions")?"""
    return (
        bool(part.subject)
        and part.subject <= whole.subject
        and extra - whole.slot - whole.purpose <= whole.subject
    )


def _compare(new: str, old: str, similarity: float, same_at: float) -> tuple[Verdict, str]:
    n, o = claim(new), claim(old)
    why = _another_subject(n, o)
    if why is not None:
        return Verdict.DISTINCT, why
    replaced = _replaces(n, o)
    # "Book TAP Air from now on" and "Book club meets at ...": an order changes a preference
    # or an order for the same verb, and only such a one changes it, unless it names the
    # value it replaces
    if (n.standing or o.standing) and not (_same_order(n, o) or _same_order(o, n) or replaced):
        return Verdict.DISTINCT, "an order, and what is no preference or order for its verb"
    only_new, only_old = _drop_kinds(n.words - o.words - n.old, o.words - n.words, n, o)
    # one person's habit or state named by the same verb, said to have changed ("I drive a
    # Kia Niro now" / "I drive a Toyota Corolla"): the verb is what the value is of. Not
    # unless said to change: "I take the 17:50 train home" is one more habit of "take"
    habit = n.changes and bool(n.verb) and n.verb == o.verb and n.subject == o.subject
    new_values, old_values = n.values - o.values - n.old, o.values - n.values
    # "I moved my current account from Barclays to Monzo" after "I bank with Barclays",
    # "Sold the Honda Civic, we bought ..." after "I drive a Honda Civic": the memory names
    # no subject but the speaker, and its value is the one replaced
    if (
        replaced
        and o.slot | o.values
        and not o.subject
        and not o.names
        and o.slot | o.values <= n.old | n.words
    ):
        return Verdict.SUPERSEDES, "the speaker's value, named as replaced"
    if only_new and only_old:
        # both sides say something the other does not: another subject, or a new value
        # it names the old value as replaced and adds nothing but its new value: the
        # memory may name the subject more fully ("Pipeline alerts" / "Alerts")
        if replaced and not only_new - n.slot - n.purpose:
            return Verdict.SUPERSEDES, "same subject, the value it names replaced"
        # "Call ext 307 for repairs from today, ext 214 doesn't work anymore." after "The
        # landlord's office number is 020 7946 0000, ext 214.": the memory's own value (or
        # a word on its value side) named as replaced, a new one (of its kind) in its
        # place, and a word in common besides the values
        gone = n.old & (o.values | o.slot)
        named_value = gone & o.values  # then only a value can stand in its place
        instead = new_values if named_value else new_values | (n.slot - o.words)
        if (
            gone
            and instead
            and (not named_value or _kinds(new_values) & _kinds(gone))
            and ((n.words | n.attributes) & (o.words | o.attributes)) - gone
        ):
            return Verdict.SUPERSEDES, "a new value in place of the one it names replaced"
        if only_new & n.purpose and only_old & o.purpose:
            return Verdict.DISTINCT, "another purpose"
        # a change of one attribute may name the memory's subject more closely ("From now
        # on the repeat prescription goes to Boots" after "My prescriptions go to Well
        # Pharmacy ...") or less ("OK, the home network is NookMesh now" after "Our home
        # wifi network is called Hearth-5G"); "Nadia took over the Grafana SLO dashboards
        # from the platform team" does not narrow "Ravi takes over the platform pager"
        one_attribute = n.changes and n.attributes == o.attributes
        narrower = one_attribute and _names_within(o, n, only_new)
        broader = one_attribute and _names_within(n, o, only_old)
        # what a value is for, said by one side only ("... for its HTTP calls"), is neither
        # subject nor value
        if not (only_new <= n.slot | n.purpose or narrower) or not (
            only_old <= o.slot | o.purpose or broader
        ):
            return Verdict.DISTINCT, "another subject"
        anchors = (n.words & o.words) - n.slot - o.slot
        if not (anchors or n.attributes & o.attributes or n.qualifiers & o.qualifiers or habit):
            return Verdict.DISTINCT, "nothing in common but the relation"
        if n.attributes != o.attributes and not n.attributes & o.attributes:
            return Verdict.DISTINCT, "a value of another attribute"
        if n.multi and o.multi and not (n.changes or replaced):
            return Verdict.DISTINCT, "one more value of a relation that holds many"
        if new_values and old_values and not _kinds(new_values) & _kinds(old_values):
            return Verdict.DISTINCT, "values of another kind"
        return Verdict.SUPERSEDES, "same subject, a new value"
    if new_values and old_values:
        shared_unit = units(new) & units(old)
        if only_new and not replaced and not (n.attributes & o.attributes or shared_unit):
            return Verdict.DISTINCT, "a more specific subject"
        if n.attributes - o.attributes:  # the old fact may name it, the new one may not
            return Verdict.DISTINCT, "a value of another attribute"
        # "Understood, I'll book British Airways." after "Book club meets at Marlowe
        # Books": names are everywhere; one in place of another with a word in common is
        # a change only when said to be one
        if _kinds(new_values) == {"name"} and not (n.changes or replaced):
            return Verdict.DISTINCT, "another name, not said to replace it"
        if not _kinds(new_values) & _kinds(old_values):
            return Verdict.DISTINCT, "values of another kind"
        if not habit and not (n.words | n.attributes | n.qualifiers) & (
            o.words | o.attributes | o.qualifiers
        ):
            return Verdict.DISTINCT, "nothing in common but the kind of value"
        return Verdict.SUPERSEDES, "same subject and attribute, a new value"
    if (new_values and not old_values) or only_new:
        # "The ingestion service's httpx client has a 30 second pool timeout; I lowered it
        # to 10." gives a timeout a value, not the HTTP library of "We switched the
        # ingestion service from aiohttp to httpx"
        if new_values and n.attributes - o.attributes and not replaced:
            return Verdict.DISTINCT, "a value of another attribute"
        # "The docs site moved to Cloudflare Pages" after "... is hosted on Netlify": a
        # name in place of the words the memory gave as the value
        named_instead = (
            new_values
            and only_old
            and only_old <= o.slot
            and not only_new
            and (n.words | n.attributes) & (o.words | o.attributes)
        )
        anchored = habit or bool(
            (n.words | n.attributes | n.qualifiers) & (o.words | o.attributes | o.qualifiers)
        )
        if replaced or (
            n.changes and (only_new or named_instead) and only_new <= n.slot and anchored
        ):
            return Verdict.SUPERSEDES, "same subject, the value replaced"
        if similarity >= same_at and not new_values:
            return Verdict.SAME, f"reworded (similarity {similarity:.2f})"
        return Verdict.DISTINCT, "says more than the memory"
    if replaced:
        return Verdict.SUPERSEDES, "same subject, the value replaced"
    # the speaker's own habit is not said by a memory about someone or something else ("I
    # drive a Kia Niro now" / "My sister drives a Kia Niro now")
    if n.verb.startswith(f"{_HOUSEHOLD}:") and not o.verb and o.subject - n.words:
        return Verdict.DISTINCT, "the speaker's own, not the memory's subject"
    return Verdict.SAME, "already said"


def unlike(a: str, b: str) -> str | None:
    """Why ``a`` and ``b`` cannot say the same attribute of the same subject, or None.

    The hard half of :func:`compare`, for two texts that may be long or loosely worded
    (conversation turns, diary lines): another environment or region, another named
    attribute, values of another kind ("port 5432" / "Tuesday"). What is left may be
    one fact said twice, a new value of it, or two facts the words cannot tell apart."""
    return claims_unlike(claim(a), claim(b))


def _another_subject(x: Claim, y: Claim) -> str | None:
    """Why ``x`` and ``y`` are about another subject or attribute, whatever their values."""
    if x.qualifiers != y.qualifiers:
        return "another environment or region"
    if x.attributes and y.attributes and not x.attributes & y.attributes:
        return "another attribute"
    if x.names and y.names and not x.names & y.names:
        return "another subject, named by its id"
    return None


def claims_unlike(x: Claim, y: Claim) -> str | None:
    """:func:`unlike` of two texts already sorted by :func:`claim`."""
    why = _another_subject(x, y)
    if why is not None:
        return why
    if x.values and y.values and not _kinds(x.values) & _kinds(y.values):
        return "values of another kind"
    return None


def linked(new: str, old: str) -> bool:
    """``new`` and ``old`` name one attribute ("owns" / "took over": the owner), or ``new``
    names a value of ``old`` as the one it replaces ("..., not Kenji")."""
    n, o = claim(new), claim(old)
    return bool(n.attributes & o.attributes) or _replaces(n, o) or _same_order(n, o)


def _same_order(n: Claim, o: Claim) -> bool:
    """``n`` is a standing order whose verb ``o``, a preference or an order, names ("Book
    easyJet from now on" / "When you book flights, I prefer KLM")."""
    return n.standing and (o.multi or o.standing) and bool(n.subject & o.words)


def _replaces(n: Claim, o: Claim) -> bool:
    """``n`` names a value ``o`` says as the one it replaces ("from X", "..., not X")."""
    return bool(n.old) and n.old <= (o.words | o.values | o.attributes)


def replaced_value_named(text: str, old: str, new: str) -> str | None:
    """The value of ``old`` that ``new`` replaced and ``text`` still names in passing, or
    None ("The weekly revenue query scans the events table in the BigQuery warehouse"
    after "Our analytics warehouse is BigQuery" became "... Snowflake").

    ``text`` must share a word other than the value with ``old`` (what the value is of),
    be about the same environment, attribute and id as ``old``, and not name ``new``'s
    value too ("Analytics moved from BigQuery to Snowflake" is the change itself)."""
    t, o, n = claim(text), claim(old), claim(new)
    if claims_unlike(t, o) is not None:
        return None
    gone = (o.slot | o.values) - (n.words | n.values)
    came = (n.slot | n.values) - (o.words | o.values) - n.old
    said = t.words | t.values | t.old
    named = said & gone
    anchors = (t.words | t.attributes) & (o.words | o.attributes) - gone
    if not named or not anchors or said & came:
        return None
    # as ``text`` writes it, not as stemmed ("BigQuery", not "bigqueri")
    written = {w for w in (_norm(t) for t in _tokens(_plain(text))) if _stem(w) in named}
    return sorted(written or named)[0]


#: Past forms of action verbs that do not end in "-ed" ("Sold ...", "Sent ...").
_DONE_IRREGULAR = frozenset(
    "sold bought sent paid made took gave got ran found wrote drove met brought".split()  # noqa: SIM905
)


def reports_action(text: str) -> bool:
    """Does ``text`` report something done once ("Ordered five coffees, a cortado for
    you.", "I reconnected the smart plug to the Hearth-5G network.", "Fixed the Kafka
    ACL")? It opens with a past verb (after "I" / "We" or none), holds no relation that
    states how things are ("Curated tables are in ...") and announces no change ("We
    moved pipeline alerts to ...", "Sold the Honda Civic, we bought ..." say what is true
    now)."""
    raw = _tokens(_plain(text))
    if not raw:
        return False
    k = 1 if raw[0].casefold() in ("i", "we") and len(raw) > 1 else 0
    verb = raw[k].casefold()
    past = verb in _DONE_IRREGULAR or (verb.endswith("ed") and verb.isalpha() and len(verb) > 4)
    if not past or verb in _CHANGE or (k == 0 and not raw[0][:1].isupper()):
        return False
    rest = {t.casefold() for t in raw[k + 1 :]}
    return not rest & (_RELATION | _MULTI | _CHANGE) and not claim(text).changes


def content(text: str) -> set[str]:
    """The words of ``text`` that carry meaning, normalised as :func:`claim` does them."""
    words = (_norm(t) for t in _RAW.findall(_ACK_PREFIX.sub("", text)))
    return {w for w in words if w and w not in _STOP}


def announces_change(text: str) -> bool:
    """Says that something changed or replaced what was before ("now", "switched",
    "took over", "instead", "no longer", "from now on")."""
    return claim(text).changes


def names_as_old(newer: str, older: str) -> bool:
    """Does ``newer`` name what ``older`` says as the value it replaces ("moved from
    Redshift to Snowflake", "instead of aiohttp") ?"""
    return bool(claim(newer).old & content(older))


def says_otherwise(newer: str, older: str, cosine: float, min_cosine: float) -> bool:
    """Does ``newer`` give what ``older`` says a new value?

    Either :func:`compare` finds the same subject and attribute with a new value, or
    ``newer`` announces a change (:func:`announces_change`), the two are close in meaning
    (``cosine`` at least ``min_cosine``), the words do not tell them apart as different
    facts (:func:`unlike`) and ``newer`` is not the same fact said again: "the gateway
    timeout is 45 seconds now" after "the API gateway times out requests after 40
    seconds", which the word rules alone read as another attribute.
    """
    verdict, _ = compare(newer, older)
    if verdict == Verdict.SUPERSEDES:
        return True
    return (
        verdict != Verdict.SAME
        and cosine >= min_cosine
        and announces_change(newer)
        and unlike(newer, older) is None
    )
