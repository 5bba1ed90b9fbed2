"""One running orchestrator per project: an exclusive ``flock`` on ``.fyan/run.lock``.

The kernel releases the lock when the process dies (even on SIGKILL), so a crashed run never
leaves a stale lock. The file records the holder's pid and start time for the refusal message.

``lock_holder`` is the one test of "is a run alive on this project?" (``fyan status``, ``fyan
daemon status``, the dashboard, ``fyan resume``): a run is alive exactly while some process
holds the lock, whatever the store or ``daemon.json`` say. ``read_run_state`` reads
``.fyan/daemon.json`` (pid, start, dashboard URL and token of a background daemon).
"""

from __future__ import annotations

import fcntl
import json
import os
import socket
import time
from pathlib import Path
from types import TracebackType
from typing import IO, Any

from fyan.errors import LockedError

STATE_FILE = "daemon.json"


def lock_holder(state_dir: Path) -> str | None:
    """Who holds the run lock in ``state_dir`` (``.fyan``): "pid N on host since T", or None
    when nobody does (no run is alive)."""
    path = state_dir / "run.lock"
    if not path.exists():
        return None
    try:
        fh = open(path, "a+", encoding="utf-8")
    except OSError:
        return None
    with fh:
        try:
            fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            fh.seek(0)
            return fh.read().strip() or "another process"
        fcntl.flock(fh.fileno(), fcntl.LOCK_UN)
    return None


def read_run_state(state_dir: Path) -> dict[str, Any] | None:
    """``state_dir/daemon.json`` as a dict, or None when absent or unreadable."""
    try:
        return json.loads((state_dir / STATE_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


class ProjectLock:
    def __init__(self, path: Path) -> None:
        self.path = path
        self._fh: IO[str] | None = None

    def acquire(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fh = open(self.path, "a+", encoding="utf-8")
        try:
            fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            fh.seek(0)
            holder = fh.read().strip() or "another process"
            fh.close()
            raise LockedError(
                f"{self.path.parent.parent}: another Fyan run is already working on this project ({holder})",
                hint="wait for it to finish, or stop it; `fyan status` works meanwhile",
            ) from None
        fh.seek(0)
        fh.truncate()
        fh.write(f"pid {os.getpid()} on {socket.gethostname()} since {time.strftime('%Y-%m-%d %H:%M:%S')}")
        fh.flush()
        self._fh = fh

    def release(self) -> None:
        if self._fh is not None:
            fcntl.flock(self._fh.fileno(), fcntl.LOCK_UN)
            self._fh.close()
            self._fh = None

    def __enter__(self) -> ProjectLock:
        self.acquire()
        return self

    def __exit__(self, t: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None) -> None:
        self.release()
