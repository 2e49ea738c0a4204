"""scripts/quantize_onnx.py on a small real ONNX graph shaped like an exported encoder
layer: the weight MatMuls become int8 except the feed-forward output projection, the
activation-by-activation MatMul stays fp32, and the int8 model still computes nearly the
same vectors, run by onnxruntime and read by memoryd's own ONNX embedder."""

from __future__ import annotations

import importlib.util
import shutil
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

from memoryd.embed.onnx import DEFAULT_TOKENIZER, OnnxEmbedder  # noqa: E402
from memoryd.settings import OnnxEmbedSettings  # noqa: E402

SCRIPT = Path(__file__).resolve().parent.parent / "scripts" / "quantize_onnx.py"
VOCAB, DIM = 31_000, 32  # MiniLM's tokenizer ids stay below 30,522


def _script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("quantize_onnx", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _encoder(path: Path) -> None:
    """input_ids -> embedding -> q projection, q x q^T (activations only), FFN in and out:
    (batch, tokens, DIM) hidden states, like an exported sentence encoder."""
    rng = np.random.default_rng(7)

    def weight(name: str, *shape: int) -> onnx.TensorProto:
        return numpy_helper.from_array(rng.normal(0, 0.2, shape).astype(np.float32), name)

    nodes = [
        helper.make_node("Gather", ["emb", "input_ids"], ["h0"], name="/embeddings/Gather"),
        helper.make_node("MatMul", ["h0", "wq"], ["q"], name="/encoder/layer.0/attention/attn/q/MatMul"),
        helper.make_node("Transpose", ["q"], ["qt"], perm=[0, 2, 1], name="/t"),
        helper.make_node("MatMul", ["q", "qt"], ["scores"], name="/encoder/layer.0/attention/attn/MatMul"),
        helper.make_node("Softmax", ["scores"], ["p"], axis=-1, name="/softmax"),
        helper.make_node("MatMul", ["p", "q"], ["ctx"], name="/encoder/layer.0/attention/attn/MatMul_1"),
        helper.make_node("MatMul", ["ctx", "wi"], ["inter"], name="/encoder/layer.0/intermediate/dense/MatMul"),
        helper.make_node("Relu", ["inter"], ["act"], name="/relu"),
        helper.make_node("MatMul", ["act", "wo"], ["out"], name="/encoder/layer.0/output/dense/MatMul"),
        helper.make_node("Cast", ["attention_mask"], ["mask_i"], to=TensorProto.FLOAT, name="/cast"),
        helper.make_node("Unsqueeze", ["mask_i", "axis"], ["mask_f"], name="/unsqueeze"),
        helper.make_node("Mul", ["out", "mask_f"], ["last_hidden_state"], name="/mask"),
    ]  # fmt: skip
    graph = helper.make_graph(
        nodes,
        "encoder",
        [
            helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["b", "s"]),
            helper.make_tensor_value_info("attention_mask", TensorProto.INT64, ["b", "s"]),
        ],
        [helper.make_tensor_value_info("last_hidden_state", TensorProto.FLOAT, ["b", "s", DIM])],
        [
            weight("emb", VOCAB, DIM),
            weight("wq", DIM, DIM),
            weight("wi", DIM, 4 * DIM),
            weight("wo", 4 * DIM, DIM),
            numpy_helper.from_array(np.array([-1], dtype=np.int64), "axis"),
        ],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=9)
    onnx.checker.check_model(model)
    onnx.save(model, str(path))


@pytest.fixture
def exported(tmp_path: Path) -> Path:
    d = tmp_path / "exported"
    d.mkdir()
    _encoder(d / "model.onnx")
    shutil.copy(DEFAULT_TOKENIZER, d / "tokenizer.json")
    return d


def test_weight_matmuls_are_int8_except_the_ffn_output(exported: Path, tmp_path: Path) -> None:
    script = _script()
    quantise, keep = script.weight_matmuls(exported / "model.onnx")
    assert quantise == [
        "/encoder/layer.0/attention/attn/q/MatMul",
        "/encoder/layer.0/intermediate/dense/MatMul",
    ]
    assert "/encoder/layer.0/output/dense/MatMul" in keep
    assert "/encoder/layer.0/attention/attn/MatMul" in keep  # activations by activations

    out = tmp_path / "int8"
    assert script.quantize(exported, out) == (2, 3)
    model = onnx.load(str(out / "model.onnx"))
    plain = {n.name for n in model.graph.node if n.op_type == "MatMul"}
    assert plain == set(keep)
    assert sum(n.op_type == "MatMulInteger" for n in model.graph.node) == 2
    assert (out / "tokenizer.json").read_bytes() == (exported / "tokenizer.json").read_bytes()

    texts = ["Caroline works as a counselor", "a basketball signed by the team", "ok"]
    fp32 = OnnxEmbedder(OnnxEmbedSettings(model_dir=str(exported), max_tokens=64))
    int8 = OnnxEmbedder(OnnxEmbedSettings(model_dir=str(out), max_tokens=64))
    a, b = fp32.embed(texts), int8.embed(texts)
    assert a.shape == b.shape == (3, DIM)
    cosine = (a * b).sum(axis=1)
    assert cosine.min() > 0.98, cosine
    assert not np.allclose(a, b)  # it is another model, not a copy


def test_a_directory_without_a_model_is_refused(tmp_path: Path) -> None:
    (tmp_path / "tokenizer.json").write_text("{}")
    with pytest.raises(SystemExit, match="exactly one"):
        _script().quantize(tmp_path, tmp_path / "out")
