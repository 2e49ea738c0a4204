"""Small text tools the lesson pipelines share: content words, overlap, sentences, and
:func:`lesson_problem`, the one gate every lesson passes before it is stored.

Word overlap is seed 003's duplicate test ("word overlap > 70%"). It is
measured on content words (no stop words, no lesson-template words), as the
share of the *new* lesson's words already present in an existing one: a new
lesson that says nothing an old one does not already say is a duplicate, even
when the old one says more.
"""

from __future__ import annotations

import re
import unicodedata

from memoryd.extract.noise import is_chitchat

_WORD = re.compile(r"[^\W_]+(?:[-'.][^\W_]+)*", re.UNICODE)
_SENTENCE = re.compile(r"(?<=[.!?。！？])\s+|\n+")
_STOPWORDS = frozenset(
    """a about above after again against all also am an and any are as at be because been
    before being below between both but by can could did do does doing done down during each
    few for from further had has have having he her here hers him his how i if in into is it
    its itself just me more most my no nor not now of off on once only or other our ours out
    over own same she should so some such than that the their them then there these they
    this those through to too under until up us very was we were what when where which while
    who whom why will with would you your yours ok okay please thanks thank yes yeah
    when wrong right correct approach scenario reason lesson worked failed instead""".split()  # noqa: SIM905
)


def words(text: str) -> list[str]:
    """Lower-cased words of ``text`` in order (NFKC-normalised, any script)."""
    return [w.lower() for w in _WORD.findall(unicodedata.normalize("NFKC", text))]


def content_words(text: str) -> set[str]:
    """The words that carry meaning: no stop words, no one-letter tokens."""
    return {w for w in words(text) if w not in _STOPWORDS and (len(w) > 1 or not w.isascii())}


def overlap(new: str, old: str) -> float:
    """Share of ``new``'s content words that ``old`` has too, in [0, 1]."""
    a = content_words(new)
    if not a:
        return 1.0 if not content_words(old) else 0.0
    return len(a & content_words(old)) / len(a)


def sentences(text: str) -> list[str]:
    """Sentences (and lines) of ``text``, stripped, empty ones dropped."""
    return [s.strip() for s in _SENTENCE.split(text) if s and s.strip()]


def clip(text: str, limit: int) -> str:
    """``text`` on one line, at most ``limit`` characters (an ellipsis marks a cut)."""
    flat = " ".join(text.split())
    if len(flat) <= limit:
        return flat
    return flat[: max(1, limit - 1)].rstrip() + "…"


def end_sentence(text: str) -> str:
    text = text.strip()
    return text if not text or text[-1] in ".!?。！？…" else text + "."


# -- what counts as a lesson -------------------------------------------------------------------

#: Something went wrong.
_FAILURE = re.compile(
    r"\b(?:fail(?:s|ed|ing|ure|ures)?|errors?|exceptions?|crash(?:ed|es)?|broke|broken|"
    r"refus(?:ed|es)|denied|timed? ?out|wrong|bugs?|did(?:n't| not) work|does(?:n't| not) work|"
    r"not installed|missing|conflicts?|locked|regress\w*|outages?|rejected|forbid\w*|"
    r"externally[- ]managed|cannot|can't|unable|flaky|drift(?:s|ed)?|leak(?:s|ed)?|"
    r"slow|stale|corrupt(?:ed)?)\b",
    re.IGNORECASE,
)
#: ... and something fixed it.
_FIX = re.compile(
    r"\b(?:fix(?:ed|es|ing)?|resolv(?:ed|es)|solv(?:ed|es)|workarounds?|instead|switch(?:ed)? to|"
    r"by (?:using|adding|setting|running|passing|pinning|moving|creating|raising|lowering)|"
    r"works? (?:now|after|when|with|once)|worked|succeeded|avoids?|avoided|the solution)\b"
    # or an instruction: a sentence that starts by saying what to do
    r"|(?:^|[.:;!?]\s+)(?:use|prefer|run|set|pin|add|keep|always|never|avoid|check)\b",
    re.IGNORECASE,
)
#: The error of a missing file (or a mistyped path).
_MISSING_FILE = re.compile(
    r"no such file|enoent|file not found|does not exist|doesn't exist|cannot find|"
    r"can't find|not found",
    re.IGNORECASE,
)
#: An explanation that makes a lesson of a fix: why it failed, what the rule is.
_EXPLAINS = re.compile(
    r"\b(?:because|since|due to|requires?|needs?|must|should|instead|only|case[- ]sensitive|"
    r"expects?|managed|renamed|moved|lives? in|not installed|forbids?|allowed|never|always)\b",
    re.IGNORECASE,
)
#: A session lesson's parts (:class:`memoryd.pipelines.lessons_extract.Lesson`.text).
_PARTS = re.compile(r"\bWrong: (?P<wrong>.*?) Right: (?P<right>.*?)(?: Why: (?P<why>.*))?$", re.S)
_CALL_FAILED = re.compile(r"^(?P<call>.*?) failed: (?P<error>.*)$", re.S)
MIN_CONTENT_WORDS = 5


def _edit_distance(a: str, b: str, cap: int = 3) -> int:
    """Levenshtein distance of ``a`` and ``b``, counting no further than ``cap``."""
    if abs(len(a) - len(b)) >= cap:
        return cap
    row = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        prev, row[0] = row[0], i
        for j, cb in enumerate(b, 1):
            prev, row[j] = row[j], min(row[j] + 1, row[j - 1] + 1, prev + (ca != cb))
        if min(row) >= cap:
            return cap
    return min(row[-1], cap)


def is_typo_fix(wrong: str, right: str) -> bool:
    """The retry only corrected a slip: one word a character or two apart (``srcc`` ->
    ``src``); a change of case alone (``readme.md`` -> ``README.md``) is not a slip."""
    a, b = wrong.split(), right.split()
    if len(a) != len(b):
        return False
    changed = [(x, y) for x, y in zip(a, b, strict=True) if x != y]
    if len(changed) != 1:
        return False
    x, y = changed[0]
    return x.casefold() != y.casefold() and _edit_distance(x.casefold(), y.casefold()) <= 2


def lesson_problem(text: str) -> str | None:
    """Why ``text`` is not a lesson worth sharing, or None when it is one.

    The one gate every lesson writer passes (session lessons, decay, with or without an
    LLM): a lesson needs a failure and what fixed it, with substance. Not lessons:
    chit-chat and to-dos, text without a failure or without a fix, a typo corrected on
    retry, a missing file found on retry with nothing learned about why.
    """
    body = text.split(": ", 1)[1] if text.startswith("Lesson from ") and ": " in text else text
    if is_chitchat(body):
        return "chit-chat"
    if len(content_words(body)) < MIN_CONTENT_WORDS:
        return "too short to teach anything"
    parts = _PARTS.search(body)
    if parts is not None:
        wrong, right, why = parts["wrong"], parts["right"], parts["why"] or ""
        failed = _CALL_FAILED.match(wrong)
        call, error = (failed["call"], failed["error"]) if failed else (wrong, wrong)
        if is_typo_fix(call.strip().rstrip("."), right.strip().rstrip(".")):
            return "a typo corrected on retry"
        explained = why and not why.lower().startswith("the first attempt failed with")
        if _MISSING_FILE.search(error) and not (explained and _EXPLAINS.search(why)):
            return "a missing file found on retry, with nothing learned about why"
        return None
    if not _FAILURE.search(body):
        return "no failure: nothing went wrong"
    if not _FIX.search(body):
        return "no fix: nothing says what worked"
    return None


def is_lesson(text: str) -> bool:
    return lesson_problem(text) is None
