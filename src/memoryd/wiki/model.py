"""The wiki's records: a :class:`Claim` (one statement with its evidence) on a :class:`Page`.

A claim's id is a digest of its normalised text alone, not of the page it is on:
the same statement compiled again keeps its id even when a recompile moves it to
another page (a name that became an entity page), so an edit applied to it (retired,
say) still finds it. The same statement on two pages is one claim with one id.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from dataclasses import asdict, dataclass, field
from typing import Any

from memoryd.errors import InvalidInputError

STATUSES = ("current", "stale", "contested", "superseded")
RETIRED = ("superseded", "stale")  # what wiki_apply may set a claim to
MAX_TITLE = 120
# a file name is at most 255 bytes on most file systems: room for ".md" and a margin
MAX_TITLE_BYTES = 200
# names the vault's own files take: a page by that name would overwrite them
RESERVED_TITLES = frozenset({"index", "_dashboards"})
_UNSAFE = re.compile(r'[\\/:*?"<>|#^\[\]\x00-\x1f\x7f]+')
# control, format (bidi overrides, zero-width), private-use and surrogate code points:
# invisible or unencodable in a file name, so never part of one (white space becomes a space)
_INVISIBLE = frozenset({"Cc", "Cf", "Co", "Cs"})


@dataclass
class Claim:
    """One statement on a page. ``evidence`` cites where it was said: ``fact:<memory id>``
    or a workspace file's lines (``memory/2026-03-01.md#L12-L14``)."""

    id: str
    page: str  # the page title
    text: str
    evidence: list[str]
    status: str = "current"
    valid_from: str | None = None  # ISO dates
    valid_until: str | None = None
    confirmed: str | None = None  # when a source last said it (freshness)
    confidence: float = 1.0
    origin: str = "fact"  # fact | memory-md | applied
    note: str | None = None  # why it is contested / retired

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Claim:
        return cls(**{k: data[k] for k in cls.__dataclass_fields__ if k in data})


@dataclass
class Page:
    title: str
    kind: str  # entity | topic
    claims: list[Claim] = field(default_factory=list)
    links: list[str] = field(default_factory=list)  # titles of pages this one links to

    @property
    def file_name(self) -> str:
        return f"{self.title}.md"

    def to_json(self) -> dict[str, Any]:
        return {
            "title": self.title,
            "kind": self.kind,
            "file": self.file_name,
            "links": self.links,
            "claims": [c.to_json() for c in self.claims],
        }


def normalise(text: str) -> str:
    return " ".join(unicodedata.normalize("NFC", text).split())


def claim_id(text: str) -> str:
    digest = hashlib.blake2b(normalise(text).casefold().encode(), digest_size=5)
    return "c" + digest.hexdigest()


def page_claim_id(page: str, text: str) -> str:
    """The id claims had before it left out the page: a journal written then retires
    claims by it, and still does."""
    digest = hashlib.blake2b(f"{page}\0{normalise(text).casefold()}".encode(), digest_size=5)
    return "c" + digest.hexdigest()


def page_title(raw: str, *, strict: bool = True) -> str:
    """A title that is also a safe, Obsidian-friendly file name (``[[Title]]`` finds it).

    ``strict`` (a caller's title): a path-like one is refused. Otherwise (a heading
    or a category the compiler names a page after) its slashes become spaces."""
    if not isinstance(raw, str):
        raise InvalidInputError("a page title must be text", 'pass a name such as "Ana Ruiz"')
    if strict and ("/" in raw or "\\" in raw or raw.strip().startswith(".")):
        raise InvalidInputError(
            f"page title {raw[:80]!r} looks like a path",
            "a page is named, not located: no / or \\, and no leading dot",
        )
    title = "".join(
        " " if ch.isspace() else "" if unicodedata.category(ch) in _INVISIBLE else ch
        for ch in unicodedata.normalize("NFC", raw)
    )
    title = " ".join(_UNSAFE.sub(" ", title).split()).strip(". ")
    if not strict:  # a name the compiler found: always a page, never an error
        title = title[:MAX_TITLE].encode()[:MAX_TITLE_BYTES].decode(errors="ignore")
        return title.rstrip(". ") or "Untitled"
    if not title:
        raise InvalidInputError(
            f"{raw[:80]!r} is not a usable page title",
            'use letters or digits; / \\ : * ? " < > | # ^ [ ] are not allowed',
        )
    if len(title) > MAX_TITLE or len(title.encode()) > MAX_TITLE_BYTES:
        raise InvalidInputError(
            f"page title is {len(title)} characters, {len(title.encode())} bytes in UTF-8"
            f" (at most {MAX_TITLE} characters and {MAX_TITLE_BYTES} bytes: it is a file name)",
            "use a shorter name",
        )
    if title.casefold() in RESERVED_TITLES:
        raise InvalidInputError(
            f"{title!r} is the name of the vault's own file", "name the page after its subject"
        )
    return title
