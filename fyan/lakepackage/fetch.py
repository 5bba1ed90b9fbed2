"""Fetching the project package's dependencies: Fyan's own trusted step, visible and resumable.

A project whose Lake package (``lean/``) requires Git packages — Mathlib — needs them fetched
and built before any unit can compile. Fyan does that itself, in the project package, never in
a workspace and never inside the sandbox, and never by running anything a model wrote (the
package's ``lakefile.toml`` is Fyan's: ``fyan.lakepackage.package.write_package_config``):

1. ``lake --keep-toolchain update`` when the manifest (``lean/lake-manifest.json``) is missing or stale — it
   lacks a required package or records another ``inputRev`` for it than the lakefile's ``rev``.
   Lake then resolves the requirements, clones each Git package into ``.lake/packages/<name>``
   and writes the manifest (Lake's ``lake help update``; docs/lean-contract.md, "Fetching
   dependencies").
2. ``lake exe cache get`` when Mathlib is required and its compiled root module
   (``.lake/packages/mathlib/.lake/build/lib/lean/Mathlib.olean``) is missing: Mathlib's cache
   program downloads the prebuilt modules (each download lands as ``<file>.part`` and is renamed
   when complete; files already present are not downloaded again) and unpacks them (Mathlib
   ``Cache/Requests.lean``: ``Attempting to download N file(s)``, ``Downloaded: S file(s)
   [attempted D/N = P%]``, ``No files to download``, ``N download(s) failed`` with exit 1).

Each step prints its progress (``FetchProgress``: the step, the last line its tool printed —
how many files, what percentage — and the time it has taken) and keeps its whole output in
``.fyan/logs/fetch-<step>.log``. Both steps are resumable: an interrupted or offline fetch leaves
what Lake and the cache program left (they resume from it) and nothing of Fyan's; the step is
recorded as done (``.fyan/fetched.json``: the lakefile's and manifest's SHA-256) only after both
succeeded, so a later run or ``fyan setup`` sees exactly what is missing and fetches it.
``FetchError`` says what is missing and which command fetches it.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import threading
import time
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

from fyan.errors import ExitCode, FyanError
from fyan.lean.toolchain import Toolchain

#: where Lake clones Git dependencies (the manifest's ``packagesDir`` default)
PACKAGES = Path(".lake") / "packages"
#: Lake's global option: never rewrite ``lean-toolchain`` (the pin is Fyan's, set with the Mathlib tag)
KEEP = "--keep-toolchain"
#: Mathlib's compiled root module, once its cache is unpacked
MATHLIB_OLEAN = PACKAGES / "mathlib" / ".lake" / "build" / "lib" / "lean" / "Mathlib.olean"


class FetchError(FyanError):
    """The dependencies could not be fetched (offline, a server refusing, a tag that does not
    exist): the message says what is missing, the hint which command fetches it (it resumes)."""

    exit_code = ExitCode.INCOMPLETE


def git_requires(package: Path) -> dict[str, str]:
    """The Git packages ``package/lakefile.toml`` requires: name → ``rev`` ("" when none is
    given). Path requirements (an adopted package) need no fetching and are left out; so is
    everything when there is no readable ``lakefile.toml``."""
    try:
        data = tomllib.loads((package / "lakefile.toml").read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        return {}
    out = {}
    for r in data.get("require", []):
        if isinstance(r, dict) and isinstance(r.get("name"), str) and not r.get("path"):
            out[r["name"]] = str(r.get("rev", ""))
    return out


def manifest_problem(package: Path, requires: dict[str, str]) -> str | None:
    """Why ``lake update`` must run (the manifest is missing, unreadable, lacks a required
    package or records another ``inputRev`` for it), or None when the manifest is current."""
    path = package / "lake-manifest.json"
    if not path.is_file():
        return "no lake-manifest.json yet"
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        packages = {p["name"]: p for p in data.get("packages", [])}
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return "lake-manifest.json is unreadable"
    for name, rev in requires.items():
        entry = packages.get(name)
        if entry is None:
            return f"lake-manifest.json does not list {name}"
        if rev and entry.get("inputRev") not in (rev, None):
            return f"lake-manifest.json pins {name} at {entry.get('inputRev')}, lakefile.toml asks for {rev}"
        if not (package / PACKAGES / name).is_dir():
            return f"{name} is not cloned into {PACKAGES / name}"
    return None


def _fingerprint(package: Path) -> dict[str, str]:
    out = {}
    for name in ("lakefile.toml", "lake-manifest.json", "lean-toolchain"):
        try:
            out[name] = hashlib.sha256((package / name).read_bytes()).hexdigest()
        except OSError:
            out[name] = ""
    return out


def missing(package: Path, record: Path) -> list[str]:
    """What the package still lacks, in words ([] when everything is fetched): the manifest
    (``manifest_problem``), Mathlib's compiled modules, or a fetch never recorded as finished
    for this lakefile, manifest and toolchain."""
    requires = git_requires(package)
    if not requires:
        return []
    out = []
    problem = manifest_problem(package, requires)
    if problem:
        out.append(f"the dependencies ({', '.join(requires)}): {problem}")
    if "mathlib" in requires and not (package / MATHLIB_OLEAN).is_file():
        out.append("Mathlib's compiled modules (its cache is not downloaded yet)")
    if not out:
        try:
            done = json.loads(record.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            done = None
        if done != _fingerprint(package):
            out.append("a finished fetch for this lakefile, manifest and toolchain")
    return out


class FetchProgress:
    """The fetch display, on ``stream`` (stderr by default): on a terminal one line rewritten in
    place (step, the tool's last line, elapsed time); otherwise a line when a step starts and
    ends, each new kind of line the tool prints, and a redrawn counter (the cache program's
    ``Downloaded: …``) at most every ``every_s`` seconds and once at its last value.
    ``enabled`` False prints nothing; ``lines`` keeps what was shown."""

    def __init__(self, enabled: bool = True, stream: IO[str] | None = None, every_s: float = 5.0) -> None:
        self.enabled = enabled
        self.stream = stream if stream is not None else sys.stderr
        self.tty = bool(getattr(self.stream, "isatty", lambda: False)())
        self.every_s = every_s
        self._last = 0.0
        self._kind = ""
        self._pending: str | None = None
        self.lines: list[str] = []

    def _write(self, text: str, *, final: bool) -> None:
        self.lines.append(text)
        if not self.enabled:
            return
        try:
            if self.tty:
                self.stream.write("\r\033[K" + text[:200] + ("\n" if final else ""))
            else:
                self.stream.write(text + "\n")
            self.stream.flush()
        except (OSError, ValueError):
            self.enabled = False

    def _flush(self) -> None:
        if self._pending is not None:
            self._write(self._pending, final=False)
            self._pending = None

    def start(self, what: str) -> None:
        self._last, self._kind, self._pending = 0.0, "", None
        self._write(f"fetching: {what}", final=not self.tty)

    def update(self, what: str, line: str, elapsed: float) -> None:
        text = f"fetching: {what}: {line} ({elapsed:.0f} s)"
        kind = line.split(":", 1)[0] if ":" in line else line
        now = time.monotonic()
        if not self.tty and kind == self._kind and now - self._last < self.every_s:
            self._pending = text  # the counter's latest value, shown when it stops changing
            return
        if kind != self._kind:
            self._flush()
        self._pending = None
        self._kind, self._last = kind, now
        self._write(text, final=False)

    def end(self, what: str, ok: bool, elapsed: float, detail: str) -> None:
        self._flush()
        self._write(f"fetched: {what} in {elapsed:.0f} s" if ok else f"fetch FAILED: {what} after {elapsed:.0f} s: "
                    f"{detail}", final=True)


@dataclass
class StepResult:
    """One fetch step: its command, exit code, seconds, last line of output and log file."""

    what: str
    argv: list[str]
    exit_code: int | None
    seconds: float
    last_line: str
    log: str

    @property
    def ok(self) -> bool:
        return self.exit_code == 0

    @property
    def command(self) -> list[str]:
        """The Lake command without the program and Lake's global options (``update``)."""
        return [a for a in self.argv[1:] if a != KEEP]


@dataclass
class FetchReport:
    """What ``ensure_fetched`` did: ``steps`` run (none when everything was there)."""

    package: str
    requires: dict[str, str]
    steps: list[StepResult] = field(default_factory=list)

    @property
    def fetched(self) -> bool:
        return bool(self.steps)

    def text(self) -> str:
        if not self.requires:
            return f"{self.package}: no dependency to fetch (core Lean only)"
        deps = ", ".join(f"{n} {r}".strip() for n, r in self.requires.items())
        if not self.steps:
            return f"{self.package}: dependencies already fetched ({deps})"
        return f"{self.package}: fetched {deps}: " + "; ".join(
            f"lake {' '.join(s.command)} {s.seconds:.0f} s" for s in self.steps)


def _run_step(what: str, argv: list[str], cwd: Path, log: Path, progress: FetchProgress, timeout_s: float) -> StepResult:
    """Run one step, streaming its output (``\\r`` and ``\\n`` both end a line, as the cache
    program redraws its counter with ``\\r``) into the display and the log."""
    progress.start(what)
    start = time.monotonic()
    log.parent.mkdir(parents=True, exist_ok=True)
    last = ""
    env = {**os.environ, "NO_COLOR": "1"}
    with open(log, "w", encoding="utf-8") as fh:
        fh.write("$ " + " ".join(argv) + f"\n# cwd {cwd}\n")
        try:
            proc = subprocess.Popen(argv, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                    stderr=subprocess.STDOUT, start_new_session=True)
        except OSError as e:
            fh.write(f"# could not start: {e}\n")
            result = StepResult(what, argv, None, 0.0, f"could not start: {e.strerror or e}", str(log))
            progress.end(what, False, 0.0, result.last_line)
            return result
        timer = threading.Timer(timeout_s, proc.kill)
        timer.start()
        buffer = b""
        try:
            assert proc.stdout is not None
            while True:
                chunk = proc.stdout.read1(4096) if hasattr(proc.stdout, "read1") else proc.stdout.read(4096)
                if not chunk:
                    break
                buffer += chunk
                parts = buffer.replace(b"\r", b"\n").split(b"\n")
                buffer = parts.pop()
                for raw in parts:
                    line = raw.decode("utf-8", "replace").strip()
                    if line:
                        fh.write(line + "\n")
                        last = line
                        progress.update(what, line, time.monotonic() - start)
            if buffer.strip():
                last = buffer.decode("utf-8", "replace").strip()
                fh.write(last + "\n")
            code = proc.wait()
        finally:
            timer.cancel()
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        elapsed = time.monotonic() - start
        fh.write(f"# exit {code} after {elapsed:.1f} s\n")
    result = StepResult(what, argv, code, elapsed, last, str(log))
    progress.end(what, result.ok, elapsed, last or f"exit {code}")
    return result


def ensure_fetched(package: Path, toolchain: Toolchain, state_dir: Path, *, progress: FetchProgress | None = None,
                   command: str = "fyan setup", timeout_s: float = 3600.0) -> FetchReport:
    """Fetch what ``package`` lacks (module docstring), in order, each step once; returns the
    report. Raises ``FetchError`` naming what is still missing and ``command`` (which resumes)
    when a step fails. A package that requires no Git package needs nothing and runs nothing."""
    progress = progress or FetchProgress()
    requires = git_requires(package)
    report = FetchReport(str(package), requires)
    record = state_dir / "fetched.json"
    if not missing(package, record):
        return report
    logs = state_dir / "logs"
    lake = str(toolchain.lake)
    deps = ", ".join(f"{n} {r}".strip() for n, r in requires.items())
    problem = manifest_problem(package, requires)
    if problem:
        step = _run_step(f"lake update ({deps}; {problem})", [lake, KEEP, "update"], package,
                         logs / "fetch-update.log", progress, timeout_s)
        report.steps.append(step)
        if not step.ok or manifest_problem(package, requires):
            raise _failure(package, record, step, command)
    if "mathlib" in requires and not (package / MATHLIB_OLEAN).is_file():
        step = _run_step("lake exe cache get (Mathlib's prebuilt modules)", [lake, KEEP, "exe", "cache", "get"],
                         package, logs / "fetch-cache.log", progress, timeout_s)
        report.steps.append(step)
        if not step.ok or not (package / MATHLIB_OLEAN).is_file():
            raise _failure(package, record, step, command)
    tmp = record.with_suffix(".tmp")
    tmp.parent.mkdir(parents=True, exist_ok=True)
    tmp.write_text(json.dumps(_fingerprint(package)) + "\n", encoding="utf-8")
    tmp.replace(record)
    return report


def _failure(package: Path, record: Path, step: StepResult, command: str) -> FetchError:
    still = missing(package, record)
    what = "lake " + " ".join(step.command)
    why = (f"`{what}` failed ({'exit ' + str(step.exit_code) if step.exit_code is not None else 'not started'}"
           f"): {step.last_line or 'no output'}" if not step.ok else
           f"`{what}` exited 0 but left {'; '.join(still) or 'the package incomplete'}")
    return FetchError(f"the project's Lake package ({package}) is missing {'; '.join(still) or 'its dependencies'}: "
                      f"{why} (full output: {step.log})",
                      hint=f"check the network (the first fetch of Mathlib downloads a few GB), then `{command}`: it "
                           "resumes where this fetch stopped; nothing was recorded as fetched")


def fetch_project(project, *, progress: FetchProgress | None = None, command: str | None = None) -> FetchReport | None:
    """``ensure_fetched`` for ``project``'s Lake package (created first when missing): what a
    run does before its first attempt and ``fyan setup`` does alone. None when no toolchain is
    found (nothing can fetch; every gate then reports the missing toolchain). Raises
    ``FetchError``."""
    from fyan.lakepackage.package import init_package
    from fyan.lean.toolchain import discover

    package = project.paths.lean
    if not (package / "lakefile.toml").is_file():
        init_package(project)
    requires = git_requires(package)
    if not requires:
        return FetchReport(str(package), requires)
    disc = discover(project.config.lean, cwd=package)
    if disc.toolchain is None:
        return None
    return ensure_fetched(package, disc.toolchain, project.paths.state, progress=progress,
                          command=command or f"fyan setup {project.paths.root}")


def setup_report(project, *, progress: FetchProgress | None = None) -> tuple[bool, dict, str]:
    """``fyan setup``: (done, payload, text). Not done without a toolchain (the text says how to
    install one); ``FetchError`` propagates."""
    from fyan.lean.toolchain import TOOLCHAIN_MISSING

    report = fetch_project(project, progress=progress)
    if report is None:
        return False, {"fetched": False, "problem": TOOLCHAIN_MISSING}, (
            f"Nothing fetched: {TOOLCHAIN_MISSING}; then run `fyan setup {project.paths.root}` again")
    payload = {"fetched": report.fetched, "requires": report.requires,
               "steps": [{"command": s.command, "exit_code": s.exit_code, "seconds": round(s.seconds, 1),
                          "log": s.log} for s in report.steps]}
    return True, payload, report.text()
