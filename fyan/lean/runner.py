"""Run untrusted builds: a timeout, a memory limit, non-tty output, a bubblewrap sandbox.

Lean files written by models are untrusted code and ``lake build`` runs them (DESIGN.md §2).
``run_process`` runs a command

* with a wall-clock timeout (seconds); the whole process group is killed at the deadline;
* with an address-space limit (``RLIMIT_AS``, MiB) set in the child before ``exec``;
* with stdout/stderr merged into a pipe (Lake prints per-job lines instead of a spinner when
  it is not on a terminal) and ``NO_COLOR=1``;
* inside bubblewrap when ``bwrap`` works here: the whole file system read-only, the network
  unshared, writes allowed only in the given folders (the unit workspace), a private ``/tmp``.

``sandbox`` is ``auto`` (bwrap when usable, else run unsandboxed and say so in ``note``),
``require`` (refuse to run without bwrap: the result says why, exit code None) or ``off``.
"""

from __future__ import annotations

import os
import resource
import shutil
import signal
import subprocess
import time
from functools import lru_cache
from pathlib import Path

from pydantic import BaseModel, Field

_MEMORY_MARKERS = ("out of memory", "MemoryError", "std::bad_alloc", "Cannot allocate memory")


class ProcessResult(BaseModel):
    """What happened when a command ran. ``exit_code`` is None when it never ran or was killed
    at the timeout; negative when a signal ended it."""

    argv: list[str]
    cwd: str
    exit_code: int | None
    duration_s: float
    output: str = ""
    timed_out: bool = False
    memory_exceeded: bool = False
    sandboxed: bool = False
    note: str | None = Field(default=None, description="Sandbox or refusal notes for the report")

    @property
    def ok(self) -> bool:
        return self.exit_code == 0 and not self.timed_out


@lru_cache(maxsize=1)
def bwrap_status() -> tuple[str | None, str]:
    """(path to a working ``bwrap`` or None, explanation). Probed once per process."""
    path = shutil.which("bwrap")
    if path is None:
        return None, "bubblewrap (bwrap) is not installed"
    try:
        proc = subprocess.run(
            [path, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--unshare-net", "--", "true"],
            capture_output=True, text=True, timeout=20,
        )
    except (OSError, subprocess.TimeoutExpired) as e:
        return None, f"bwrap does not run here: {e}"
    if proc.returncode != 0:
        return None, f"bwrap does not run here: {proc.stderr.strip() or proc.returncode}"
    return path, "bubblewrap sandbox: read-only root, no network, writes only in the workspace"


def _bwrap_argv(bwrap: str, argv: list[str], cwd: Path, writable: list[Path]) -> list[str]:
    cmd = [
        bwrap, "--die-with-parent", "--unshare-net", "--unshare-pid", "--unshare-ipc",
        "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp",
    ]
    for w in writable:
        w = w.resolve()
        cmd += ["--bind", str(w), str(w)]
    cmd += ["--chdir", str(cwd.resolve()), "--"]
    return cmd + argv


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
    command (a missing executable is ``exit_code=None`` with the reason in ``note``).

    ``log_path``, when given, receives the command line, the full output and the exit status.
    """
    writable = writable if writable is not None else [cwd]
    note = None
    sandboxed = False
    full_argv = list(argv)
    if sandbox != "off":
        bwrap, why = bwrap_status()
        if bwrap is None:
            if sandbox == "require":
                return _finish(ProcessResult(
                    argv=argv, cwd=str(cwd), exit_code=None, duration_s=0.0,
                    note=f"refused: [lean] sandbox = \"require\" but {why}",
                ), log_path)
            note = f"not sandboxed: {why}"
        else:
            full_argv = _bwrap_argv(bwrap, argv, cwd, writable)
            sandboxed = True
            note = why
    run_env = {**(env if env is not None else os.environ), "NO_COLOR": "1", "TERM": "dumb"}
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
    memory = bool(memory_mb) and code not in (0, None) and any(m in text for m in _MEMORY_MARKERS)
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
        log_path.parent.mkdir(parents=True, exist_ok=True)
        header = (
            f"$ {' '.join(result.argv)}\n# cwd: {result.cwd}\n# exit: {result.exit_code}  "
            f"duration: {result.duration_s}s  sandboxed: {result.sandboxed}\n"
            + (f"# note: {result.note}\n" if result.note else "")
        )
        log_path.write_text(header + result.output, encoding="utf-8")
    return result
