"""End the whole process tree of an unconfined command (``sandbox = "off"``, or ``auto`` without a
usable bubblewrap): ``python -I -S reaper.py [--mechanism M] -- PROGRAM ARG...``.

A process group id does not hold a process tree together: a child that calls ``setsid`` (or a
double fork into a new session) leaves the group, and killing the group misses it, and
the escaped child outlives the attempt. This wrapper runs ``PROGRAM`` so that every process it starts ends with it, by the
first mechanism that works for the user running Fyan:

``pidns``
    a new PID namespace (``unshare(CLONE_NEWPID | CLONE_NEWNS)``; as a user without
    ``CAP_SYS_ADMIN`` inside a new user namespace that maps only the user's own uid and gid, so
    files and permissions stay the same). The wrapper's child is the namespace's init: it mounts
    the namespace's own ``/proc`` (in a private copy of the mount table: programs read
    ``/proc/<getpid()>``, Lean among them, to find themselves), starts ``PROGRAM``, reaps orphans
    and, when ``PROGRAM`` exits, exits itself; the kernel then kills every other process of the
    namespace (pid_namespaces(7)). The init dies with the wrapper (``PR_SET_PDEATHSIG``), so
    killing the wrapper kills the namespace. The file system stays the host's.
``subreaper``
    when no namespace can be created (a container that forbids them): the wrapper becomes a
    child subreaper (``PR_SET_CHILD_SUBREAPER``, prctl(2)), so every orphaned descendant is
    re-parented to it, not to the system's init; when ``PROGRAM`` exits (or the wrapper receives
    SIGTERM, or its parent dies: ``PR_SET_PDEATHSIG`` = SIGTERM) it kills every descendant,
    repeatedly, until none is left. Only SIGKILL of the wrapper itself defeats this; Fyan sends
    SIGTERM first (``fyan.sandbox.runner.ProcessGroup``).

The exit status is ``PROGRAM``'s (a signal that ended it ends the wrapper the same way).
``--probe`` prints the mechanism that works here and exits. Standard library only: it runs as
its own interpreter (``-I -S``) so nothing of the caller's environment changes it.
"""

from __future__ import annotations

import ctypes
import os
import resource
import signal
import sys
import time

CLONE_NEWNS = 0x00020000
CLONE_NEWUSER = 0x10000000
CLONE_NEWPID = 0x20000000
MS_NOSUID, MS_NODEV, MS_NOEXEC, MS_REC, MS_PRIVATE = 2, 4, 8, 1 << 14, 1 << 18
PR_SET_PDEATHSIG = 1
PR_SET_CHILD_SUBREAPER = 36

_libc = ctypes.CDLL(None, use_errno=True)


def _check(result: int) -> None:
    if result != 0:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err))


def _prctl(option: int, value: int) -> None:
    _check(_libc.prctl(option, ctypes.c_ulong(value), ctypes.c_ulong(0), ctypes.c_ulong(0), ctypes.c_ulong(0)))


def _write(path: str, text: str) -> None:
    fd = os.open(path, os.O_WRONLY)
    try:
        os.write(fd, text.encode())
    finally:
        os.close(fd)


def _mount(source: bytes, target: bytes, fstype: bytes | None, flags: int) -> None:
    _check(_libc.mount(ctypes.c_char_p(source), ctypes.c_char_p(target), ctypes.c_char_p(fstype),
                       ctypes.c_ulong(flags), ctypes.c_void_p(None)))


def enter_pid_namespace() -> str:
    """Make the next child of this process the init of a new PID namespace, in a private copy of
    the mount table (so its ``/proc`` never reaches the host); returns how (raises ``OSError``
    when no namespace can be created here)."""
    try:
        _check(_libc.unshare(CLONE_NEWPID | CLONE_NEWNS))
        _mount(b"none", b"/", None, MS_REC | MS_PRIVATE)
        return "pidns"
    except OSError:
        pass
    uid, gid = os.getuid(), os.getgid()
    _check(_libc.unshare(CLONE_NEWUSER | CLONE_NEWPID | CLONE_NEWNS))
    try:  # map only the user's own ids: the command keeps its uid, gid and permissions
        _write("/proc/self/setgroups", "deny")
        _write("/proc/self/uid_map", f"{uid} {uid} 1\n")
        _write("/proc/self/gid_map", f"{gid} {gid} 1\n")
    except OSError as e:  # cannot be undone: never run the command under an unmapped uid
        sys.stderr.write(f"fyan reaper: could not map uid {uid} into the new user namespace: {e}\n")
        os._exit(126)
    _mount(b"none", b"/", None, MS_REC | MS_PRIVATE)
    return "pidns-user"


def mount_proc() -> None:
    """In the init of the new PID namespace: its own ``/proc`` (raises ``OSError``)."""
    _mount(b"proc", b"/proc", b"proc", MS_NOSUID | MS_NODEV | MS_NOEXEC)


def _exec(argv: list[str]) -> None:
    """In a forked child: default signal dispositions, then ``argv`` (exit 127 when it cannot run)."""
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGPIPE, signal.SIGCHLD):
        signal.signal(sig, signal.SIG_DFL)
    try:
        os.execvp(argv[0], argv)
    except OSError as e:
        sys.stderr.write(f"{argv[0]}: {e.strerror or e}\n")
        os._exit(127)


def _end_like(status: int) -> None:
    """Exit as a process with wait status ``status`` ended (re-raising its signal)."""
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        resource.setrlimit(resource.RLIMIT_CORE, (0, resource.getrlimit(resource.RLIMIT_CORE)[1]))
        if sig not in (signal.SIGKILL, signal.SIGSTOP):  # their disposition cannot be set (EINVAL)
            signal.signal(sig, signal.SIG_DFL)
        os.kill(os.getpid(), sig)
        os._exit(128 + sig)
    os._exit(os.waitstatus_to_exitcode(status) if os.WIFEXITED(status) else 1)


def _run_in_namespace(argv: list[str]) -> None:
    read_end, write_end = os.pipe()
    alive_r, alive_w = os.pipe()  # only the wrapper holds alive_w: end of file = the wrapper is gone
    init = os.fork()
    if init == 0:  # pid 1 of the new namespace
        os.close(read_end)
        os.close(alive_w)
        _prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
        os.set_blocking(alive_r, False)
        try:
            if os.read(alive_r, 1) == b"":  # the wrapper died before the death signal was set
                os._exit(1)
        except BlockingIOError:
            pass
        os.close(alive_r)
        try:
            mount_proc()
        except OSError as e:  # the probe said it works: it does not, so never run unreaped
            sys.stderr.write(f"fyan reaper: cannot mount /proc of the new pid namespace: {e}\n")
            os._exit(126)
        command = os.fork()
        if command == 0:
            os.close(write_end)
            _exec(argv)
        while True:  # reap every orphan until the command itself ends
            try:
                pid, status = os.waitpid(-1, 0)
            except ChildProcessError:
                os._exit(1)
            if pid == command:
                os.write(write_end, f"{status}\n".encode())
                os._exit(0)  # the kernel now kills every other process of the namespace
    os.close(write_end)
    os.close(alive_r)

    def stop(signum, frame):  # SIGTERM from Fyan: the namespace ends with its init
        try:
            os.kill(init, signal.SIGKILL)
        except ProcessLookupError:
            pass
        os._exit(128 + signum)

    signal.signal(signal.SIGTERM, stop)
    data = b""
    while True:
        chunk = os.read(read_end, 64)
        if not chunk:
            break
        data += chunk
    _, init_status = os.waitpid(init, 0)
    if data.strip():
        _end_like(int(data.strip()))
    _end_like(init_status)


def descendants(root: int) -> list[int]:
    """Every process below ``root`` (from ``/proc/*/stat``'s parent pids)."""
    parents: dict[int, list[int]] = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as f:
                raw = f.read()
        except OSError:
            continue
        ppid = int(raw[raw.rindex(b")") + 2:].split()[1])
        parents.setdefault(ppid, []).append(int(name))
    found, todo = [], [root]
    while todo:
        for child in parents.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def kill_tree(deadline_s: float = 10.0) -> None:
    """SIGKILL every descendant of this process and reap them, until none is left (new orphans
    are re-parented here while it runs: this process is their subreaper)."""
    end = time.monotonic() + deadline_s
    while time.monotonic() < end:
        left = descendants(os.getpid())
        for pid in left:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        while True:
            try:
                pid, _ = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                break
            if pid == 0:
                break
        if not left:
            return
        time.sleep(0.01)


def _run_as_subreaper(argv: list[str]) -> None:
    _prctl(PR_SET_CHILD_SUBREAPER, 1)
    _prctl(PR_SET_PDEATHSIG, signal.SIGTERM)

    def stop(signum, frame):
        kill_tree()
        os._exit(128 + signum)

    signal.signal(signal.SIGTERM, stop)
    command = os.fork()
    if command == 0:
        _exec(argv)
    while True:
        pid, status = os.waitpid(-1, 0)
        if pid == command:
            break
    kill_tree()
    _end_like(status)


def probe() -> str:
    """The mechanism that works here (``pidns``, ``pidns-user`` or ``subreaper``), tried in a
    child so this process is unchanged."""
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read_end)
        try:
            how = enter_pid_namespace()
            child = os.fork()  # a namespace is only usable if its init starts and mounts its /proc
            if child == 0:
                try:
                    mount_proc()
                except OSError:
                    os._exit(1)
                os._exit(0)
            _, status = os.waitpid(child, 0)
            if status != 0:
                how = "subreaper"
        except OSError:
            how = "subreaper"
        os.write(write_end, how.encode())
        os._exit(0)
    os.close(write_end)
    how = os.read(read_end, 64).decode() or "subreaper"
    os.waitpid(pid, 0)
    return how


def main(args: list[str]) -> None:
    mechanism = "auto"
    if args[:1] == ["--probe"]:
        print(probe())
        return
    if args[:1] == ["--mechanism"]:
        mechanism, args = args[1], args[2:]
    if args[:1] == ["--"]:
        args = args[1:]
    if not args:
        sys.stderr.write("usage: reaper.py [--probe | --mechanism auto|pidns|subreaper] -- PROGRAM ARG...\n")
        os._exit(2)
    if mechanism == "auto":
        mechanism = "subreaper" if probe() == "subreaper" else "pidns"
    if mechanism == "pidns":
        try:
            enter_pid_namespace()
        except OSError as e:
            sys.stderr.write(f"fyan reaper: no pid namespace here: {e}\n")
            os._exit(126)
        _run_in_namespace(args)
    _run_as_subreaper(args)


if __name__ == "__main__":
    main(sys.argv[1:])
