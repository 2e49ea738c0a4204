"""The local model's cache of optimised graphs (embed/onnx.py): under MEMORYD_HOME,
only the current graph kept, and ``memoryd cache clean`` for the rest (issue 33)."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from memoryd.cli import app
from memoryd.embed import Embedder
from memoryd.embed.onnx import OnnxEmbedder
from memoryd.settings import Settings


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A MEMORYD_HOME, and a user home of its own (the legacy ~/.cache is in it)."""
    monkeypatch.setenv("MEMORYD_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("HOME", str(tmp_path / "user"))
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.delenv("MEMORYD_EMBED__ONNX__CACHE_DIR", raising=False)
    return tmp_path / "home"


def _old(path: Path, data: bytes = b"x" * 1000) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    past = time.time() - 2 * 86400
    os.utime(path, (past, past))
    return path


def test_the_cache_lives_under_memoryd_home_and_keeps_only_the_current_graph(
    home: Path, embedder: Embedder
) -> None:
    cache = home / "cache" / "onnx"
    assert Settings().embed.onnx.cache_dir == cache
    # what an older memoryd, another onnxruntime or a moved model left behind
    legacy = _old(cache / "0123456789abcdef01234567.onnx")
    other = _old(cache / "aaaaaaaaaaaaaaaaaaaaaaaa.onnx")
    (cache / "aaaaaaaaaaaaaaaaaaaaaaaa.json").write_text(
        json.dumps({"model": str(home / "gone.onnx"), "size": 1, "mtime_ns": 1})
    )
    young = cache / ".bbbb.onnx.999.tmp"
    young.write_bytes(b"being written by another process")
    texts = ["the staging database runs on port 5433"]
    model = OnnxEmbedder(Settings().embed.onnx)
    assert np.allclose(model.embed(texts), embedder.embed(texts), atol=1e-5)
    (current,) = cache.glob("*.onnx")
    assert current not in (legacy, other) and current.stat().st_size > 1_000_000
    assert current.with_suffix(".json").is_file() and not legacy.exists()
    assert not other.exists() and young.exists()  # a young temporary file: left alone
    again = OnnxEmbedder(Settings().embed.onnx)  # loads the cached graph, removes nothing
    assert np.allclose(again.embed(texts), embedder.embed(texts), atol=1e-5)
    assert sorted(cache.glob("*.onnx")) == [current]


def test_cache_clean_removes_stale_graphs_here_and_at_the_old_place(home: Path) -> None:
    runner = CliRunner()
    cache = home / "cache" / "onnx"
    stale = _old(cache / "cccccccccccccccccccccccc.onnx")
    legacy = _old(home.parent / "user" / ".cache" / "memoryd" / "onnx" / "dddd.onnx", b"y" * 5000)
    result = runner.invoke(app, ["cache", "clean", "--dry-run", "--json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert set(report["removed"]) == {str(stale), str(legacy)} and report["freed_bytes"] == 6000
    assert stale.exists() and legacy.exists()
    result = runner.invoke(app, ["cache", "clean"])
    assert result.exit_code == 0 and "removed 2 cached graphs" in result.stdout
    assert not stale.exists() and not legacy.exists()


def test_cache_clean_keeps_the_current_graph_unless_all(home: Path, embedder: Embedder) -> None:
    runner = CliRunner()
    OnnxEmbedder(Settings().embed.onnx)
    (current,) = (home / "cache" / "onnx").glob("*.onnx")
    past = time.time() - 2 * 86400
    os.utime(current, (past, past))
    current.with_suffix(".json").unlink()  # as an older memoryd left it
    result = runner.invoke(app, ["cache", "clean"])
    assert result.exit_code == 0 and "removed 0 cached graphs" in result.stdout
    assert current.exists()
    result = runner.invoke(app, ["cache", "clean", "--all", "--json"])
    assert json.loads(result.stdout)["removed"] == [str(current)] and not current.exists()
