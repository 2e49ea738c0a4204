"""memoryd's promoted block in MEMORY.md: found, cut out and written back, byte-exact.

The block is memoryd's; everything around it is the agent's and is kept byte
for byte: CRLF stays CRLF, a line holding U+2028 or a form feed is one line (only
``\\n`` ends a line here, as in :func:`memoryd.workspace.files.split_lines`),
trailing blank lines stay. The block looks like::

    ## Promoted by memoryd
    <!-- memoryd:promoted · recalled often; added by `memoryd run promote`; edit freely -->
    - The billing service listens on port 8230
    <!-- /memoryd:promoted -->

:mod:`memoryd.pipelines.promote` decides its lines each night;
:mod:`memoryd.pipelines.sync` skips the lines memoryd wrote there (derived
content is never read back as a source fact).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

BLOCK_TITLE = "## Promoted by memoryd"
BLOCK_START = (
    "<!-- memoryd:promoted · recalled often; added by `memoryd run promote`; edit freely -->"
)
BLOCK_END = "<!-- /memoryd:promoted -->"
_BULLET = re.compile(r"^\s{0,3}[-*+]\s+")


@dataclass(frozen=True)
class Block:
    """A MEMORY.md cut around the promoted block."""

    head: str  # the exact text before the block (its title line included in the block)
    lines: list[str]  # the block's entries: no bullet, no line end, blank lines dropped
    tail: str  # the exact text after the block's end marker line
    newline: str  # the file's line end: "\r\n" when it uses CRLF
    first_line: int  # 1-based line of the block's first line (0: no block)
    last_line: int  # 1-based line of its end marker

    @property
    def found(self) -> bool:
        return self.first_line > 0


def _strip_cr(line: str) -> str:
    return line[:-1] if line.endswith("\r") else line


def entry_text(line: str) -> str:
    """A block line as the text it says: no bullet, no surrounding blanks."""
    line = _strip_cr(line).strip()
    m = _BULLET.match(line)
    return line[m.end() :].strip() if m else line


def split_block(content: str) -> Block:
    """``content`` cut around its promoted block (the whole file is ``head`` without one)."""
    pieces = content.split("\n")
    newline = "\r\n" if "\r\n" in content else "\n"
    plain = [_strip_cr(p) for p in pieces]
    try:
        start = plain.index(BLOCK_START)
        end = plain.index(BLOCK_END, start)
    except ValueError:
        return Block(content, [], "", newline, 0, 0)
    first = start - 1 if start > 0 and plain[start - 1].strip() == BLOCK_TITLE else start
    offsets = [0]
    for p in pieces:
        offsets.append(offsets[-1] + len(p) + 1)
    head = content[: offsets[first]]
    tail = content[min(offsets[end + 1], len(content)) :]
    lines = [entry_text(p) for p in plain[start + 1 : end] if p.strip()]
    return Block(head, lines, tail, newline, first + 1, end + 1)


def _line_count(text: str) -> int:
    return text.count("\n") + (0 if not text or text.endswith("\n") else 1)


def _ends_blank(text: str) -> bool:
    """Whether the last line of ``text`` is blank."""
    parts = (text if text.endswith("\n") else text + "\n").split("\n")
    return len(parts) >= 2 and not parts[-2].strip()


def render(block: Block, lines: list[str]) -> str:
    """The file with the block holding ``lines``; the agent's text around it untouched.

    No lines, no block: a bare title and its markers would be a chunk that says nothing
    ("Promoted by memoryd ... recalled often") and yet matches queries."""
    nl = block.newline
    if not lines:
        return block.head + block.tail if block.found else block.head
    body = nl.join([BLOCK_TITLE, BLOCK_START, *[f"- {t}" for t in lines], BLOCK_END]) + nl
    if block.found:
        return block.head + body + block.tail
    head = block.head
    if head and not head.endswith("\n"):
        head += nl
    if head and not _ends_blank(head):
        head += nl  # one blank line between the agent's text and the block
    return head + body


def room(block: Block, max_lines: int) -> int:
    """How many promoted lines fit while the whole file stays within ``max_lines``."""
    fixed = _line_count(block.head) + _line_count(block.tail) + 3  # title and both markers
    if not block.found and block.head:
        fixed += 0 if _ends_blank(block.head) else 1  # the blank line render adds
    return max_lines - fixed


def fit(
    block: Block, kept: list[str], new: list[str], max_lines: int
) -> tuple[list[str], int, int]:
    """The block's lines: ``kept`` (oldest first) then ``new``, within ``max_lines``.

    Returns the lines, how many of ``new`` went in and how many kept lines made room
    (the oldest first).
    """
    space = max(0, room(block, max_lines))
    added = new[:space]
    keep = max(0, space - len(added))
    dropped = max(0, len(kept) - keep)
    return kept[dropped:] + added, len(added), dropped
