"""``memoryd serve`` as a user runs it: the real command in a subprocess, on a free port.

Tests that drive memoryd from another program (the OpenClaw plugin's Node tests,
mem0's Python and npm SDKs) start it here, with the code under test and a
temporary HOME and ``MEMORYD_HOME``.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx

from tests.conftest import free_port
from tests.pipelines_kit import code_under_test


@contextmanager
def memoryd_serve(tmp_path: Path, **env: str) -> Iterator[str]:
    """Run ``memoryd serve`` until the block ends; yields its URL. ``env`` adds to the
    server's environment (``MEMORYD_AUTH__KEYS``...); HOME is ``tmp_path/userhome``."""
    port = free_port()
    full = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(tmp_path / "userhome"),
        "XDG_CACHE_HOME": os.environ["XDG_CACHE_HOME"],
        **code_under_test(),
        "MEMORYD_HOME": str(tmp_path / "memoryd"),
        **env,
    }
    log_path = tmp_path / "serve.log"
    with log_path.open("w") as log:
        proc = subprocess.Popen(
            [str(Path(sys.executable).with_name("memoryd")), "serve", "--port", str(port)],
            env=full,
            cwd=tmp_path,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        url = f"http://127.0.0.1:{port}"
        try:
            deadline = time.monotonic() + 120  # model load on a busy machine
            while True:
                try:
                    if httpx.get(f"{url}/health", timeout=2).status_code == 200:
                        break
                except httpx.TransportError:
                    pass
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"memoryd serve did not start:\n{log_path.read_text()}")
                time.sleep(0.2)
            yield url
        finally:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def node_test_counts(cwd: Path, env: dict[str, str], node: str) -> dict[str, str]:
    """Run ``node --test`` in ``cwd``; its pass / fail / skipped / cancelled counts (it
    must exit 0)."""
    import re

    proc = subprocess.run(
        [node, "--test"], cwd=cwd, env=env, capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return dict(re.findall(r"^# (pass|fail|skipped|cancelled) (\d+)$", proc.stdout, re.M))
