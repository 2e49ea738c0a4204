"""Seed 003's fact classes: personal / tasks / agents / system, when no category is given.

The class decides how long a fact lives (``decay.ttl_days``: personal and
system never expire, tasks after 7 days, agents after 30), so it must be
predictable: word rules, the same with or without an LLM, explained by the
words that matched. A fact is put in the class whose markers it has most of;
ties go to the class that expires soonest among the matched ones (a task that
mentions a server is still a task), and a fact with no marker gets no category
(``decay.default_class``: kept).

Task markers are deliberately narrow (an explicit to-do, a deadline, a next
step): a durable fact mistaken for a task would be archived into a lesson
after a week.
"""

from __future__ import annotations

import re

_WORDS: dict[str, tuple[str, ...]] = {
    "tasks": (
        r"to-?do",
        r"needs? to",
        r"ha(?:ve|s) to",
        r"remind(?:er)?",
        r"deadline",
        r"due (?:on|by|date|tomorrow|today|next)",
        r"follow(?:ing)?[- ]up",
        r"open (?:task|item|question)",
        r"action items?",
        r"next steps?",
        r"pending",
        r"in progress",
        r"working on",
        r"blocked (?:on|by)",
        r"plan(?:s|ning)? to",
        r"going to",
        r"tomorrow",
        r"next (?:week|month|monday|tuesday|wednesday|thursday|friday)",
        r"by (?:monday|tuesday|wednesday|thursday|friday|saturday|sunday|eod|end of)",
    ),
    "system": (
        r"servers?",
        r"databases?",
        r"db",
        r"postgres(?:ql)?",
        r"mysql",
        r"sqlite",
        r"redis",
        r"kubernetes",
        r"k8s",
        r"clusters?",
        r"docker",
        r"containers?",
        r"deploy(?:s|ed|ing|ments?)?",
        r"ci",
        r"config(?:uration|ured)?",
        r"environment variables?",
        r"env vars?",
        r"api keys?",
        r"endpoints?",
        r"hosts?(?:name)?",
        r"port \d+",
        r"runs on",
        r"installed",
        r"linux",
        r"macos",
        r"windows",
        r"nginx",
        r"backups?",
        r"cron",
        r"ssh",
        r"dns",
        r"aws",
        r"gcp",
        r"azure",
        r"repo(?:sitory)?",
        r"branch(?:es)?",
        r"python \d",
        r"node(?:\.js)?",
        r"v?\d+\.\d+(?:\.\d+)+",
        r"\d{1,3}(?:\.\d{1,3}){3}",
    ),
    "personal": (
        r"prefer(?:s|red|ence|ences)?",
        r"likes?",
        r"loves?",
        r"hates?",
        r"dislikes?",
        r"favou?rite",
        r"enjoys?",
        r"allergic",
        r"birthday",
        r"wife",
        r"husband",
        r"partner",
        r"daughter",
        r"son",
        r"kids?",
        r"children",
        r"family",
        r"friends?",
        r"lives in",
        r"moved to",
        r"born",
        r"name is",
        r"hobb(?:y|ies)",
        r"pets?",
        r"vegetarian",
        r"vegan",
        r"diet",
        r"time ?zone",
        r"email address",
        r"phone number",
    ),
    "agents": (
        r"agents?",
        r"assistant",
        r"sub-?agents?",
        r"bots?",
        r"claude",
        r"codex",
        r"openclaw",
        r"llm",
        r"prompts?",
        r"tool calls?",
        r"skills?",
        r"sessions?",
    ),
}
#: A day or time something can be due by or start from ("Friday", "the 20th", "March").
DAY = (
    r"(?:mon|tues|wednes|thurs|fri|satur|sun)day|tomorrow|tonight|today|noon|midnight|eod|eow|"
    r"(?:the )?(?:weekend|end of|morning|afternoon|evening|deadline|\d{1,2}(?:st|nd|rd|th)\b)|"
    r"(?:jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|"
    r"sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?|q[1-4])\b|\d"
)
#: When something starts to hold is not when it is due: "Alerts post in #data-alerts
#: from today" and "Standups move to 9:30 from next week" are facts, not tasks.
STARTS = re.compile(
    rf"\b(?:from|as of|starting|since|effective|beginning)(?: on)? (?:(?:next|this|the) )?"
    rf"(?:{DAY}|now on|now|week)\w*",
    re.I,
)
#: Who wins a tie: the class that expires soonest first (decay's default TTLs).
_TIE_ORDER = ("tasks", "agents", "system", "personal")
_PATTERNS = {
    cls: re.compile(r"\b(?:" + "|".join(words) + r")\b", re.IGNORECASE)
    for cls, words in _WORDS.items()
}
CLASSES = tuple(_WORDS)
#: Where a class's name is not the category memoryd already uses for it.
CATEGORY_OF_CLASS = {"tasks": "task"}


def markers(text: str) -> dict[str, list[str]]:
    """The words of ``text`` that point to each class (for explaining a choice)."""
    due = STARTS.sub(" ", text)  # "from next week" says when, not that work is due
    return {
        cls: [m.group(0) for m in p.finditer(due if cls == "tasks" else text)]
        for cls, p in _PATTERNS.items()
    }


def fact_class(text: str) -> str | None:
    """``personal``, ``tasks``, ``agents`` or ``system``; None when nothing points anywhere."""
    counts = {cls: len(found) for cls, found in markers(text).items()}
    best = max(counts.values())
    if best == 0:
        return None
    return next(cls for cls in _TIE_ORDER if counts[cls] == best)


def classify_fact(text: str) -> str | None:
    """The category a fact given none is stored under: its class (:func:`fact_class`),
    but ``task`` for the tasks class, the one name memory_add, the digest and search
    use (``--category tasks`` means ``task``; a fact stored as ``tasks`` was found by
    neither). Decay puts ``task`` in the tasks class, so it still expires after 7 days."""
    cls = fact_class(text)
    return CATEGORY_OF_CLASS.get(cls, cls) if cls else None
