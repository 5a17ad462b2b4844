"""A real PostgreSQL server for the tests, from Debian's ``postgresql`` package: ``initdb`` in a
temporary folder, ``pg_ctl`` on a free port on 127.0.0.1, stopped (and its folder removed) after.
``initdb`` refuses root, and the tests and CI run as root: then the server runs as the
unprivileged ``postgres`` user that the package creates (``runuser -u postgres``).

``.ci/run`` and ``make postgres`` install the package. Without it, the tests that need the server
skip with a line saying so, except under ``CI=true``, where a missing server is a failure.
"""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path

__all__ = ["PostgresServer", "find_bin", "missing_reason"]


def find_bin(name: str) -> str | None:
    """The newest installed PostgreSQL's ``name`` (initdb, pg_ctl): Debian keeps them in
    /usr/lib/postgresql/VERSION/bin, off PATH."""
    found = sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"), key=lambda p: int(p.split("/")[4]))
    return found[-1] if found else shutil.which(name)


def missing_reason() -> str | None:
    """Why a server cannot be started here (None: it can)."""
    if not find_bin("initdb") or not find_bin("pg_ctl"):
        return "PostgreSQL is not installed (make postgres, or apt-get install postgresql)"
    if os.geteuid() == 0:
        try:
            pwd.getpwnam("postgres")
        except KeyError:
            return "running as root and there is no 'postgres' user to run the server as"
        if not shutil.which("runuser"):
            return "running as root and runuser is missing"
    return None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class PostgresServer:
    """One server; :meth:`database` makes a new empty database and gives its URL."""

    def __init__(self, durable: bool = False) -> None:
        """``durable``: PostgreSQL's default fsync and commit settings (benchmarks); the tests run
        without them (fsync, synchronous_commit and full_page_writes off: faster, no crash safety
        needed for a throwaway server)."""
        self.durable = durable
        self.root = Path(tempfile.mkdtemp(prefix="denominator-pg-"))
        self.data = self.root / "data"
        self.port = _free_port()
        self._as: list[str] = []
        if os.geteuid() == 0:
            shutil.chown(self.root, "postgres")
            os.chmod(self.root, 0o700)
            self._as = ["runuser", "-u", "postgres", "--"]
        self._made = 0

    def _run(self, *argv: str) -> None:
        subprocess.run([*self._as, *argv], check=True, capture_output=True, text=True, timeout=120)

    def start(self) -> PostgresServer:
        self._run(
            find_bin("initdb"),
            "-D",
            str(self.data),
            "-A",
            "trust",
            "-U",
            "postgres",
            "-E",
            "UTF8",
            "--no-sync",
        )
        self.restart()
        return self

    @property
    def admin_url(self) -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/postgres"

    def database(self, name: str | None = None) -> str:
        """A new empty database; its URL."""
        import psycopg

        self._made += 1
        name = name or f"t{os.getpid()}_{self._made}_{int(time.time() * 1000) % 100000}"
        with psycopg.connect(self.admin_url, autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        return f"postgresql://postgres@127.0.0.1:{self.port}/{name}"

    def halt(self) -> None:
        """The server dies (an immediate shutdown, as a crash or a lost machine), its data kept."""
        self._run(find_bin("pg_ctl"), "-D", str(self.data), "-m", "immediate", "-w", "stop")

    def restart(self) -> None:
        """The server up on its data (at :meth:`start`, and again after :meth:`halt`, on the same
        port, with the same data)."""
        options = f"-p {self.port} -k {self.root} -c listen_addresses=127.0.0.1 -c max_connections=300"
        if not self.durable:
            options += " -c fsync=off -c synchronous_commit=off -c full_page_writes=off"
        self._run(
            find_bin("pg_ctl"),
            "-D",
            str(self.data),
            "-o",
            options,
            "-l",
            str(self.root / "log"),
            "-w",
            "start",
        )

    def stop(self) -> None:
        try:
            self._run(find_bin("pg_ctl"), "-D", str(self.data), "-m", "immediate", "-w", "stop")
        except subprocess.SubprocessError:
            pass
        shutil.rmtree(self.root, ignore_errors=True)
