"""mem0's npm SDK (``mem0ai``, pinned by ``tests/mem0_js/package-lock.json``) against
``memoryd serve``: its quick-start and a user's key, with ``node --test``.

The SDK is installed from the lockfile with ``npm ci`` when ``node_modules`` does not
hold the pinned version (a clean clone, as in CI); with no Node.js or npm the test is
skipped and says what to install. Telemetry is off (``MEM0_TELEMETRY=false``).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.serve_kit import memoryd_serve, node_test_counts

HERE = Path(__file__).resolve().parent / "mem0_js"
NODE = shutil.which("node")
NPM = shutil.which("npm")
pytestmark = pytest.mark.skipif(
    NODE is None or NPM is None,
    reason="Node.js (>= 20) and npm are not installed: install them to run mem0's npm SDK test",
)
KEYS = [
    {"name": "admin", "key": "k-admin", "admin": True},
    {"name": "alice", "key": "k-alice", "users": ["alice"]},
]


def _pinned() -> str:
    lock = json.loads((HERE / "package-lock.json").read_text())
    version: str = lock["packages"]["node_modules/mem0ai"]["version"]
    return version


def _install() -> None:
    """``npm ci`` from the lockfile, unless the pinned SDK is already there."""
    installed = HERE / "node_modules" / "mem0ai" / "package.json"
    if installed.exists() and json.loads(installed.read_text())["version"] == _pinned():
        return
    done = subprocess.run(
        [NPM or "npm", "ci"], cwd=HERE, capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, f"npm ci failed in {HERE}:\n{done.stdout}\n{done.stderr}"


def test_the_npm_sdk_quickstart_against_memoryd_serve(tmp_path: Path) -> None:
    assert _pinned() == "3.3.1"
    _install()
    with memoryd_serve(tmp_path, MEMORYD_AUTH__KEYS=json.dumps(KEYS)) as url:
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": str(tmp_path / "nodehome"),
            "MEM0_TELEMETRY": "false",
            "MEMORYD_URL": url,
            "MEMORYD_ADMIN_KEY": "k-admin",
            "MEMORYD_ALICE_KEY": "k-alice",
        }
        counts = node_test_counts(HERE, env, NODE or "node")
        assert counts == {"pass": "2", "fail": "0", "skipped": "0", "cancelled": "0"}, counts
