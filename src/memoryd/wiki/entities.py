"""Which words of a statement name an entity, and which spellings name the same one.

Capitalisation alone is a poor guide: English capitalises days, months, languages
and nationalities ("on Friday", "speaks English"), and every word that opens a
sentence ("Backups run nightly"), while a project that opens every sentence it is
in ("Orion deploys on Fridays") is a name all the same. So a capitalised word is a
name unless it is a *sentence-case accident*:

* a day, month, time zone, language or nationality alone (:data:`CALENDAR`, :data:`PEOPLES`)
  is never an entity; inside a longer name ("Black Friday Sale") it stays;
* a single capitalised word that opens a sentence is a name only when the corpus
  confirms it: it is written capitalised in the middle of a sentence somewhere in
  what the wiki compiles, ``USER.md`` or the recent diary (``Lexicon.confirmed``), or
  it is listed in ``wiki.entities``;
* a run of capitalised words that opens a sentence loses a first word that is a day,
  a language, a stopword, or a common word (written in lower case elsewhere, never
  capitalised mid-sentence) before a name that stands alone elsewhere: "Yesterday Ana
  Ruiz" is Ana Ruiz, "Cache Redis" Redis ("the cache Redis"), "Mark Chen" stays;
* "I" is no name, and ends a run ("Actually I changed my mind").

Spellings of one entity are one page (:meth:`Lexicon.key`): names are folded (case,
punctuation: "Node.js" = "NodeJS"), ``wiki.aliases`` maps known alternatives, in
any case, to their name ("postgres", "pg" -> PostgreSQL; "k8s" -> Kubernetes), and a
name that is another's first letters but a short capitalised ending ("Postgres" /
"PostgreSQL", "Dynamo" / "DynamoDB"; six letters at least) is that name.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from memoryd.search.text import STOPWORDS

# capitalised words, runs of them joined ("Ana Ruiz", "Wells Fargo")
_NAME = re.compile(r"\b[A-Z][\w'’.-]*[\w]|\b[A-Z]")
_RUN_GAP = re.compile(r"^\s+$")
_POSSESSIVE = re.compile(r"['’]s?$")
_OPENERS = (".", "!", "?", ":", ";", "-", "*", "•", "|", "(", '"', "“")
_FOLD = re.compile(r"[^\w]+")
_LOWER = re.compile(r"(?<![\w.-])[a-z][a-z'’-]*[a-z]")
_PRONOUN = frozenset({"i", "i'm", "i'll", "i've", "i'd"})
CALENDAR = frozenset(
    """monday tuesday wednesday thursday friday saturday sunday mon tue tues wed thu thur
    thurs fri sat sun january february march april may june july august september october
    november december jan feb mar apr jun jul aug sep sept oct nov dec today tomorrow
    yesterday tonight utc gmt cet cest est edt pst pdt""".split()  # noqa: SIM905
)
#: Languages and nationalities: an adjective or a language, not a page of its own.
PEOPLES = frozenset(
    """english british american canadian australian irish scottish welsh french german
    spanish portuguese italian dutch belgian swiss austrian swedish norwegian danish finnish
    icelandic polish czech slovak hungarian romanian bulgarian greek turkish russian
    ukrainian serbian croatian chinese mandarin cantonese japanese korean vietnamese thai
    indian hindi urdu bengali punjabi tamil pakistani arabic hebrew persian farsi israeli
    egyptian african nigerian kenyan mexican brazilian argentinian chilean colombian
    peruvian latin european asian western eastern northern southern""".split()  # noqa: SIM905
)
#: The shortest name the first-letters rule merges into a longer one.
MIN_PREFIX = 6  # "Dynamo" joins "DynamoDB"; "Maria" stays apart from "MariaDB"
MAX_ENDING = 3


def fold(name: str) -> str:
    """A name's spelling folded: case and punctuation ("Node.js" = "NodeJS" = "nodejs")."""
    return _FOLD.sub(" ", name.casefold()).strip().replace(" ", "") if name else ""


def _opens_sentence(text: str, start: int) -> bool:
    before = text[:start].rstrip()
    return not before or before.endswith(_OPENERS)


def _accident(word: str) -> bool:
    low = word.casefold()
    return low in CALENDAR or low in PEOPLES or low in STOPWORDS


@dataclass
class Lexicon:
    """What the corpus and the settings say about names (see the module's docstring)."""

    confirmed: set[str] = field(default_factory=set)  # folded single words
    aliases: dict[str, str] = field(default_factory=dict)  # folded alias -> its name
    merged: dict[str, str] = field(default_factory=dict)  # folded key -> the key it joined
    lower: set[str] = field(default_factory=set)  # folded words seen written in lower case
    alone: set[str] = field(default_factory=set)  # folded whole runs seen mid-sentence
    _alias_re: re.Pattern[str] | None = None

    def key(self, name: str) -> str:
        """The folded key of the entity ``name`` names (aliases and merges followed)."""
        k = fold(name)
        k = fold(self.aliases.get(k, k))
        return self.merged.get(k, k)

    def names(self, text: str, known: Collection[str] = ()) -> list[str]:
        """The names in ``text``, each once, aliases given as their name. ``known``:
        keys of entities already found, confirmed at a sentence's opening too."""
        out: list[str] = []
        for words, opening in _runs(text):
            while words and words[0].casefold() in STOPWORDS:
                words, opening = words[1:], False
            if opening and len(words) == 1 and not self._sure(words[0], known):
                continue  # "Backups run nightly": sentence case, unless confirmed
            if opening and len(words) > 1 and self._common(words[0], words[1:]):
                words = words[1:]  # "Yesterday Ana Ruiz ...", "Cache Redis maxmemory ..."
            if len(words) == 1 and _accident(words[0]):
                continue
            if not words:
                continue
            if len(words) == 1 and len(words[0]) < 3 and fold(words[0]) not in self.aliases:
                continue  # "AI", "QA", "EU": too short to be told from an abbreviation
            name = " ".join(words)
            out.append(self.aliases.get(fold(name), name))
        if self._alias_re is not None:  # aliases in any case: "we run on k8s"
            out.extend(self.aliases[fold(m.group(0))] for m in self._alias_re.finditer(text))
        return list(dict.fromkeys(out))

    def _common(self, word: str, rest: list[str]) -> bool:
        """Whether ``word``, opening a run, is sentence case: a day, a language, a
        stopword; or a word written in lower case elsewhere, never capitalised
        mid-sentence, before a name found on its own ("Cache Redis", where "the cache
        Redis" is said too; "Mark Chen" keeps Mark unless "Chen" stands alone)."""
        if _accident(word):
            return True
        k = fold(word)
        return k in self.lower and k not in self.confirmed and fold(" ".join(rest)) in self.alone

    def _sure(self, word: str, known: Collection[str]) -> bool:
        k = fold(word)
        return k in self.confirmed or k in self.aliases or self.key(word) in known


def _runs(text: str) -> Iterable[tuple[list[str], bool]]:
    """Runs of capitalised words (separated by white space only), and whether each
    opens a sentence."""
    run: list[str] = []
    start = end = 0
    for m in _NAME.finditer(text):
        if m.group(0).casefold().replace("’", "'") in _PRONOUN:  # "Actually I changed ..."
            if run:
                yield run, _opens_sentence(text, start)
            run = []
            continue
        if run and _RUN_GAP.match(text[end : m.start()] or "x"):
            run.append(_POSSESSIVE.sub("", m.group(0)))
            end = m.end()
            continue
        if run:
            yield run, _opens_sentence(text, start)
        run, start, end = [_POSSESSIVE.sub("", m.group(0))], m.start(), m.end()
    if run:
        yield run, _opens_sentence(text, start)


def lexicon(
    texts: Iterable[str],
    known: Sequence[str] = (),
    aliases: Mapping[str, Sequence[str]] | None = None,
) -> Lexicon:
    """A lexicon from the texts the wiki compiles, ``wiki.entities`` and ``wiki.aliases``."""
    lex = Lexicon(confirmed={fold(n) for n in known if n.strip()})
    for name, others in (aliases or {}).items():
        for spelling in [name, *others]:
            if fold(spelling):
                lex.aliases[fold(spelling)] = name
    words = sorted((a for a in lex.aliases if a.isalnum()), key=lambda a: (-len(a), a))
    if words:
        alternatives = "|".join(re.escape(a) for a in words)
        lex._alias_re = re.compile(rf"(?<![\w.-])(?:{alternatives})(?![\w-])", re.IGNORECASE)
    for text in texts:
        lex.lower.update(w.replace("’", "'") for w in _LOWER.findall(text))
        for words, opening in _runs(text):
            if not opening:
                lex.alone.add(fold(" ".join(words)))
            for n, word in enumerate(words):
                if n or not opening:
                    lex.confirmed.add(fold(word))
    return lex


def merge_prefixes(lex: Lexicon, spellings: Mapping[str, Collection[str]]) -> None:
    """Join keys by the first-letters rule: "Postgres" into "PostgreSQL" (``spellings``:
    key -> the spellings seen of it). Recorded in ``lex.merged``."""
    singles = sorted(k for k in spellings if " " not in next(iter(spellings[k]), " "))
    for short in singles:
        if len(short) < MIN_PREFIX:
            continue
        for long in singles:
            if long == short or not long.startswith(short):
                continue
            if len(long) - len(short) > MAX_ENDING:
                continue
            endings = {s[len(short) :] for s in spellings[long] if fold(s) == long}
            if any(e and e.isupper() and e.isalpha() for e in endings):
                lex.merged[short] = lex.merged.get(long, long)
                break
