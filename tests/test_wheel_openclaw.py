"""The OpenClaw plugin and its skill ship inside the wheel, and ``memoryd setup openclaw``
finds them in an installed (non-editable) memoryd.

The wheel is built from this checkout (``pip wheel --no-deps``) and installed into a
fresh virtual environment (``--no-deps``). Its dependencies are this environment's
(the same pinned versions), reached through a ``.pth`` line, so no second copy is
downloaded; the ``memoryd`` package itself comes from the wheel alone (checked).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
OFFLINE = re.compile(r"No matching distribution|Could not find a version|connection|network", re.I)


def test_the_wheel_ships_the_plugin_and_setup_finds_it(tmp_path: Path) -> None:
    # pip run with the checkout's src/ on PYTHONPATH would take it for an installed memoryd
    clean = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    dist = tmp_path / "dist"
    build = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(dist), str(REPO)],
        env=clean,
        capture_output=True,
        text=True,
        timeout=600,
    )
    if build.returncode != 0 and OFFLINE.search(build.stderr):
        pytest.skip(f"pip cannot fetch the build backend: {build.stderr[-300:]}")
    assert build.returncode == 0, build.stderr[-3000:]
    (wheel,) = dist.glob("memoryd-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    plugin = "memoryd/integrations/openclaw/"
    for shipped in ("openclaw.plugin.json", "index.js", "lib/diary.js", "lib/session.js"):
        assert plugin + shipped in names, sorted(n for n in names if "integrations" in n)
    assert plugin + "skills/memoryd/SKILL.md" in names
    assert not [n for n in names if n.startswith((plugin + "test/", plugin + "e2e/"))]

    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    site = Path(
        subprocess.run(
            [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    )
    install = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "--python",
            str(python),
            "install",
            "-q",
            "--no-deps",
            str(wheel),
        ],
        env=clean,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert install.returncode == 0, install.stderr[-3000:]
    # after the install: pip must not see this environment's memoryd as already installed
    (site / "shared_dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")

    home = tmp_path / "home"
    home.mkdir()
    env = {
        "PATH": f"{venv / 'bin'}:/usr/bin:/bin",  # no openclaw: setup shows the install command
        "HOME": str(home),
        "MEMORYD_HOME": str(tmp_path / "memoryd"),
        "XDG_CACHE_HOME": os.environ["XDG_CACHE_HOME"],
    }  # and no PYTHONPATH: the checkout's src/ must not be found
    where = subprocess.run(
        [str(python), "-c", "import memoryd; print(memoryd.__file__)"],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    assert Path(where).is_relative_to(site), where
    setup = subprocess.run(
        [str(venv / "bin" / "memoryd"), "setup", "openclaw", "--dry-run"],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert setup.returncode == 0, setup.stdout + setup.stderr
    shipped_dir = site / "memoryd" / "integrations" / "openclaw"
    assert f'"{shipped_dir}"' in setup.stdout, setup.stdout
    assert (shipped_dir / "skills" / "memoryd" / "SKILL.md").is_file()
    assert not (home / ".openclaw" / "openclaw.json").exists()  # a dry run writes nothing
