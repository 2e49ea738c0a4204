"""Chunking Markdown along headings, in the real model's tokens, with exact line ranges."""

from __future__ import annotations

import itertools

from memoryd.embed import Embedder
from memoryd.settings import WorkspaceSettings
from memoryd.workspace.chunking import ChunkPlan, chunk_markdown, chunk_plan
from memoryd.workspace.files import split_lines


def test_plan_is_capped_by_the_model_window(embedder: Embedder) -> None:
    plan = chunk_plan(WorkspaceSettings(), embedder.max_tokens)
    assert embedder.max_tokens == 256
    assert (plan.size, plan.overlap) == (224, 45)  # min(400, 256 - 32), overlap keeps 80/400
    big = chunk_plan(WorkspaceSettings(), 8192)
    assert (big.size, big.overlap) == (400, 80)  # a large-window model gets the OpenClaw default


def test_sections_follow_headings_and_cite_their_lines(embedder: Embedder) -> None:
    text = "# Title\n\n## Projects\n- memoryd\n- bench\n\n## People\n- Sam\n"
    lines = split_lines(text)
    chunks = chunk_markdown(lines, embedder.count_tokens, ChunkPlan(224, 45))
    assert [(c.start_line, c.end_line) for c in chunks] == [(1, 5), (7, 8)]
    # the bare "# Title" joined the first section instead of becoming a chunk alone
    assert chunks[0].text == "# Title\n\n## Projects\n- memoryd\n- bench"
    assert chunks[0].headings == ("Title", "Projects")
    assert chunks[1].headings == ("Title", "People")
    for c in chunks:
        assert c.text == "\n".join(lines[c.start_line - 1 : c.end_line])


def test_long_sections_become_overlapping_windows_within_the_size(embedder: Embedder) -> None:
    body = "\n".join(
        f"- note {i}: the deploy pipeline for service {i} uses blue green rollout"
        for i in range(80)
    )
    lines = split_lines("## Log\n" + body + "\n")
    plan = ChunkPlan(100, 20)
    chunks = chunk_markdown(lines, embedder.count_tokens, plan)
    assert len(chunks) > 5
    for c in chunks:
        assert embedder.count_tokens(c.text) <= plan.size
        assert c.text == "\n".join(lines[c.start_line - 1 : c.end_line])
    for a, b in itertools.pairwise(chunks):
        assert a.start_line < b.start_line <= a.end_line  # overlap, always moving forward
        shared = "\n".join(lines[b.start_line - 1 : a.end_line])
        assert 0 < embedder.count_tokens(shared) <= plan.overlap
    assert chunks[0].start_line == 1 and chunks[-1].end_line == len(lines)


def test_headings_inside_code_fences_do_not_split(embedder: Embedder) -> None:
    text = "## Setup\n```bash\n# install\npip install memoryd\n```\n## Next\ntext\n"
    chunks = chunk_markdown(split_lines(text), embedder.count_tokens, ChunkPlan(224, 45))
    assert [(c.start_line, c.end_line) for c in chunks] == [(1, 5), (6, 7)]


def test_one_huge_line_is_cut_between_words(embedder: Embedder) -> None:
    line = " ".join(f"word{i}" for i in range(600))
    chunks = chunk_markdown(["# Dump", line], embedder.count_tokens, ChunkPlan(64, 8))
    assert len(chunks) > 3
    assert {(c.start_line, c.end_line) for c in chunks[1:]} == {(2, 2)}
    assert " ".join(chunks[-1].text.split()[-1:]) == "word599"


def test_crlf_bom_and_blank_files(embedder: Embedder) -> None:
    lines = split_lines("\ufeff# A\r\nline one\r\n\r\n")
    assert lines == ["# A", "line one", ""]
    (chunk,) = chunk_markdown(lines, embedder.count_tokens, ChunkPlan(224, 45))
    assert chunk.text == "# A\nline one" and (chunk.start_line, chunk.end_line) == (1, 2)
    assert chunk_markdown(split_lines("\n\n  \n"), embedder.count_tokens, ChunkPlan(224, 45)) == []
