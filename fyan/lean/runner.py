"""Run untrusted builds: a timeout, a memory limit, non-tty output, a bubblewrap sandbox.

Lean files written by models are untrusted code and ``lake build`` runs them (DESIGN.md §2).
``run_process`` runs a command

* with a wall-clock timeout (seconds); the whole process group is killed (SIGKILL) at the
  deadline;
* with an address-space limit (``RLIMIT_AS``, MiB) set in the child before ``exec`` (it is
  inherited by ``bwrap`` and everything it starts); an allocation beyond it fails, and the
  result says so when the output shows it (``memory_exceeded``);
* with stdout and stderr merged into one pipe (Lake prints one line per job instead of a
  spinner when it is not on a terminal), ``NO_COLOR=1`` and ``TERM=dumb``;
* inside bubblewrap when ``bwrap`` works here: the whole file system read-only, the network
  unshared (only a private loopback), PID and IPC namespaces unshared, writes allowed only in
  the given folders (the unit workspace); ``TMPDIR`` points into the first of them
  (``.sandbox-tmp/``), since the host's ``/tmp`` is read-only there like everything else (it is
  not replaced by an empty one, so a toolchain or checkout that lives below ``/tmp`` still runs).

``sandbox`` is ``auto`` (bwrap when usable, else run unsandboxed and say so in ``note``),
``require`` (refuse to run without bwrap: ``exit_code`` None, ``refused`` True, the reason in
``note``) or ``off``. Whether bwrap is usable is probed once per ``bwrap`` executable (a
container may forbid the user namespaces it needs; the probe's error is then the reason).

``log_path``, when given, receives the command line, the full output and the exit status;
``<log_path>.json`` next to it receives the same record as JSON (command, cwd, exit code,
duration in seconds, sandbox, timeout and memory flags). The gate keeps both as attempt
artifacts. This module is shared by the completion gate, the Formalizer's compile loop and
SA-Pass; it never raises for a failing command.
"""

from __future__ import annotations

import json
import os
import resource
import shutil
import signal
import subprocess
import time
from functools import lru_cache
from pathlib import Path

from pydantic import BaseModel, Field

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
            try:
                name = signal.Signals(-self.exit_code).name
            except ValueError:
                name = f"signal {-self.exit_code}"
            return f"killed by {name} (crashed)"
        return f"exit code {self.exit_code}"


@lru_cache(maxsize=8)
def _probe_bwrap(path: str) -> tuple[bool, str]:
    try:
        proc = subprocess.run(
            [path, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--unshare-net",
             "--unshare-pid", "--", "true"],
            capture_output=True, text=True, timeout=20, stdin=subprocess.DEVNULL,
        )
    except (OSError, subprocess.TimeoutExpired) as e:
        return False, f"bwrap ({path}) cannot run here: {e}"
    if proc.returncode != 0:
        detail = (proc.stderr or proc.stdout).strip().splitlines()
        return False, (f"bwrap ({path}) cannot create its namespaces here: "
                       f"{detail[-1] if detail else 'exit ' + str(proc.returncode)}")
    return True, "bubblewrap sandbox: read-only file system, no network, writes only in the workspace"


def bwrap_status(path_env: str | None = None) -> tuple[str | None, str]:
    """(path to a working ``bwrap`` or None, explanation for the report).

    Looks ``bwrap`` up on ``path_env`` (default: ``$PATH``) and probes each executable once
    per process (``bwrap --unshare-net --unshare-pid -- true``).
    """
    path = shutil.which("bwrap", path=path_env if path_env is not None else os.environ.get("PATH"))
    if path is None:
        return None, "bubblewrap (bwrap) is not installed (apt-get install bubblewrap)"
    ok, why = _probe_bwrap(path)
    return (path if ok else None), why


def _bwrap_argv(bwrap: str, argv: list[str], cwd: Path, writable: list[Path]) -> list[str]:
    cmd = [
        bwrap, "--die-with-parent", "--unshare-net", "--unshare-pid", "--unshare-ipc",
        "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc",
    ]
    for w in writable:
        w = w.resolve()
        cmd += ["--bind", str(w), str(w)]
    cmd += ["--chdir", str(cwd.resolve()), "--"]
    return cmd + argv


def sandbox_tmpdir(writable: list[Path]) -> Path:
    """The temporary folder a sandboxed command gets (``TMPDIR``): inside its first writable
    folder, created on demand."""
    tmp = writable[0].resolve() / ".sandbox-tmp"
    tmp.mkdir(parents=True, exist_ok=True)
    return tmp


def _limit(memory_mb: int | None):
    def apply() -> None:
        if memory_mb:
            limit = memory_mb * 1024 * 1024
            resource.setrlimit(resource.RLIMIT_AS, (limit, limit))

    return apply


def run_process(
    argv: list[str],
    *,
    cwd: Path,
    timeout_s: float,
    memory_mb: int | None = None,
    sandbox: str = "auto",
    writable: list[Path] | None = None,
    env: dict[str, str] | None = None,
    stdin_text: str | None = None,
    log_path: Path | None = None,
) -> ProcessResult:
    """Run ``argv`` in ``cwd`` as the module docstring describes; never raises for a failing
    command (a missing executable or a missing ``cwd`` is ``exit_code=None`` with the reason in
    ``note``).

    ``timeout_s`` in seconds, ``memory_mb`` in MiB (None: no limit), ``writable`` the folders
    the sandbox lets the command write (default: ``cwd``), ``stdin_text`` fed on stdin (else
    stdin is ``/dev/null``).
    """
    writable = writable if writable is not None else [cwd]
    note = None
    sandboxed = False
    full_argv = list(argv)
    if not Path(cwd).is_dir():
        return _finish(ProcessResult(argv=argv, cwd=str(cwd), exit_code=None, duration_s=0.0,
                                     note=f"could not start {argv[0]}: working folder {cwd} does not exist"), log_path)
    if sandbox != "off":
        bwrap, why = bwrap_status(env.get("PATH") if env is not None else None)
        if bwrap is None:
            if sandbox == "require":
                return _finish(ProcessResult(
                    argv=argv, cwd=str(cwd), exit_code=None, duration_s=0.0, refused=True,
                    note=f"refused: [lean] sandbox = \"require\" but {why}",
                ), log_path)
            note = f"not sandboxed: {why}"
        else:
            full_argv = _bwrap_argv(bwrap, argv, cwd, writable)
            sandboxed = True
            note = why
    run_env = {**(env if env is not None else os.environ), "NO_COLOR": "1", "TERM": "dumb"}
    if sandboxed and writable:
        run_env["TMPDIR"] = str(sandbox_tmpdir(writable))
    start = time.monotonic()
    try:
        proc = subprocess.Popen(
            full_argv, cwd=cwd, env=run_env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
            stdin=subprocess.PIPE if stdin_text is not None else subprocess.DEVNULL,
            start_new_session=True, preexec_fn=_limit(memory_mb),
        )
    except OSError as e:
        return _finish(ProcessResult(
            argv=argv, cwd=str(cwd), exit_code=None, duration_s=0.0, sandboxed=sandboxed,
            note=f"could not start {argv[0]}: {e.strerror or e}",
        ), log_path)
    timed_out = False
    try:
        out, _ = proc.communicate(input=stdin_text.encode() if stdin_text is not None else None, timeout=timeout_s)
    except subprocess.TimeoutExpired:
        timed_out = True
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        out, _ = proc.communicate()
    duration = time.monotonic() - start
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
