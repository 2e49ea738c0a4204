"""Small helpers shared by the benchmark scripts (machine info, percentiles, RSS)."""

from __future__ import annotations

import os
import platform
import signal
import subprocess
import sys
import time
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np

REPO_ROOT = Path(__file__).resolve().parents[1]


def percentile_ms(seconds: list[float], q: float) -> float | None:
    if not seconds:
        return None
    return round(float(np.percentile(np.asarray(seconds) * 1000.0, q)), 2)


def proc_status_kb(field: str) -> int | None:
    """A ``kB`` field of /proc/self/status (``VmRSS``, ``VmHWM``); None off Linux."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1])
    except OSError:
        return None
    return None


def rss_mb() -> float | None:
    kb = proc_status_kb("VmRSS")
    return None if kb is None else round(kb / 1024, 1)


def loadavg() -> list[float] | None:
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except OSError:
        return None


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def _version(dist: str) -> str | None:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None


def _git_commit() -> str | None:
    try:
        out = subprocess.run(
            ["git", "-C", str(REPO_ROOT), "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
            timeout=5,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() or None


def _src_dirty() -> bool | None:
    """Whether src/ has uncommitted changes (results then describe a working tree)."""
    try:
        out = subprocess.run(
            ["git", "-C", str(REPO_ROOT), "status", "--porcelain", "--", "src"],
            capture_output=True,
            text=True,
            timeout=5,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return bool(out.stdout.strip()) if out.returncode == 0 else None


def machine_info() -> dict[str, Any]:
    mem_total = None
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                mem_total = round(int(line.split()[1]) / 1024 / 1024, 1)
    except OSError:
        pass
    return {
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "platform": platform.platform(),
        "cpu": _cpu_model(),
        "cpus": os.cpu_count(),
        "mem_total_gb": mem_total,
        "python": platform.python_version(),
        "numpy": _version("numpy"),
        "onnxruntime": _version("onnxruntime"),
        "memoryd": _version("memoryd"),
        "git_commit": _git_commit(),
        "src_dirty": _src_dirty(),
        "loadavg_start": loadavg(),
    }


def _busy_seconds() -> float | None:
    """CPU seconds all processes have spent busy since boot (from /proc/stat)."""
    try:
        fields = Path("/proc/stat").read_text().splitlines()[0].split()[1:]
    except (OSError, IndexError):
        return None
    user, nice, system, _idle, _iowait, irq, softirq, steal = (int(x) for x in fields[:8])
    return (user + nice + system + irq + softirq + steal) / os.sysconf("SC_CLK_TCK")


def _own_seconds() -> float:
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


class CpuWatch:
    """How much CPU other processes used while we ran: flags a noisy machine.

    ``foreign_cpu_share`` is the fraction of all cores' time spent busy on
    work that was not this process (or its waited-for children).
    """

    def __init__(self) -> None:
        self.wall = time.perf_counter()
        self.busy = _busy_seconds()
        self.own = _own_seconds()

    def report(self) -> dict[str, Any]:
        wall = time.perf_counter() - self.wall
        busy = _busy_seconds()
        own = _own_seconds() - self.own
        out: dict[str, Any] = {"wall_s": round(wall, 1), "own_cpu_s": round(own, 1)}
        if busy is not None and self.busy is not None:
            foreign = max(0.0, busy - self.busy - own)
            out["foreign_cpu_s"] = round(foreign, 1)
            out["foreign_cpu_share"] = round(foreign / (wall * (os.cpu_count() or 1)), 3)
        return out


def embed_settings(mem: Any) -> dict[str, Any]:
    """The embedding provider and, for the local ONNX model, its runtime settings."""
    embed = mem.settings.embed
    out: dict[str, Any] = {"provider": embed.provider}
    if embed.provider == "onnx":
        out["onnx"] = embed.onnx.model_dump(mode="json")
    return out


def exit_on_sigterm() -> None:
    """Turn SIGTERM into SystemExit so ``finally`` blocks and temporary directories
    are cleaned up (a killed 100k run otherwise leaves its ~700 MB store in /tmp)."""
    signal.signal(signal.SIGTERM, lambda signum, _frame: sys.exit(128 + signum))


def run_child(cmd: list[str]) -> None:
    """``subprocess.run(cmd, check=True)``, but a stopped parent stops the child with
    SIGTERM (which it turns into a clean exit) instead of leaving it or killing it."""
    proc = subprocess.Popen(cmd)
    try:
        code = proc.wait()
    except BaseException:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
        raise
    if code:
        raise subprocess.CalledProcessError(code, cmd)
