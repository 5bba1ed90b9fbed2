"""Run untrusted processes confined: a timeout, a memory limit, non-tty output, a bubblewrap sandbox.

Lean files written by models are untrusted code, ``lake build`` runs them, and a ``command``
agent is an untrusted process itself. ``run_process`` runs a command

* with a wall-clock timeout (seconds); the whole process group is killed (SIGKILL) at the
  deadline, and after the command ended in any way (``ProcessGroup``: the one place a group is
  started and the one place it is ended, so stop paths can hook in);
* with an address-space limit (``RLIMIT_AS``, MiB) set in the child before ``exec`` (it is
  inherited by ``bwrap`` and everything it starts); an allocation beyond it fails, and the
  result says so when the output shows it (``memory_exceeded``);
* with stdout and stderr merged into one pipe (Lake prints one line per job instead of a
  spinner when it is not on a terminal), ``NO_COLOR=1`` and ``TERM=dumb``;
* with a minimal environment (``confined_environment``): ``PATH``, ``HOME``, ``LANG``,
  ``TMPDIR``, the ``FYAN_*`` variables (not secret-looking ones) and what a ``pass_env`` names;
  only fds 0-2 are inherited;
* inside bubblewrap when ``bwrap`` works here, confined by a ``Confinement`` (docs/sandbox.md):
  its own user namespace with every capability dropped (as root too: ``umount`` and
  ``mount -o remount`` fail, a nested user namespace cannot be made), its own PID, IPC, UTS and
  cgroup namespaces and session, so every process the command starts dies with it; the whole
  file system read-only; ``/tmp``, ``/var/tmp``, ``/run``, ``/dev/shm`` and ``$HOME`` private
  empty tmpfs (no host sockets, no other users' files); ``hidden`` folders (the project
  folder) replaced by empty ones, so the state store, ``.fyan/``, other units and the user's
  files are neither writable nor readable; ``read_only`` paths bound back read-only (the
  toolchain under ``~/.elan``, the project's Lake package, outputs a build must not touch);
  ``writable`` folders (the workspace) bound read-write; the network unshared (a private
  loopback only, no abstract Unix sockets of the host) unless ``network`` is set; a seccomp
  filter (``fyan.sandbox.seccomp``) refuses setuid/setgid modes and Unix sockets. ``TMPDIR``
  points into the first writable folder (``.sandbox-tmp/``), so temporary files live on disk,
  not in the memory of a tmpfs;
* unconfined (``off``, or ``auto`` without bwrap) through ``fyan/sandbox/reaper.py``, which ends
  the whole process tree with the command (a PID namespace, else a child subreaper): a
  ``setsid`` child does not outlive it either.

``sandbox`` is ``require`` (the default of ``[lean] sandbox``: refuse to run without a working
bwrap: ``exit_code`` None, ``refused`` True, the reason and the remedy in ``note``), ``auto``
(bwrap when usable, else run unconfined and say so in ``note``) or ``off`` (never confined; an
explicit choice every report states). Whether bwrap is usable is probed once per ``bwrap``
executable (a container may forbid the user namespaces it needs; the probe's error is then the
reason).

``log_path``, when given, receives the command line, the full output and the exit status;
``<log_path>.json`` next to it receives the same record as JSON (command, cwd, exit code,
duration in seconds, sandbox, timeout and memory flags). The gate keeps both as attempt
artifacts. This module is shared by the completion gate, the Formalizer's compile loop, the
command agent and SA-Pass; it never raises for a failing command.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import resource
import shutil
import signal
import stat
import subprocess
import sys
import threading
import time
from typing import Any
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from pydantic import BaseModel, Field

from fyan.sandbox import seccomp

#: Output fragments that mean an allocation failed (Python, C++, libc, Lean's runtime panic).
MEMORY_MARKERS = ("out of memory", "MemoryError", "std::bad_alloc", "Cannot allocate memory")


class ProcessResult(BaseModel):
    """What happened when a command ran.

    ``exit_code`` is None when the command never ran (missing executable, sandbox refused) or
    was killed at the timeout; negative (``-N``) when signal N ended it. ``duration_s`` is
    wall-clock seconds. ``output`` is stdout and stderr merged, decoded as UTF-8.
    """

    argv: list[str]
    cwd: str
    exit_code: int | None
    duration_s: float
    output: str = ""
    timed_out: bool = False
    memory_exceeded: bool = False
    sandboxed: bool = False
    refused: bool = Field(default=False, description="Not run because [lean] sandbox = require and bwrap is unusable")
    note: str | None = Field(default=None, description="Sandbox, timeout, memory or refusal notes for the report")
    peak_rss_mb: float | None = Field(default=None, description="Peak resident memory of the command and the "
                                      "processes it waited for, MiB (wait4's ru_maxrss; it includes the forked "
                                      "child's pages before exec, i.e. at least Fyan's own size); None when not "
                                      "measured")
    admission_wait_s: float | None = Field(default=None, description="Seconds a Lean process waited for memory "
                                           "([lean] memory_budget_mb)")

    @property
    def ok(self) -> bool:
        return self.exit_code == 0 and not self.timed_out

    def describe(self) -> str:
        """One line saying how the command ended (for reports)."""
        if self.refused or self.exit_code is None and not self.timed_out:
            return self.note or "did not run"
        if self.timed_out:
            return self.note or "killed at the timeout"
        if self.memory_exceeded:
            return self.note or "ran out of memory"
        if self.exit_code < 0:
            return f"killed by {_signal_name(-self.exit_code)} (crashed)"
        if self.sandboxed and self.crashed_in_sandbox:
            return (f"killed by {_signal_name(self.exit_code - 128)} (crashed; bubblewrap reports it as exit "
                    f"code {self.exit_code})")
        return f"exit code {self.exit_code}"

    @property
    def crashed(self) -> bool:
        """Whether a signal ended the command (a crash; the out-of-memory killer's SIGKILL):
        a negative exit code unconfined, 128 + N as bubblewrap reports it (``crashed_in_sandbox``)."""
        return self.exit_code is not None and (self.exit_code < 0 or self.crashed_in_sandbox)

    @property
    def crashed_in_sandbox(self) -> bool:
        """Whether a sandboxed command ended as one killed by a signal: bubblewrap, the command's
        parent inside the sandbox, reports a child that died of signal N as its own exit code
        128 + N, as a shell does (bubblewrap.c ``propagate_exit_status``; a segfaulting ``lean``
        exits 139 there). A program that exits 128 + N by itself reads the same."""
        return self.sandboxed and self.exit_code is not None and 128 < self.exit_code <= 128 + 64


def _signal_name(number: int) -> str:
    """``SIGSEGV`` for 11; ``signal 77`` for a number Python has no name for."""
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


#: What to do when bubblewrap is missing or refused (every refusal names it).
SANDBOX_REMEDY = (
    "install bubblewrap (apt-get install bubblewrap, dnf install bubblewrap); if it is installed but cannot "
    "create namespaces (a container, or AppArmor restricting unprivileged user namespaces), allow them "
    "(e.g. sysctl kernel.apparmor_restrict_unprivileged_userns=0) or run Fyan where they are allowed; "
    "or set [lean] sandbox = \"off\" in fyan.toml to run model-written code unconfined (every report then says so)"
)


@dataclass(frozen=True)
class Confinement:
    """What a confined command may see and touch (module docstring). Paths are resolved before
    use; ``hidden`` paths that do not exist, are ``/`` or contain a writable path's filesystem
    root are skipped."""

    writable: tuple[Path, ...] = ()
    read_only: tuple[Path, ...] = ()
    hidden: tuple[Path, ...] = ()
    network: bool = False

    def describe(self) -> str:
        parts = ["own user namespace without capabilities", "read-only file system",
                 "private /tmp, /var/tmp, /run, /dev/shm and home", "network allowed" if self.network else "no network"]
        if self.hidden:
            parts.append("hidden: " + ", ".join(str(p) for p in self.hidden))
        parts.append("writes only in " + (", ".join(str(p) for p in self.writable) or "nothing"))
        return "bubblewrap sandbox: " + "; ".join(parts)


def home_dir(env: dict[str, str] | None = None) -> Path | None:
    """The user's home folder (``$HOME``), or None when unset or ``/``."""
    home = (env if env is not None else os.environ).get("HOME")
    if not home:
        return None
    path = Path(home).expanduser()
    return None if path.resolve() == Path("/") else path


def toolchain_paths(lake: Path | str | None, env: dict[str, str] | None = None,
                    hidden: list[Path] | tuple[Path, ...] = ()) -> list[Path]:
    """Folders a Lean toolchain reads from, to bind back read-only inside a hidden home: elan's
    home (``$ELAN_HOME`` or ``~/.elan``) and the prefix of ``lake`` itself (its real path). A
    folder that is itself one of ``hidden`` or a private folder (``private_dirs``: ``lake`` in
    ``~/bin`` or ``/tmp``, in the project's ``bin/``) is never bound back whole: ``lake`` itself
    is, elan's home is not (as ``program_paths`` does for a confined process's program)."""
    env = env if env is not None else dict(os.environ)
    closed = {Path(h).resolve() for h in hidden} | set(private_dirs(env))
    found: list[Path] = []
    elan = env.get("ELAN_HOME")
    home = home_dir(env)
    for cand in ([Path(elan)] if elan else []) + ([home / ".elan"] if home else []):
        if cand.is_dir() and cand.resolve() not in closed:
            found.append(cand)
    if lake:
        real = Path(lake).resolve()
        prefix = real.parent.parent if real.parent.name == "bin" else real.parent
        found.append(real if prefix.resolve() in closed else prefix)
    return list(dict.fromkeys(found))


def project_confinement(project_root: Path, writable: list[Path], *, lake: Path | str | None = None,
                        read_only: list[Path] | None = None, network: bool = False,
                        extra_readable: list[Path] | None = None, toolchain=None) -> Confinement:
    """The confinement of model-written code of one project: the project folder and the user's
    home hidden; ``writable`` (a workspace) read-write; the project's Lake package, the
    toolchain (``toolchain``, a ``fyan.lean.toolchain.Toolchain``: its ``lake`` and
    ``[lean] sandbox_readable``; or ``lake``) and ``extra_readable`` bound back read-only;
    ``read_only`` (outputs a build must not change) protected inside the writable folders."""
    hidden = [project_root]
    home = home_dir()
    if home is not None:
        hidden.append(home)
    if toolchain is not None:
        lake = toolchain.lake
        extra_readable = [*toolchain.readable, *(extra_readable or [])]
    readable = [project_root / "lean", *toolchain_paths(lake, hidden=hidden), *(extra_readable or [])]
    return Confinement(writable=tuple(writable), read_only=tuple(readable) + tuple(read_only or ()),
                       hidden=tuple(hidden), network=network)


#: folders every confined process gets as private, empty tmpfs (plus ``$HOME``), except what its
#: confinement names (bound back): host sockets (ssh-agent, D-Bus, Docker, X11), other users'
#: temporary files and the user's files stay out of reach
PRIVATE_DIRS = ("/tmp", "/var/tmp", "/run")


@lru_cache(maxsize=8)
def _bwrap_disables_userns(path: str) -> bool:
    """Whether this bwrap knows ``--disable-userns`` (bubblewrap >= 0.8: no nested user namespace
    inside the sandbox)."""
    try:
        proc = subprocess.run([path, "--help"], capture_output=True, text=True, timeout=20, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return "--disable-userns" in proc.stdout + proc.stderr


def namespace_flags(bwrap: str) -> list[str]:
    """The namespaces and privileges of every confined process: its own user namespace with every
    capability dropped (as root too: ``umount``, ``mount -o remount`` and a nested user namespace
    fail, while the uid inside may stay 0), its own PID namespace (the whole tree dies with the
    command and with Fyan), IPC, UTS and cgroup namespaces, a new session."""
    flags = ["--unshare-user"]
    if _bwrap_disables_userns(bwrap):
        flags.append("--disable-userns")
    return flags + ["--cap-drop", "ALL", "--die-with-parent", "--new-session", "--unshare-pid", "--unshare-ipc",
                    "--unshare-uts", "--unshare-cgroup-try"]


@lru_cache(maxsize=8)
def _probe_bwrap(path: str) -> tuple[bool, str]:
    # with the seccomp filter every confined process gets (a kernel without seccomp filters, or a
    # container that forbids them, must be refused here, not fail every build as the proof's fault)
    passed: tuple[int, ...] = ()
    filtered: list[str] = []
    if seccomp.program() is not None:
        read, write = os.pipe()
        os.write(write, seccomp.program())
        os.close(write)
        passed, filtered = (read,), ["--seccomp", str(read)]
    try:
        proc = subprocess.run(
            [path, *namespace_flags(path), "--unshare-net", "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc",
             "--tmpfs", "/tmp", *filtered, "--", "true"],
            capture_output=True, text=True, timeout=20, stdin=subprocess.DEVNULL, pass_fds=passed,
        )
    except (OSError, subprocess.TimeoutExpired) as e:
        return False, f"bwrap ({path}) cannot run here: {e}"
    finally:
        for fd in passed:
            os.close(fd)
    if proc.returncode != 0:
        detail = (proc.stderr or proc.stdout).strip().splitlines()
        return False, (f"bwrap ({path}) cannot create its namespaces here (a user namespace with every capability "
                       f"dropped, pid, ipc, network; a seccomp filter): "
                       f"{detail[-1] if detail else 'exit ' + str(proc.returncode)}")
    return True, "bubblewrap works here (user namespace, no capabilities, pid namespace)"


def bwrap_status(path_env: str | None = None) -> tuple[str | None, str]:
    """(path to a working ``bwrap`` or None, explanation for the report).

    Looks ``bwrap`` up on ``path_env`` (default: ``$PATH``) and probes each executable once
    per process with the namespaces every confined process gets (``namespace_flags``: a user
    namespace with every capability dropped, pid, ipc, network); a bwrap that cannot create
    them (a container, unprivileged user namespaces disabled) is unusable, and its error is the
    reason.
    """
    path = shutil.which("bwrap", path=path_env if path_env is not None else os.environ.get("PATH"))
    if path is None:
        return None, "bubblewrap (bwrap) is not installed"
    ok, why = _probe_bwrap(path)
    return (path if ok else None), why


def _inside(path: Path, folders: list[Path]) -> bool:
    return any(path == f or f in path.parents for f in folders)


def _depth(path: Path) -> int:
    return len(path.parts)


def private_dirs(env: dict[str, str] | None = None) -> list[Path]:
    """The folders a confined process sees as empty private tmpfs (``PRIVATE_DIRS`` and ``$HOME``
    of ``env``), resolved, those that exist."""
    found = [Path(p).resolve() for p in PRIVATE_DIRS]
    home = home_dir(env)
    if home is not None:
        found.append(home.resolve())
    return [p for p in dict.fromkeys(found) if p != Path("/") and p.is_dir()]


def _prefix(real: Path) -> Path:
    return real.parent.parent if real.parent.name == "bin" else real.parent


def program_paths(program: str, path_env: str | None = None,
                  hidden: list[Path] | tuple[Path, ...] = ()) -> list[Path]:
    """Folders the program a confined process starts needs to read: the installation prefix of
    its real path (the folder above ``bin/``, else its own folder) and of its path as named
    (``..`` collapsed), and, for a script, those of its interpreter (``#!/path/python``,
    ``#!/usr/bin/env node``). Bound back read-only, so a program installed in a private folder
    (``$HOME``: pyenv, ``~/.local``) still runs. A prefix that *is* one of ``hidden`` (resolved:
    the folders the sandbox hides or keeps private) would bind that whole folder back (``~/bin/x``
    or ``~/x.sh``: the home with ``~/.ssh``; ``<project>/bin/x``: the project with ``.fyan/``;
    ``/tmp/x.sh``: the host's ``/tmp`` with its sockets): only the program (or interpreter) file
    itself is bound then."""
    search = path_env if path_env is not None else os.environ.get("PATH")
    found = shutil.which(program, path=search)
    if found is None:
        return []
    closed = {Path(h).resolve() for h in hidden}

    def prefixes(named: str) -> list[Path]:
        real, called = Path(named).resolve(), Path(os.path.abspath(named))  # abspath: "a/bin/../x" is a/x
        # the prefix of the path as named too: a virtual environment's bin/python is a link to the
        # base interpreter, and the environment itself (pyvenv.cfg, site-packages) must be readable
        return [exe if prefix.resolve() in closed else prefix
                for exe, prefix in ((real, _prefix(real)), (called, _prefix(called)))]

    paths = prefixes(found)
    try:
        with open(Path(found).resolve(), "rb") as f:
            head = f.read(256)
    except OSError:
        return list(dict.fromkeys(paths))
    if head.startswith(b"#!"):
        words = head[2:].split(b"\n", 1)[0].decode(errors="replace").split()
        if words and Path(words[0]).name == "env" and len(words) > 1:
            words = [w for w in words[1:] if not w.startswith("-")][:1]
        if words:
            interpreter = shutil.which(words[0], path=search)
            if interpreter:
                paths += prefixes(interpreter)
    return list(dict.fromkeys(paths))


#: the kernel's knobs in a confined process's new ``/proc``, bound back read-only over it. The uid
#: inside stays the caller's, and a sysctl trusts the host's uid 0 whatever its capabilities (its
#: own permission check compares the euid with the global root): a root-run confined process
#: wrote ``/proc/sys`` (``kernel.core_pattern = |prog``: prog runs as host root at the next crash)
PROC_COVERS = ("/proc/sys", "/proc/sysrq-trigger", "/proc/irq", "/proc/bus")

#: stands for the fd of the seccomp filter (``fyan.sandbox.seccomp``) in a bwrap command line until
#: ``ProcessGroup.start`` opens it (a pipe holding the program, passed to bwrap alone)
SECCOMP_FD = "{fyan-seccomp-fd}"


def bwrap_argv(bwrap: str, argv: list[str], cwd: Path, confinement: Confinement) -> list[str]:
    """The ``bwrap`` command line that runs ``argv`` in ``cwd`` under ``confinement`` (module
    docstring): ``namespace_flags``, the whole file system read-only, a new ``/dev`` (its
    ``/dev/shm`` a private tmpfs) and ``/proc``; then, shallowest path first (a later mount hides
    what is below it, so the deepest rule wins), a private tmpfs over ``private_dirs`` (writable:
    tools keep temporary files and settings there) and over each hidden folder (read-only once
    the binds inside it are made), read-only binds of ``read_only`` paths, read-write binds of ``writable``
    ones, and read-only binds of ``read_only`` paths inside writable ones; the program's own
    folders (``program_paths``) are readable. With the network on,
    ``/etc/resolv.conf`` is bound back when it points into a private folder."""
    writable = [w.resolve() for w in confinement.writable]
    cmd = [bwrap, *namespace_flags(bwrap)]
    if not confinement.network:
        cmd.append("--unshare-net")
    cmd += ["--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"]
    for entry in PROC_COVERS:  # read-only: the uid inside may be the host's root, which sysctls trust
        cmd += ["--ro-bind-try", entry, entry]
    cmd += ["--tmpfs", "/dev/shm"]
    masks = [h for h in dict.fromkeys(p.resolve() for p in confinement.hidden) if h != Path("/") and h.is_dir()]
    private = private_dirs()
    masks = [h for h in masks if h not in private]
    hidden = private + masks
    read_only = [r.resolve() for r in confinement.read_only] + program_paths(argv[0], hidden=hidden)
    if confinement.network:
        resolv = Path("/etc/resolv.conf").resolve()
        if resolv.exists() and _inside(resolv, hidden):
            read_only.append(resolv)
    # (depth, order at equal depth, mount): hidden < read-only < writable < read-only inside writable
    mounts: list[tuple[int, int, list[str]]] = []
    for h in hidden:
        mounts.append((_depth(h), 0, ["--tmpfs", str(h)]))
    for r in dict.fromkeys(read_only):
        if r.exists() and r != Path("/"):
            mounts.append((_depth(r), 3 if _inside(r, writable) else 1, ["--ro-bind", str(r), str(r)]))
    for w in dict.fromkeys(writable):
        mounts.append((_depth(w), 2, ["--bind", str(w), str(w)]))
    for _, _, mount in sorted(mounts, key=lambda m: (m[0], m[1])):
        cmd += mount
    for h in masks:  # last: the mount points of what is bound inside a mask are made by now
        cmd += ["--remount-ro", str(h)]
    if seccomp.program() is not None:  # no setuid/setgid file, not even while it runs (fyan.sandbox.seccomp)
        cmd += ["--seccomp", SECCOMP_FD]
    cmd += ["--chdir", str(cwd.resolve()), "--"]
    return cmd + argv


#: variables of Fyan's own environment every confined process (a command agent, a build, a compile,
#: the inspector, a checker) gets, with the ``FYAN_*`` ones (``confined_environment``); everything
#: else (API keys, SSH_AUTH_SOCK, tokens) stays out unless a ``pass_env`` names it
TOOL_VARIABLES = ("PATH", "HOME", "LANG", "TMPDIR")

#: parts of a ``FYAN_*`` name that mark a secret (``FYAN_OPENAI_COMPATIBLE_API_KEY``,
#: ``FYAN_PROXY_AUTH``, ``FYAN_DB_PASSWD``, ``FYAN_GIT_CREDS``): those pass only when a ``pass_env``
#: names them
SECRET_MARKERS = ("KEY", "TOKEN", "SECRET", "PASS", "CRED", "AUTH", "BEARER", "COOKIE", "SESSION", "PRIVATE", "CERT")

#: a URL that carries credentials (``https://user:token@host/v1`` in ``FYAN_AGENTS__PROVE__BASE_URL``)
_URL_WITH_USERINFO = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://[^/?#\s@]+@")


def _passes(name: str, value: str = "") -> bool:
    if name in TOOL_VARIABLES:
        return True
    return (name.startswith("FYAN_") and not any(m in name.upper() for m in SECRET_MARKERS)
            and not _URL_WITH_USERINFO.search(value))


def confined_environment(base: dict[str, str] | None = None, pass_env: list[str] | tuple[str, ...] = (),
                         extra: dict[str, str] | None = None) -> dict[str, str]:
    """The whole environment of a confined process: ``TOOL_VARIABLES`` and the ``FYAN_*`` variables
    (not those whose name marks a secret: ``SECRET_MARKERS``) of ``base`` (default: this
    process's), the variables ``pass_env`` names (the provider's or ``[lean] pass_env``; unset ones
    are skipped), then ``extra`` (Fyan's own: ``LEAN_PATH``, ``FYAN_UNIT``, ...)."""
    base = os.environ if base is None else base
    env = {k: v for k, v in base.items() if _passes(k, v)}
    env.update({k: base[k] for k in pass_env if k in base})
    return {**env, **(extra or {})}


def tool_environment(extra: dict[str, str] | None = None, base: dict[str, str] | None = None,
                     pass_env: list[str] | tuple[str, ...] = ()) -> dict[str, str]:
    """The environment of a toolchain process: ``confined_environment`` of ``base`` with
    ``pass_env`` (``[lean] pass_env``), then ``extra`` (``LEAN_PATH``, ``LEAN_SYSROOT``)."""
    return confined_environment(base, pass_env, extra)


def sandbox_tmpdir(writable: list[Path] | tuple[Path, ...]) -> Path:
    """The temporary folder a sandboxed command gets (``TMPDIR``): inside its first writable
    folder, created on demand. The confined process of an earlier run may have left something
    else of that name there (a file, a FIFO, a link): it is removed, never followed, so it can
    neither stop the next run nor point its temporary files elsewhere."""
    tmp = writable[0].resolve() / ".sandbox-tmp"
    try:
        st = os.lstat(tmp)
    except FileNotFoundError:
        st = None
    if st is not None and not stat.S_ISDIR(st.st_mode):
        os.unlink(tmp)
    tmp.mkdir(parents=True, exist_ok=True)
    return tmp


def strip_set_id_bits(folders: list[Path] | tuple[Path, ...]) -> list[Path]:
    """Clear the setuid and setgid bits of every regular file under ``folders`` (``lstat``; links
    are not followed) and return the files changed. A confined process keeps its uid (0 for root)
    and may ``chmod u+s`` a program it wrote: its workspace must not hand a setuid-root program to
    the host's other users. Run after the process tree ended."""
    changed = []
    for folder in folders:
        for dirpath, _, filenames in os.walk(folder):
            for name in filenames:
                path = Path(dirpath) / name
                try:
                    st = os.lstat(path)
                    if stat.S_ISREG(st.st_mode) and st.st_mode & (stat.S_ISUID | stat.S_ISGID):
                        os.chmod(path, stat.S_IMODE(st.st_mode) & ~(stat.S_ISUID | stat.S_ISGID))
                        changed.append(path)
                except OSError:
                    continue
    return changed


def _limit(memory_mb: int | None):
    def apply() -> None:
        if memory_mb:
            limit = memory_mb * 1024 * 1024
            resource.setrlimit(resource.RLIMIT_AS, (limit, limit))

    return apply


#: the wrapper that ends an unconfined command's whole process tree (``fyan/sandbox/reaper.py``)
REAPER = Path(__file__).with_name("reaper.py")


def reaped_argv(argv: list[str]) -> list[str]:
    """``argv`` run by ``fyan/sandbox/reaper.py`` (a PID namespace, else a child subreaper: what
    ``_probe_reaper`` found here, once per Fyan process), so that unconfined, too, nothing it
    starts (a ``setsid`` child included) outlives it. ``FYAN_REAPER=subreaper`` (or ``pidns``)
    in Fyan's environment forces a mechanism: the subreaper keeps the host's process ids visible
    to the command (a tool that reports its pid to someone outside)."""
    forced = os.environ.get("FYAN_REAPER")
    if forced in ("pidns", "subreaper"):
        return [sys.executable, "-I", "-S", str(REAPER), "--mechanism", forced, "--", *argv]
    how = _probe_reaper()
    mechanism = "subreaper" if how == "subreaper" else "pidns" if how.startswith("pidns") else "auto"
    return [sys.executable, "-I", "-S", str(REAPER), "--mechanism", mechanism, "--", *argv]


@lru_cache(maxsize=1)
def _probe_reaper() -> str:
    try:
        proc = subprocess.run([sys.executable, "-I", "-S", str(REAPER), "--probe"], capture_output=True, text=True,
                              timeout=20, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired) as e:
        return f"unknown ({e})"
    return proc.stdout.strip() or f"unknown ({proc.stderr.strip()[-200:]})"


def tree_mechanism() -> str:
    """How an unconfined command's process tree is ended here (``fyan doctor``): ``pid namespace``,
    ``pid namespace in a user namespace`` or ``child subreaper``."""
    how = _probe_reaper()
    return {"pidns": "pid namespace", "pidns-user": "pid namespace in a user namespace",
            "subreaper": "child subreaper"}.get(how, how)


@dataclass
class Confined:
    """``argv`` as it will run: wrapped in bwrap, or not, and why (``confine``)."""

    argv: list[str]
    sandboxed: bool
    refused: bool
    note: str | None


def confine(argv: list[str], cwd: Path, sandbox: str, confinement: Confinement,
            env: dict[str, str] | None = None, what: str = "[lean] sandbox") -> Confined:
    """Wrap ``argv`` for ``sandbox`` mode (``require``, ``auto``, ``off``): the bwrap command
    line, or a refusal (``require`` without a usable bwrap; the note says why and what to do),
    or ``argv`` unconfined (wrapped by ``reaped_argv``, so its whole process tree still ends with
    it) with a note saying it runs unconfined. ``what`` names the setting in the refusal."""
    if sandbox == "off":  # the explicit choice: reports state it; the process tree still ends with it
        return Confined(reaped_argv(argv), False, False, None)
    bwrap, why = bwrap_status(env.get("PATH") if env is not None else None)
    if bwrap is None:
        if sandbox == "require":
            return Confined(list(argv), False, True, f"refused: {what} = \"require\" but {why}; {SANDBOX_REMEDY}")
        return Confined(reaped_argv(argv), False, False, f"not sandboxed: {why}")
    return Confined(bwrap_argv(bwrap, argv, cwd, confinement), True, False, confinement.describe())


#: seconds the leader of a group (bwrap, or the reaper) gets after SIGTERM to end its process tree
TERM_GRACE_S = 2.0


class ProcessGroup:
    """One confined process and every process it starts, as one process group (its own
    session). ``start`` is the one place a group is started and ``end`` the one place it is
    ended (SIGKILL to the whole group, also after a normal exit: children left behind by the
    command die with it). A process group alone does not hold a tree (a ``setsid`` child leaves
    it): the leader is bwrap (a PID namespace that dies with it) or ``fyan/sandbox/reaper.py``
    (``reaped_argv``), and at the timeout it gets SIGTERM first so the reaper can end the tree.
    Only the fds 0-2 are passed (``close_fds``). Stop paths (Ctrl-C, SIGTERM, a daemon stopping)
    can register groups here."""

    def __init__(self, argv: list[str], *, cwd: Path, env: dict[str, str], memory_mb: int | None = None,
                 stdin: int | None = None, stderr: int | None = subprocess.STDOUT) -> None:
        self.argv = argv
        self.cwd = cwd
        self.env = env
        self.memory_mb = memory_mb
        self.stdin = stdin
        self.stderr = stderr
        self.proc: subprocess.Popen | None = None
        #: peak resident memory of the command, MiB, once ``collect`` reaped it
        self.peak_rss_mb: float | None = None

    def start(self) -> subprocess.Popen:
        """Start the command in a new session (raises ``OSError`` when it cannot start). A bwrap
        command line's ``SECCOMP_FD`` becomes a pipe holding the seccomp filter, passed to it alone."""
        argv, passed = list(self.argv), ()
        if SECCOMP_FD in argv:
            read, write = os.pipe()
            try:
                os.write(write, seccomp.program() or b"")
            finally:
                os.close(write)
            argv[argv.index(SECCOMP_FD)] = str(read)  # the first one: bwrap's, before the command's own
            passed = (read,)
        try:
            self.proc = subprocess.Popen(
                argv, cwd=self.cwd, env=self.env, stdout=subprocess.PIPE, stderr=self.stderr,
                stdin=self.stdin if self.stdin is not None else subprocess.DEVNULL,
                start_new_session=True, preexec_fn=_limit(self.memory_mb), close_fds=True, pass_fds=passed,
            )
        finally:
            for fd in passed:
                os.close(fd)
        return self.proc

    def end(self) -> None:
        """Kill whatever is left of the group (idempotent; never raises)."""
        if self.proc is None:
            return
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass

    def collect(self, stdin: bytes | None, timeout_s: float) -> tuple[bytes, bytes, bool]:
        """Feed ``stdin``, wait for the command (at most ``timeout_s`` seconds), then ``end`` the
        group and return (stdout, stderr, timed out). Output is read until the command itself
        exits: a child that keeps the pipes open is ended with the group, not waited for."""
        proc = self.proc
        assert proc is not None
        buffers: dict[str, list[bytes]] = {"out": [], "err": []}

        def read(stream, key: str) -> None:
            for chunk in iter(lambda: stream.read(65536), b""):
                buffers[key].append(chunk)

        def feed() -> None:
            try:
                proc.stdin.write(stdin or b"")
                proc.stdin.close()
            except (OSError, ValueError):  # the command exited without reading its input
                pass

        threads = [threading.Thread(target=read, args=(proc.stdout, "out"), daemon=True)]
        if proc.stderr is not None:
            threads.append(threading.Thread(target=read, args=(proc.stderr, "err"), daemon=True))
        if proc.stdin is not None:
            threads.append(threading.Thread(target=feed, daemon=True))
        for t in threads:
            t.start()
        reaped: dict[str, Any] = {}

        def reap() -> None:  # wait4, not waitpid: its resource usage gives the peak memory
            try:
                _, status, usage = os.wait4(proc.pid, 0)
            except ChildProcessError:
                return
            reaped["status"], reaped["usage"] = status, usage

        waiter = threading.Thread(target=reap, daemon=True)
        waiter.start()
        try:
            waiter.join(timeout=timeout_s)
            timed_out = waiter.is_alive()
        finally:
            if waiter.is_alive():  # the leader (bwrap or the reaper) first ends the tree it holds
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(proc.pid, signal.SIGTERM)
                waiter.join(timeout=TERM_GRACE_S)
            self.end()
            waiter.join()
            if "status" in reaped:
                proc.returncode = os.waitstatus_to_exitcode(reaped["status"])
                self.peak_rss_mb = round(reaped["usage"].ru_maxrss / 1024, 1)  # Linux: KiB
            proc.wait()
            for t in threads:
                t.join(timeout=10)
        return b"".join(buffers["out"]), b"".join(buffers["err"]), timed_out


def run_process(
    argv: list[str],
    *,
    cwd: Path,
    timeout_s: float,
    memory_mb: int | None = None,
    sandbox: str = "require",
    writable: list[Path] | None = None,
    confinement: Confinement | None = None,
    env: dict[str, str] | None = None,
    pass_env: list[str] | tuple[str, ...] = (),
    stdin_text: str | None = None,
    log_path: Path | None = None,
    lean_kind: str | None = None,
) -> ProcessResult:
    """Run ``argv`` in ``cwd`` as the module docstring describes; never raises for a failing
    command (a missing executable or a missing ``cwd`` is ``exit_code=None`` with the reason in
    ``note``).

    ``timeout_s`` in seconds, ``memory_mb`` in MiB (None: no limit), ``confinement`` what the
    sandbox lets the command see and write (default: write only ``writable``, itself defaulting
    to ``cwd``), ``env`` the whole environment of the command (default: ``confined_environment``
    with ``pass_env``; callers build theirs with it too), ``stdin_text`` fed on stdin (else
    stdin is ``/dev/null``). ``lean_kind`` (``build``, ``inspector``, ``kernel_replay``, …) marks
    a Lean process: it waits for memory (``fyan.sandbox.admission``; the wait is
    ``admission_wait_s``) and its peak memory is recorded for its kind and unit.
    """
    if confinement is None:
        confinement = Confinement(writable=tuple(writable if writable is not None else [cwd]))
    if not Path(cwd).is_dir():
        return _finish(ProcessResult(argv=argv, cwd=str(cwd), exit_code=None, duration_s=0.0,
                                     note=f"could not start {argv[0]}: working folder {cwd} does not exist"), log_path)
    wrapped = confine(argv, Path(cwd), sandbox, confinement, env)
    if wrapped.refused:
        return _finish(ProcessResult(argv=argv, cwd=str(cwd), exit_code=None, duration_s=0.0, refused=True,
                                     note=wrapped.note), log_path)
    note, sandboxed = wrapped.note, wrapped.sandboxed
    base = env if env is not None else confined_environment(pass_env=pass_env)
    run_env = {**base, "NO_COLOR": "1", "TERM": "dumb"}
    if sandboxed and confinement.writable:
        run_env["TMPDIR"] = str(sandbox_tmpdir(confinement.writable))
    # a relative path with a slash is the child's: exec resolves it in ``cwd``, not in Fyan's folder
    program = argv[0] if os.sep not in argv[0] or os.path.isabs(argv[0]) else os.path.join(cwd, argv[0])
    if not sandboxed and shutil.which(program, path=run_env.get("PATH", os.defpath)) is None:
        # unconfined, the reaper would start and report exit 127: say what happened instead
        return _finish(ProcessResult(argv=argv, cwd=str(cwd), exit_code=None, duration_s=0.0,
                                     note=f"could not start {argv[0]}: no such program (or not executable)"
                                     + (f"; {note}" if note else "")),
                       log_path)
    group = ProcessGroup(wrapped.argv, cwd=Path(cwd), env=run_env, memory_mb=memory_mb,
                         stdin=subprocess.PIPE if stdin_text is not None else None)
    waited = None
    with contextlib.ExitStack() as admitted:
        if lean_kind is not None:  # a Lean process: admitted by memory (fyan.sandbox.admission)
            from fyan.sandbox import admission

            asked = time.monotonic()
            ticket = admitted.enter_context(admission.current().admit(lean_kind))
            waited = round(time.monotonic() - asked, 3)
        start = time.monotonic()
        try:
            proc = group.start()
        except OSError as e:
            return _finish(ProcessResult(
                argv=argv, cwd=str(cwd), exit_code=None, duration_s=0.0, sandboxed=sandboxed,
                note=f"could not start {argv[0]}: {e.strerror or e}", admission_wait_s=waited,
            ), log_path)
        out, _, timed_out = group.collect(stdin_text.encode() if stdin_text is not None else None, timeout_s)
        duration = time.monotonic() - start
        if lean_kind is not None:
            admission.current().record(lean_kind, ticket.unit, group.peak_rss_mb)
    if sandboxed:
        stripped = strip_set_id_bits(confinement.writable)
        if stripped:
            note = f"cleared setuid/setgid bits of {len(stripped)} file(s) it wrote; " + (note or "")
    text = out.decode("utf-8", errors="replace")
    code = None if timed_out else proc.returncode
    memory = bool(memory_mb) and code not in (0, None) and any(m in text for m in MEMORY_MARKERS)
    if timed_out:
        note = f"killed at the timeout of {timeout_s:g} s" + (f"; {note}" if note else "")
    elif memory:
        note = f"ran out of memory at the limit of {memory_mb} MiB" + (f"; {note}" if note else "")
    return _finish(ProcessResult(
        argv=argv, cwd=str(cwd), exit_code=code, duration_s=round(duration, 3), output=text,
        timed_out=timed_out, memory_exceeded=memory, sandboxed=sandboxed, note=note,
        peak_rss_mb=group.peak_rss_mb, admission_wait_s=waited,
    ), log_path)


def _finish(result: ProcessResult, log_path: Path | None) -> ProcessResult:
    if log_path is not None:
        try:
            log_path.parent.mkdir(parents=True, exist_ok=True)
            header = (
                f"$ {' '.join(result.argv)}\n# cwd: {result.cwd}\n# exit: {result.exit_code}  "
                f"duration: {result.duration_s}s  sandboxed: {result.sandboxed}\n"
                + (f"# note: {result.note}\n" if result.note else "")
            )
            log_path.write_text(header + result.output, encoding="utf-8")
            meta = result.model_dump(exclude={"output"})
            meta["log"] = log_path.name
            meta["output_bytes"] = len(result.output.encode("utf-8"))
            log_path.with_name(log_path.name + ".json").write_text(json.dumps(meta, indent=2) + "\n", encoding="utf-8")
        except OSError as e:  # an unwritable log folder must not turn a result into a crash
            result.note = (result.note + "; " if result.note else "") + f"log not written: {e}"
    return result
