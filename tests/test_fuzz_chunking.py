"""Property tests of the Markdown chunker on arbitrary text, in the real
model's tokens: it never crashes, every chunk cites a line range inside the
file, every non-blank body line is in some chunk, a chunk's text is its
lines (unless one over-long line had to be cut), and no chunk is larger than
the token window."""

from __future__ import annotations

import re

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memoryd.embed import Embedder
from memoryd.workspace.chunking import ChunkPlan, chunk_markdown
from memoryd.workspace.files import split_lines
from tests.conftest import FULL

_HEADING = re.compile(r"^#{1,6}([ \t]|$)")

markdown_lines = st.one_of(
    st.sampled_from(["", "# Title", "## Part", "### Deep ###", "```", "~~~", "- item", "   "]),
    st.text(max_size=80),
    st.builds(
        lambda w, n: " ".join([w] * n), st.text(min_size=1, max_size=12), st.integers(1, 120)
    ),
    st.text(alphabet=st.characters(codec="utf-8"), min_size=200, max_size=1500),  # no spaces
)
documents = st.lists(markdown_lines, max_size=60).map("\n".join)
plans = st.builds(
    lambda size, ratio: ChunkPlan(size, min(size // 2, int(size * ratio))),
    st.integers(16, 224),
    st.floats(0, 0.5),
)


@settings(
    max_examples=300 if FULL else 60,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(text=documents, plan=plans)
def test_chunker_properties(embedder: Embedder, text: str, plan: ChunkPlan) -> None:
    lines = split_lines(text)
    chunks = chunk_markdown(lines, embedder.count_tokens, plan)
    covered: set[int] = set()
    for c in chunks:
        assert 1 <= c.start_line <= c.end_line <= len(lines), (c.start_line, c.end_line)
        assert c.text.strip(), "an empty chunk"
        if c.start_line == c.end_line and c.text != lines[c.start_line - 1]:
            # a piece of one over-long line, cut between words (or inside one huge word)
            assert all(w in lines[c.start_line - 1] for w in c.text.split())
        else:
            assert c.text == "\n".join(lines[c.start_line - 1 : c.end_line])
        assert embedder.count_tokens(c.text) <= plan.size, (
            embedder.count_tokens(c.text),
            plan,
            c.text[:200],
        )
        covered.update(range(c.start_line, c.end_line + 1))
    for number, line in enumerate(lines, 1):
        if line.strip() and not _HEADING.match(line):
            assert number in covered, (number, line[:80])
    starts = [(c.start_line, c.end_line) for c in chunks]
    assert starts == sorted(starts), "chunks come in file order"
