"""The registry of running agents' process groups: every stop path ends what it started,
so no agent keeps running (and billing) after Fyan stopped.

A command agent (``fyan.agents.providers.command``) runs as its own process group (its own
session), so everything it starts — shells, language servers, sub-agents — shares one group
id. The agent's provider reports the group here right after starting it (``register``) and
again when the call ends (``unregister``: whatever is left of the group is ended then, so a
background process of a finished agent cannot write files or bill later). While it runs, a
watcher notices when the agent's own process (the group leader) has exited and ends the rest
of the group at once: a background process that kept the agent's output pipe open would
otherwise hold the call open until its timeout. The stop paths end
every group still registered (``end_all``): Ctrl-C, SIGTERM, ``fyan daemon stop`` and any
other exit of a run (``fyan.orchestrator.engine``, ``fyan.daemon``).

While a daemon or run holds a project (``activate``), the registry is also written to
``.fyan/agents.json`` (next to ``daemon.json``; operational bookkeeping, not stage state), so
that after ``kill -9`` the next start ends the groups the killed process left running
(``end_leftovers``). A recorded group is ended only when it is provably the same one: the
group's processes must carry the recorded group id, the leader (when still alive) its recorded
start time (``/proc/<pid>/stat`` field 22, clock ticks since boot) and the machine the same
boot id; a group id reused by an unrelated program is left alone.

Ending a group: SIGTERM to the group, then SIGKILL after ``grace_s`` seconds to whatever is
left. Command agents also make their scratch folders (``fyan-command-*``) under
``scratch_dir()`` — ``.fyan/tmp/`` while a project is active — which ``activate`` and
``deactivate`` empty, so none piles up after a kill.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import threading
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from fyan import logs

STATE_FILE = "agents.json"
SCRATCH_PREFIX = "fyan-command-"
DEFAULT_GRACE_S = 3.0


@dataclass(frozen=True)
class Group:
    """A registered process group: ``pgid`` (= the leader's pid), what it is (``label``), when
    it started (``started``, POSIX seconds), and the identity of its leader (``start_ticks``:
    ``/proc/<pid>/stat`` start time; ``boot_id``: ``/proc/sys/kernel/random/boot_id``)."""

    pgid: int
    label: str
    started: float
    start_ticks: int | None = None
    boot_id: str | None = None


def _boot_id() -> str | None:
    try:
        return Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        return None


def _stat(pid: int) -> tuple[str, int, int] | None:
    """(state, process group id, start time in clock ticks) of ``pid`` from ``/proc``, or None."""
    try:
        raw = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    rest = raw[raw.rindex(")") + 2:].split()
    try:
        return rest[0], int(rest[2]), int(rest[19])
    except (IndexError, ValueError):
        return None


def members(group: Group) -> list[int]:
    """Live (non-zombie) processes of ``group`` when it is provably the recorded one (module
    docstring); empty when it has ended or its id now belongs to someone else."""
    if not Path("/proc").is_dir():  # no /proc: only groups of this process are known to be ours
        try:
            os.killpg(group.pgid, 0)
        except (ProcessLookupError, PermissionError):
            return []
        return [group.pgid]
    if group.boot_id is not None and _boot_id() not in (None, group.boot_id):
        return []
    leader = _stat(group.pgid)
    if leader is not None and group.start_ticks is not None and leader[2] != group.start_ticks and leader[1] == group.pgid:
        return []  # the pid leads another group now: not ours
    found = []
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        st = _stat(int(entry.name))
        if st is None or st[1] != group.pgid or st[0] == "Z":
            continue
        if group.start_ticks is not None and st[2] < group.start_ticks:
            continue  # older than the leader: cannot belong to this group
        found.append(int(entry.name))
    return found


def end_groups(groups: list[Group], grace_s: float = DEFAULT_GRACE_S) -> list[Group]:
    """End every group of ``groups`` that still has processes: SIGTERM, then SIGKILL after
    ``grace_s`` seconds. Returns the groups that had processes."""
    alive = [g for g in groups if members(g)]
    _signal(alive, signal.SIGTERM)
    deadline = time.monotonic() + grace_s
    left = alive
    while left and time.monotonic() < deadline:
        time.sleep(0.05)
        left = [g for g in left if members(g)]
    _signal(left, signal.SIGKILL)
    return alive


def _signal(groups: list[Group], sig: int) -> None:
    for g in groups:
        try:
            os.killpg(g.pgid, sig)
        except (ProcessLookupError, PermissionError):
            pass


class Registry:
    """The process groups of running agents (module docstring); thread-safe. With ``path``
    every change is written to that file (atomically)."""

    def __init__(self, path: Path | None = None) -> None:
        self.path = path
        self._groups: dict[int, Group] = {}
        self._lock = threading.Lock()

    def groups(self) -> list[Group]:
        with self._lock:
            return list(self._groups.values())

    def add(self, pid: int, label: str) -> Group:
        st = _stat(pid)
        group = Group(pgid=pid, label=label, started=time.time(), start_ticks=st[2] if st else None, boot_id=_boot_id())
        with self._lock:
            self._groups[group.pgid] = group
            self._save()
        if st is not None:
            threading.Thread(target=self._watch_leader, args=(group,), daemon=True,
                             name=f"fyan-agent-{pid}").start()
        return group

    def _watch_leader(self, group: Group, every_s: float = 0.1) -> None:
        """When the group's leader (the agent itself) has exited — a zombie not yet reaped, or
        gone — end what it left in its group, and stop watching."""
        while True:
            with self._lock:
                if group.pgid not in self._groups:
                    return
            st = _stat(group.pgid)
            if st is None or st[0] == "Z" or st[2] != group.start_ticks:
                if members(group):
                    end_groups([group], grace_s=1.0)
                return
            time.sleep(every_s)

    def end(self, group: Group, grace_s: float = 1.0) -> bool:
        """End what is left of ``group`` and forget it; True when processes were left."""
        try:
            return bool(end_groups([group], grace_s))
        finally:
            with self._lock:
                self._groups.pop(group.pgid, None)
                self._save()

    def end_all(self, grace_s: float = DEFAULT_GRACE_S) -> list[Group]:
        """End every registered group (a stop path); returns those that still had processes."""
        ended = end_groups(self.groups(), grace_s)
        with self._lock:
            self._groups.clear()
            self._save()
        if ended:
            logs.get().info("agent_groups_ended", groups=[asdict(g) for g in ended])
        return ended

    def _save(self) -> None:
        if self.path is None:
            return
        tmp = self.path.with_suffix(".tmp")
        try:
            tmp.write_text(json.dumps([asdict(g) for g in self._groups.values()]), encoding="utf-8")
            os.replace(tmp, self.path)
        except OSError as e:  # bookkeeping only: never stops an attempt
            logs.get().warning("agent_registry_write_failed", error=str(e))


def end_leftovers(state_dir: Path, grace_s: float = DEFAULT_GRACE_S) -> list[Group]:
    """End the agent process groups recorded in ``state_dir/agents.json`` by a process that
    did not end them (killed with SIGKILL), and remove its scratch folders. Call with the
    project's run lock held. Returns the groups that were still running."""
    path = state_dir / STATE_FILE
    groups: list[Group] = []
    try:
        groups = [Group(**g) for g in json.loads(path.read_text(encoding="utf-8"))]
    except (OSError, ValueError, TypeError):
        pass
    ended = end_groups(groups, grace_s) if groups else []
    try:
        path.unlink()
    except OSError:
        pass
    _clear_scratch(state_dir / "tmp")
    if ended:
        logs.get().warning("leftover_agent_groups_ended", groups=[asdict(g) for g in ended])
    return ended


def _clear_scratch(folder: Path) -> None:
    if folder.is_dir():
        for p in folder.glob(SCRATCH_PREFIX + "*"):
            shutil.rmtree(p, ignore_errors=True)


# -- the process-wide registry (the command agent's hook) ----------------------------------------

_current = Registry()
_scratch: Path | None = None


def activate(state_dir: Path) -> Registry:
    """A daemon or run took the project whose state folder is ``state_dir`` (lock held):
    record groups in ``state_dir/agents.json`` and scratch folders in ``state_dir/tmp``."""
    global _current, _scratch
    _current = Registry(state_dir / STATE_FILE)
    _current._save()
    _scratch = state_dir / "tmp"
    _clear_scratch(_scratch)
    return _current


def deactivate() -> list[Group]:
    """The run ends: end every group still registered, remove the file and the scratch."""
    global _current, _scratch
    ended = _current.end_all()
    if _current.path is not None:
        try:
            _current.path.unlink()
        except OSError:
            pass
    if _scratch is not None:
        _clear_scratch(_scratch)
    _current, _scratch = Registry(), None
    return ended


def register(pid: int, label: str) -> Group:
    """Hook for a provider that started an agent as its own process group (``pid`` = its
    group id): call right after the start."""
    return _current.add(pid, label)


def unregister(group: Group) -> None:
    """Hook for the same provider when the call ended (normally, at its timeout, or with an
    error): ends whatever is left of the group."""
    _current.end(group)


def end_all(grace_s: float = DEFAULT_GRACE_S) -> list[Group]:
    """Stop path: end every registered group now."""
    return _current.end_all(grace_s)


def scratch_dir() -> str | None:
    """The folder for an agent's scratch folders (``.fyan/tmp`` while a project is active;
    None: the system's temporary folder)."""
    if _scratch is None:
        return None
    _scratch.mkdir(parents=True, exist_ok=True)
    return str(_scratch)
