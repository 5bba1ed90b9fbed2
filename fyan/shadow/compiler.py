"""The compile step of SA-Pass behind one small interface, ``Compiler``.

``compile(text, label=..., nonce=..., lookups=..., black_box=...)`` elaborates one whole Lean
file as a module, reads the compiled module with Fyan's trusted inspector
(``fyan.lean.inspector``), and returns a ``CompileOutcome``: exit code, ``lean --json`` output
and its parsed diagnostics, and the inspector's report (every declaration of the module with
its transitive axioms, the extension entries it registers, and the ``lookups`` by name; a
``black_box`` declaration passes none of its axioms on, so a checker is judged without the
candidate's own proof). Nothing the file printed while compiling is evidence: a check is
decided from the inspector's report. Three implementations:

* ``LeanCompiler`` — the real adapter: writes the file to a scratch folder as module
  ``FyanShadow_<hash>`` and compiles it with plain ``lean --json`` (``fyan.lean.compile``, the
  gate's own path, so no Lake workspace takes part) with the dependency search path of a Lake package the user
  configures (a package whose ``lakefile`` requires Mathlib for minif2f-style problems, built or
  fetched with ``lake exe cache get``; ``fyan.lean.compile.resolve``) or of the gate workspace,
  then runs the trusted inspector on that module: a timeout per compile (seconds), a memory limit
  (MiB), the bubblewrap sandbox per ``[lean] sandbox``. Each compile writes only its own output
  folder, which is on no search path; its outputs are copied into the scratch folder's ``lib/``
  (searched by the inspector) only when the folder holds nothing but the module's own files; a
  candidate module that passed its checks (``trust_module``, ``fyan.shadow.evaluate``) is copied
  on into ``imports/``, the only scratch folder later compiles search (a checker module imports
  its candidate; a submission can never import another submission's module
  that was rejected) —
  the scratch folder is never searched before the dependencies and Lean's own library. The folder
  (``<workspace>/.fyan-shadow/run-*``) is removed by ``close``.
* ``RecordedCompiler`` — replays outcomes (output and inspection) from a JSON-lines file keyed by
  the sha256 of the file text (with the run's nonce replaced by a placeholder), and fails loudly
  on a miss. Each entry says where it came from (``origin``): a recorded Lean run, or an
  *authored expectation* (what a real Lean is expected to decide, written by people where no
  Lean runs, e.g. the demo set).
* ``RecordingCompiler`` — wraps a real compiler and appends every outcome to such a file.

Checkers are named theorems ``fyan_shadow_check_<nonce>`` (``assemble``): the nonce is random per
file, so a candidate cannot declare a checker's name in advance, and a checker counts only when
the inspector finds it in the compiled module — a file whose elaboration stopped early
(``#exit``, an unterminated comment) never passes.
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
from collections.abc import Sequence
from pathlib import Path

from pydantic import BaseModel, Field, ValidationError

from fyan.config import LeanSection
from fyan.errors import ExitCode, FyanError, InputError
from fyan.lean.diagnostics import Diagnostic, parse_lean_json
from fyan.sandbox import safefile
from fyan.lean.inspector import InspectorBuild, InspectorReport, run_inspector
from fyan.lean.compile import LeanSetup, compile_module
from fyan.sandbox.runner import Confinement, project_confinement, toolchain_paths
from fyan.lean.toolchain import Toolchain

NONCE_PLACEHOLDER = "<FYAN-SHADOW-NONCE>"
#: Prefix of a checker theorem's name (then the file's nonce).
CHECKER_PREFIX = "fyan_shadow_check_"
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
    """One compile: what ran, its exit status, its ``lean --json`` output, parsed, and the
    trusted inspector's report of the compiled module (None when it did not compile or could
    not be inspected: ``inspection_problem`` says why)."""

    label: str
    exit_code: int | None = Field(description="None when it did not run or was killed at the timeout")
    timed_out: bool = False
    duration_s: float = 0.0
    output: str = ""
    diagnostics: list[Diagnostic] = Field(default_factory=list)
    unrecognized: list[str] = Field(default_factory=list)
    note: str | None = None
    origin: str = Field(description="'lean: <version>' for a real run; the recorded entry's origin on replay")
    module: str | None = Field(default=None, description="The module name the file was compiled as")
    inspection: InspectorReport | None = None
    inspection_problem: str | None = None

    @property
    def errors(self) -> list[Diagnostic]:
        return [d for d in self.diagnostics if d.severity == "error"]


def module_name(text: str, nonce: str) -> str:
    """The module a file is compiled as: ``FyanShadow_<first 12 hex of its key>``."""
    return f"FyanShadow_{text_key(text, nonce)[:12]}"


class Compiler(ABC):
    """Elaborates whole Lean files and inspects the result. Implementations are thread-safe
    (the batch runs in parallel)."""

    #: Short description for reports (toolchain version, or the replay file)
    description: str = ""

    @abstractmethod
    def compile(self, text: str, *, label: str, nonce: str, lookups: Sequence[str] = (),
                black_box: Sequence[str] = ()) -> CompileOutcome: ...

    def trust_module(self, module: str) -> None:  # noqa: B027 - optional hook
        """``module`` (compiled by this compiler) passed the candidate's checks: later compiles may
        import it (a checker imports its candidate). Only such modules are importable."""

    def close(self) -> None:  # noqa: B027 - optional hook
        """Release scratch space."""


def _outcome(label: str, output: str, exit_code: int | None, origin: str, **extra) -> CompileOutcome:
    parsed = parse_lean_json(output)
    return CompileOutcome(label=label, exit_code=exit_code, output=output, diagnostics=parsed.diagnostics,
                          unrecognized=parsed.unrecognized, origin=origin, **extra)


class LeanCompiler(Compiler):
    """Plain ``lean --json``, then the trusted inspector (module docstring).

    ``setup`` is the toolchain as compiles use it (``fyan.lean.compile.LeanSetup``: the real
    ``lean``, the dependency folders); ``search_path`` the folders searched before them (the gate
    workspace's ``lib/``: upstream units); ``scratch_parent`` where the scratch folder is made;
    ``timeout_s`` is per compile (seconds); ``config`` gives the memory limit (MiB) and the sandbox
    mode; ``inspector`` is the trusted inspector built for the toolchain; ``project_root``, when
    given, is hidden from the compile (the completion gate's shadow check). ``log_dir``, when
    given, receives one log per compile and per inspection.
    """

    def __init__(self, toolchain: Toolchain, setup: LeanSetup, scratch_parent: Path, config: LeanSection, *,
                 timeout_s: float, inspector: InspectorBuild, search_path: Sequence[Path] = (),
                 log_dir: Path | None = None, project_root: Path | None = None) -> None:
        self.toolchain = toolchain
        self.setup = setup
        self.config = config.model_copy(update={"build_timeout": timeout_s})
        self.inspector = inspector
        self.search = [Path(p) for p in search_path]
        self.log_dir = log_dir
        self.project_root = project_root
        (scratch_parent / ".fyan-shadow").mkdir(parents=True, exist_ok=True)
        self.scratch = Path(tempfile.mkdtemp(prefix="run-", dir=scratch_parent / ".fyan-shadow"))
        for d in ("src", "build", "lib", "imports", "tmp", "reports"):
            (self.scratch / d).mkdir()
        self.description = f"lean {setup.version} ({toolchain.version}), read by the trusted inspector"

    def _confinement(self, writable: list[Path], *readable: Path) -> Confinement:
        tmp = self.scratch / "tmp"
        if self.project_root is not None:
            return project_confinement(self.project_root, [tmp, *writable], toolchain=self.toolchain,
                                       read_only=[self.scratch], extra_readable=[*self.search, *self.setup.readable(),
                                                                                 *readable])
        # no project: the toolchain's folders and [lean] sandbox_readable, as a project's confinement has
        return Confinement(writable=(tmp, *writable),
                           read_only=tuple(dict.fromkeys((self.scratch, *self.search, *self.setup.readable(),
                                                          *toolchain_paths(getattr(self.toolchain, "lake", None)),
                                                          *getattr(self.toolchain, "readable", ()), *readable))))

    def compile(self, text: str, *, label: str, nonce: str, lookups: Sequence[str] = (),
                black_box: Sequence[str] = ()) -> CompileOutcome:
        safe = re.sub(r"[^A-Za-z0-9_.-]+", "_", label)[:120]
        module = module_name(text, nonce)
        (self.scratch / "src" / f"{module}.lean").write_text(text, encoding="utf-8")
        out = self.scratch / "build" / module
        shutil.rmtree(out, ignore_errors=True)
        out.mkdir()
        logs = self.log_dir or (self.scratch / "reports")
        result = compile_module(self.setup, source_root=self.scratch / "src", module=module, out_root=out,
                                search_path=[self.scratch / "imports", *self.search], config=self.config,
                                log_dir=logs, name=safe,
                                confinement=self._confinement([out]))
        proc = result.process
        outcome = _outcome(label, proc.output, proc.exit_code, f"lean: {self.toolchain.version}",
                           timed_out=proc.timed_out, duration_s=proc.duration_s, note=proc.note, module=module)
        if not result.ok:
            outcome.inspection_problem = f"not inspected: the file does not compile ({result.reason})"
            return outcome
        extra = [p for p in out.rglob("*")
                 if not safefile.is_regular(p) or not p.name.startswith(module + ".")]
        if extra:
            outcome.inspection_problem = (f"not inspected: the compile left files that are not its module's outputs: "
                                          f"{', '.join(p.name for p in extra[:5])}")
            return outcome
        for path in out.iterdir():  # the checked outputs join the folder the inspector searches
            if path.is_file():
                safefile.copy_file(path, self.scratch / "lib" / path.name, limit=1 << 30)
        # every process of the compile has ended: now the trusted inspector reads the module
        reports = self.scratch / "reports"
        inspection = run_inspector(
            self.inspector, self.toolchain, self.scratch, config=self.config, out_dir=reports,
            name=f"{module}.inspect", modules=[module], names=list(lookups), black_box=list(black_box),
            confinement=self._confinement([reports], self.inspector.folder),
            lean_env=self.setup.environment([self.scratch / "lib", *self.search]))
        if self.log_dir is not None and (reports / f"{module}.inspect.json").is_file():
            shutil.copyfile(reports / f"{module}.inspect.json", self.log_dir / f"{safe}.inspect.json")
        outcome.inspection = inspection.report if inspection.ok else None
        outcome.inspection_problem = inspection.problem
        return outcome

    def trust_module(self, module: str) -> None:
        for path in (self.scratch / "lib").glob(f"{module}.*"):
            safefile.copy_file(path, self.scratch / "imports" / path.name, limit=1 << 30)

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
    inspection: dict | None = Field(default=None, description="the inspector's report (nonce replaced), or None")
    inspection_problem: str | None = None


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

    def compile(self, text: str, *, label: str, nonce: str, lookups: Sequence[str] = (),
                black_box: Sequence[str] = ()) -> CompileOutcome:
        key = text_key(text, nonce)
        entry = self.entries.get(key)
        if entry is None:
            raise CompileReplayMiss(
                f"{self.path}: no recorded outcome for {label} (key {key[:16]})",
                hint="the shadow set, the submission or the assembly changed since recording: record again with "
                "Lean (--record), or rebuild the demo's outcomes with scripts/build_shadow_demo.py",
            )
        inspection = None
        if entry.inspection is not None:
            data = json.loads(json.dumps(entry.inspection).replace(NONCE_PLACEHOLDER, nonce))
            inspection = InspectorReport.model_validate(data)
        return _outcome(label, entry.output.replace(NONCE_PLACEHOLDER, nonce), entry.exit_code,
                        entry.origin, timed_out=entry.timed_out, module=module_name(text, nonce),
                        inspection=inspection, inspection_problem=entry.inspection_problem)


class RecordingCompiler(Compiler):
    """Forwards to ``inner`` and appends each outcome to ``path`` (labelled with its origin)."""

    def __init__(self, inner: Compiler, path: Path) -> None:
        self.inner = inner
        self.path = path
        self.description = f"{inner.description}; recording to {path}"
        self._lock = threading.Lock()

    def compile(self, text: str, *, label: str, nonce: str, lookups: Sequence[str] = (),
                black_box: Sequence[str] = ()) -> CompileOutcome:
        outcome = self.inner.compile(text, label=label, nonce=nonce, lookups=lookups, black_box=black_box)
        inspection = None
        if outcome.inspection is not None:
            inspection = json.loads(outcome.inspection.model_dump_json().replace(nonce, NONCE_PLACEHOLDER))
        entry = RecordedOutcome(key=text_key(text, nonce), label=label, origin=outcome.origin,
                                exit_code=outcome.exit_code, timed_out=outcome.timed_out,
                                output=outcome.output.replace(nonce, NONCE_PLACEHOLDER), inspection=inspection,
                                inspection_problem=outcome.inspection_problem)
        with self._lock:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with open(self.path, "a", encoding="utf-8") as fh:
                fh.write(json.dumps(entry.model_dump(mode="json"), ensure_ascii=False, sort_keys=True) + "\n")
        return outcome

    def trust_module(self, module: str) -> None:
        self.inner.trust_module(module)

    def close(self) -> None:
        self.inner.close()
