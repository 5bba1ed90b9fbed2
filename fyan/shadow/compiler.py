"""The compile step of SA-Pass behind one small interface, ``Compiler``.

``compile(text, label=..., nonce=...)`` elaborates one whole Lean file and returns a
``CompileOutcome`` (exit code, ``lean --json`` output and its parsed diagnostics). Three
implementations:

* ``LakeEnvCompiler`` — the real adapter: writes the file to a scratch folder and runs
  ``lake env lean --json <file>`` in a Lake workspace the user configures (a package whose
  ``lakefile`` requires Mathlib for minif2f-style problems, built or fetched with
  ``lake exe cache get``), through ``fyan.lean.runner.run_process``: a timeout per compile
  (seconds), a memory limit (MiB), the bubblewrap sandbox per ``[lean] sandbox`` (only the
  scratch folder ``<workspace>/.fyan-shadow/run-*`` is bound; a plain ``lean`` run writes no
  file; the folder is removed by ``close``). Lake documents ``lake env`` as running a command
  with the package's ``LEAN_PATH``; ``lean --json`` prints one message per line.
* ``RecordedCompiler`` — replays outcomes from a JSON-lines file keyed by the sha256 of the file
  text (with the run's nonce replaced by a placeholder), and fails loudly on a miss. Each entry
  says where it came from (``origin``): a recorded Lean run, or an *authored expectation* (what a
  real Lean is expected to decide, written by people where no Lean runs, e.g. the demo set).
* ``RecordingCompiler`` — wraps a real compiler and appends every outcome to such a file.

Every assembled file ends with ``#print "FYAN-SHADOW-END <nonce>"`` (``assemble``): a check
passes only if that line's message, with this run's random nonce and at its own line, is in
the output, so a file whose elaboration stopped early (``#exit``, an unterminated comment) never
passes, and a candidate cannot print it in advance (the nonce does not exist when it is
written). Same rule as the gate's probe (DESIGN.md §3: only nonce-tagged lines count).
"""

from __future__ import annotations

import hashlib
import json
import re
import secrets
import shutil
import tempfile
import threading
from abc import ABC, abstractmethod
from pathlib import Path

from pydantic import BaseModel, Field, ValidationError

from fyan.config import LeanSection
from fyan.errors import ExitCode, FyanError, InputError
from fyan.lean.diagnostics import Diagnostic, parse_lean_json
from fyan.lean.runner import run_process
from fyan.lean.toolchain import Toolchain

MARKER = "FYAN-SHADOW-END"
NONCE_PLACEHOLDER = "<FYAN-SHADOW-NONCE>"
_NONCE = re.compile(r"^[0-9a-f]{32}$")


class ToolchainUnavailable(FyanError):
    """No Lean toolchain (or no usable workspace) for a command that must compile: fail closed."""

    exit_code = ExitCode.INCOMPLETE
    retryable = False


class CompileReplayMiss(FyanError):
    """A recorded-outcome file has no entry for a compiled file (names label and key)."""

    retryable = False


def new_nonce() -> str:
    """128 random bits, hex (32 characters)."""
    return secrets.token_hex(16)


def text_key(text: str, nonce: str) -> str:
    """sha256 of ``text`` with ``nonce`` replaced by the placeholder (stable across runs)."""
    return hashlib.sha256(text.replace(nonce, NONCE_PLACEHOLDER).encode("utf-8")).hexdigest()


class CompileOutcome(BaseModel):
    """One compile: what ran, its exit status and its ``lean --json`` output, parsed."""

    label: str
    exit_code: int | None = Field(description="None when it did not run or was killed at the timeout")
    timed_out: bool = False
    duration_s: float = 0.0
    output: str = ""
    diagnostics: list[Diagnostic] = Field(default_factory=list)
    unrecognized: list[str] = Field(default_factory=list)
    note: str | None = None
    origin: str = Field(description="'lean: <version>' for a real run; the recorded entry's origin on replay")

    @property
    def errors(self) -> list[Diagnostic]:
        return [d for d in self.diagnostics if d.severity == "error"]


class Compiler(ABC):
    """Elaborates whole Lean files. Implementations are thread-safe (the batch runs in parallel)."""

    #: Short description for reports (toolchain version, or the replay file)
    description: str = ""

    @abstractmethod
    def compile(self, text: str, *, label: str, nonce: str) -> CompileOutcome: ...

    def close(self) -> None:  # noqa: B027 - optional hook
        """Release scratch space."""


def _outcome(label: str, output: str, exit_code: int | None, origin: str, **extra) -> CompileOutcome:
    parsed = parse_lean_json(output)
    return CompileOutcome(label=label, exit_code=exit_code, output=output, diagnostics=parsed.diagnostics,
                          unrecognized=parsed.unrecognized, origin=origin, **extra)


class LakeEnvCompiler(Compiler):
    """``lake env lean --json <file>`` in ``workspace`` (see the module docstring).

    ``timeout_s`` is per compile (seconds); ``config`` gives the memory limit (MiB) and the
    sandbox mode. ``log_dir``, when given, receives one log per compile (command, output, exit).
    """

    def __init__(self, toolchain: Toolchain, workspace: Path, config: LeanSection, *, timeout_s: float,
                 log_dir: Path | None = None) -> None:
        self.toolchain = toolchain
        self.workspace = workspace
        self.config = config
        self.timeout_s = timeout_s
        self.log_dir = log_dir
        # inside the workspace, the only place a sandboxed build may write (the rest of the file
        # system, /tmp included, is read-only there)
        (workspace / ".fyan-shadow").mkdir(parents=True, exist_ok=True)
        self.scratch = Path(tempfile.mkdtemp(prefix="run-", dir=workspace / ".fyan-shadow"))
        self.description = f"lean ({toolchain.version}) in {workspace}"

    def compile(self, text: str, *, label: str, nonce: str) -> CompileOutcome:
        safe = re.sub(r"[^A-Za-z0-9_.-]+", "_", label)[:120]
        path = self.scratch / f"{safe}-{text_key(text, nonce)[:12]}.lean"
        path.write_text(text, encoding="utf-8")
        proc = run_process(
            [str(self.toolchain.lake), "env", "lean", "--json", str(path)],
            cwd=self.workspace, timeout_s=self.timeout_s, memory_mb=self.config.memory_limit_mb,
            sandbox=self.config.sandbox, writable=[self.scratch],
            log_path=(self.log_dir / f"{safe}.log") if self.log_dir else None,
        )
        return _outcome(label, proc.output, proc.exit_code, f"lean: {self.toolchain.version}",
                        timed_out=proc.timed_out, duration_s=proc.duration_s, note=proc.note)

    def close(self) -> None:
        shutil.rmtree(self.scratch, ignore_errors=True)
        try:
            self.scratch.parent.rmdir()  # only when no other run uses it
        except OSError:
            pass


class RecordedOutcome(BaseModel):
    """One line of a recorded-outcome file (JSON lines)."""

    key: str
    label: str
    origin: str = Field(description="e.g. 'lean: Lake version ...' or 'authored expectation (not a Lean run)'")
    exit_code: int | None
    timed_out: bool = False
    output: str = Field(description="lean --json output with the nonce replaced by the placeholder")


def load_recordings(path: Path) -> dict[str, RecordedOutcome]:
    """Entries of a recorded-outcome file by key; raises ``InputError`` naming a malformed line."""
    entries: dict[str, RecordedOutcome] = {}
    if not path.is_file():
        raise InputError(f"{path}: no such recorded-outcome file",
                         hint="record one with --record FILE on a machine with Lean, or rebuild the demo's with "
                         "scripts/build_shadow_demo.py")
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            entry = RecordedOutcome.model_validate_json(line)
        except (ValidationError, ValueError) as e:
            raise InputError(f"{path}:{n}: not a recorded compile outcome: {str(e).splitlines()[0]}") from None
        entries[entry.key] = entry
    return entries


class RecordedCompiler(Compiler):
    """Serves recorded outcomes (module docstring); a miss raises ``CompileReplayMiss``."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.entries = load_recordings(path)
        origins = sorted({e.origin for e in self.entries.values()})
        self.description = f"replayed from {path} ({len(self.entries)} outcomes; origin: {'; '.join(origins)})"

    def compile(self, text: str, *, label: str, nonce: str) -> CompileOutcome:
        key = text_key(text, nonce)
        entry = self.entries.get(key)
        if entry is None:
            raise CompileReplayMiss(
                f"{self.path}: no recorded outcome for {label} (key {key[:16]})",
                hint="the shadow set, the submission or the assembly changed since recording: record again with "
                "Lean (--record), or rebuild the demo's outcomes with scripts/build_shadow_demo.py",
            )
        return _outcome(label, entry.output.replace(NONCE_PLACEHOLDER, nonce), entry.exit_code,
                        entry.origin, timed_out=entry.timed_out)


class RecordingCompiler(Compiler):
    """Forwards to ``inner`` and appends each outcome to ``path`` (labelled with its origin)."""

    def __init__(self, inner: Compiler, path: Path) -> None:
        self.inner = inner
        self.path = path
        self.description = f"{inner.description}; recording to {path}"
        self._lock = threading.Lock()

    def compile(self, text: str, *, label: str, nonce: str) -> CompileOutcome:
        outcome = self.inner.compile(text, label=label, nonce=nonce)
        entry = RecordedOutcome(key=text_key(text, nonce), label=label, origin=outcome.origin,
                                exit_code=outcome.exit_code, timed_out=outcome.timed_out,
                                output=outcome.output.replace(nonce, NONCE_PLACEHOLDER))
        with self._lock:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with open(self.path, "a", encoding="utf-8") as fh:
                fh.write(json.dumps(entry.model_dump(mode="json"), ensure_ascii=False, sort_keys=True) + "\n")
        return outcome

    def close(self) -> None:
        self.inner.close()


_AXIOMS = re.compile(r"^'(?P<name>.+)' depends on axioms: \[(?P<list>.*)\]\s*$", re.DOTALL)
_NO_AXIOMS = re.compile(r"^'(?P<name>.+)' does not depend on any axioms\s*$")


def parse_axioms(text: str) -> list[str] | None:
    """Axioms from a ``#print axioms`` message (the list may wrap over lines); None if the text
    is not such a message."""
    t = text.strip()
    m = _AXIOMS.match(t)
    if m:
        return [a.strip() for a in m.group("list").replace("\n", " ").split(",") if a.strip()]
    if _NO_AXIOMS.match(t):
        return []
    return None


def marker_seen(outcome: CompileOutcome, nonce: str, line: int) -> bool:
    """The end marker with this ``nonce`` was printed at ``line`` (1-based)."""
    expected = f"{MARKER} {nonce}"
    return any(d.line == line and d.text.strip() == expected for d in outcome.diagnostics)


def axioms_at(outcome: CompileOutcome, line: int) -> list[str] | None:
    """The axioms Lean printed for ``#print axioms`` at ``line``; None when there is no such message."""
    for d in outcome.diagnostics:
        if d.line == line and d.severity != "error":
            found = parse_axioms(d.text)
            if found is not None:
                return found
    return None
