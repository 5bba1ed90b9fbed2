"""The trusted inspector: evidence about compiled modules from a program of Fyan's own.

``lake-template/inspector/FyanInspector.lean`` is a small Lean program (a ``lean_exe``). It is
compiled for a toolchain pin before any candidate exists (``build_inspector``, callable on any
pin and into any folder; ``ensure_inspector`` keeps one build per pin and inspector source in
``[lean] inspector_dir``, default ``~/.cache/fyan/inspector/``, outside every workspace and out
of reach of confined processes, and checks the executable's SHA-256 against the build's
manifest before each use). At gate time it loads a unit's compiled modules as an environment
the way lean4checker and comparator do — ``importModules`` without loading extension states
and without running initializers, so nothing of the candidate is elaborated or executed — and
writes one JSON report (``InspectorReport``, format ``fyan-inspector/1``) with, for **every**
declaration of the modules: kind, module, the elaborated type (hashed here: ``type_hash``;
``statement_hash`` adds a definition's value or an inductive type's constructors), a printed
form, safety, ``implemented_by``/``extern``/``init``, ``sorryAx`` used directly, the transitive
axioms; per module its imports and the extension entries it registers; and for each looked-up
name (``names``) the same plus the constants its statement uses, the local definitions it
depends on, and its binder domains. Issue 11 (DESIGN.md §3: "a trusted inspector").

This replaces the earlier probe, a Lean file elaborated after importing the candidate: the
candidate's macros and instances were live while it ran (issue 11, finding 1). The report is
read from a file the inspector writes after every candidate process has ended; nothing the
candidate printed is ever read.

API: ``build_inspector`` / ``ensure_inspector`` → ``InspectorBuild``; ``run_inspector`` →
``Inspection`` (the report or why there is none); ``module_findings`` applies
``fyan.lean.policy`` to a module of the report.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import re
import shutil
import stat
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field, ValidationError, model_validator

from fyan.config import LeanSection
from fyan.lean.policy import declaration_findings, extension_findings
from fyan.lean.runner import Confinement, ProcessResult, run_process, tool_environment
from fyan.lean.toolchain import Toolchain
from fyan.resources import data_dir

FORMAT = "fyan-inspector/1"
EXECUTABLE = "fyan-inspector"
MANIFEST = "manifest.json"


def digest(text: str) -> str:
    """``sha256:<hex>`` of ``text`` (UTF-8): how elaborated terms are compared."""
    return "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest()


# -- the report --------------------------------------------------------------------------------

class UsedConstant(BaseModel):
    """A constant a statement uses directly, with the module that declares it, its kind, whether
    it is a structure projection, and the constants in the conclusion of its own type (for an
    instance: the class and what it is an instance for)."""

    name: str
    module: str = ""
    kind: str = ""
    projection: bool = False
    conclusion: list[str] = Field(default_factory=list)


class LocalConstant(BaseModel):
    """A declaration of the project's library that a statement depends on; ``digest`` is the
    SHA-256 of what it means (its type, and its value for a definition)."""

    name: str
    module: str = ""
    kind: str = ""
    digest: str

    @model_validator(mode="before")
    @classmethod
    def _digest(cls, data: Any) -> Any:
        if isinstance(data, dict) and "digest" not in data and "meaning" in data:
            meaning = data["meaning"]
            text = "\n:=\n".join(meaning) if isinstance(meaning, list) else str(meaning)
            data = {**{k: v for k, v in data.items() if k != "meaning"}, "digest": digest(text)}
        return data


class InspectedDeclaration(BaseModel):
    """What the inspector reports about one declaration (or ``found: false``).

    ``type_hash`` is ``sha256:`` of the elaborated type's full structure (the inspector's
    ``type_repr``); ``statement_hash`` adds a definition's value (its body *is* its statement)
    or an inductive type's constructor types. ``axioms`` are transitive. ``constants``,
    ``local_constants`` and ``binder_domain_hashes`` are given for looked-up names only."""

    name: str
    found: bool = True
    kind: str | None = None
    module: str | None = None
    level_params: list[str] = Field(default_factory=list)
    type_hash: str | None = None
    statement_hash: str | None = None
    type_pp: str = ""
    safety: str = "safe"
    implemented_by: str | None = None
    extern: bool = False
    init: bool = False
    sorry_direct: bool = False
    sorry_in_type: bool = False
    conclusion_true: bool = False
    axioms: list[str] = Field(default_factory=list)
    constants: list[UsedConstant] = Field(default_factory=list)
    local_constants: list[LocalConstant] = Field(default_factory=list)
    binder_domain_hashes: list[str] = Field(default_factory=list)

    @model_validator(mode="before")
    @classmethod
    def _hashes(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        data = dict(data)
        type_repr = data.pop("type_repr", None)
        value_repr = data.pop("value_repr", None)
        domains = data.pop("binder_domains", None)
        if type_repr is not None and data.get("type_hash") is None:
            data["type_hash"] = digest(str(type_repr))
        if isinstance(value_repr, list):  # an inductive type: its constructors' types
            value_repr = "\n".join(map(str, value_repr))
        if data.get("statement_hash") is None and data.get("type_hash") is not None:
            data["statement_hash"] = (digest(f"{type_repr}\n:=\n{value_repr}")
                                      if type_repr is not None and value_repr is not None else data["type_hash"])
        if isinstance(domains, list) and "binder_domain_hashes" not in data:
            data["binder_domain_hashes"] = [digest(str(d)) for d in domains]
        return data

    @property
    def uses_sorry(self) -> bool:
        """``sorryAx`` in the declaration itself or among its transitive axioms."""
        return self.sorry_direct or "sorryAx" in self.axioms

    @property
    def local_digests(self) -> dict[str, str]:
        return {c.name: c.digest for c in self.local_constants}


class ExtensionEntries(BaseModel):
    """Entries a module adds to one environment extension (attributes, syntax, instances, ...)."""

    name: str
    entries: int


class InspectedModule(BaseModel):
    name: str
    found: bool = True
    imports: list[str] = Field(default_factory=list)
    declarations: list[InspectedDeclaration] = Field(default_factory=list)
    extensions: list[ExtensionEntries] = Field(default_factory=list)
    extra_constants: list[str] = Field(default_factory=list)


class InspectorReport(BaseModel):
    """The inspector's JSON output (``FyanInspector.lean`` documents every field)."""

    format: str
    lean_version: str | None = None
    modules: list[InspectedModule] = Field(default_factory=list)
    lookups: list[InspectedDeclaration] = Field(default_factory=list)
    problems: list[str] = Field(default_factory=list)
    error: str | None = None

    def module(self, name: str) -> InspectedModule | None:
        return next((m for m in self.modules if m.name == name), None)

    def lookup(self, name: str) -> InspectedDeclaration | None:
        return next((d for d in self.lookups if d.name == name), None)

    @property
    def records(self) -> dict[str, InspectedDeclaration]:
        """Looked-up declarations by name."""
        return {d.name: d for d in self.lookups}


class Inspection(BaseModel):
    """One run of the inspector: the report, or why there is none (``problem``)."""

    report: InspectorReport | None = None
    problem: str | None = None
    process: ProcessResult | None = None
    output_file: str | None = None
    executable_sha256: str | None = None

    @property
    def ok(self) -> bool:
        return self.problem is None and self.report is not None

    def evidence(self) -> dict[str, Any]:
        p = self.process
        out: dict[str, Any] = {"inspector_report": self.output_file, "inspector_sha256": self.executable_sha256}
        if p is not None:
            out.update({"inspector_command": " ".join(p.argv), "inspector_exit_code": p.exit_code,
                        "inspector_duration_s": p.duration_s, "inspector_sandboxed": p.sandboxed})
        return out


def module_findings(module: InspectedModule, *, expected_imports: list[str] | None = None, strict: bool = False,
                    extra_allow: frozenset[str] | set[str] = frozenset()) -> list[str]:
    """What ``fyan.lean.policy`` refuses in ``module``: declarations (axioms, ``unsafe``, ``partial``,
    ``opaque``, ``implemented_by``, ``extern``, ``init``), extension entries (macros, syntax,
    elaborators, ..., anything not known to be harmless; with ``strict`` also instances), and
    imports other than ``expected_imports`` (and ``Init``)."""
    out = []
    for d in module.declarations:
        for why in declaration_findings(d.kind, d.safety, d.implemented_by, d.extern, d.init):
            out.append(f"{d.name}: {why}")
    for finding in extension_findings([(e.name, e.entries) for e in module.extensions], strict=strict,
                                      extra_allow=extra_allow):
        out.append(f"{module.name} registers {finding}")
    if expected_imports is not None:
        allowed = set(expected_imports) | {"Init"}
        extra = [i for i in module.imports if i not in allowed]
        missing = [i for i in expected_imports if i not in module.imports]
        if extra:
            out.append(f"{module.name} imports {', '.join(extra)}, which Fyan did not write")
        if missing:
            out.append(f"{module.name} does not import {', '.join(missing)} (Fyan's imports were changed)")
    return out


# -- building ----------------------------------------------------------------------------------

class InspectorError(Exception):
    """The inspector could not be built or verified (the message says why and what to do)."""


@dataclass(frozen=True)
class InspectorBuild:
    """A built inspector: ``executable`` in ``folder`` (``<key>/bin/fyan-inspector``), for
    ``pin``, with the SHA-256 recorded in the folder's manifest. ``note`` says how it was
    obtained (reused, built now, rebuilt after a hash mismatch)."""

    executable: Path
    folder: Path
    key: str
    pin: str
    lean_version: str | None
    sha256: str
    note: str


def source_dir() -> Path:
    return data_dir("lake-template") / "inspector"


def source_digest() -> str:
    """SHA-256 over the inspector's source files (names and bytes): a change rebuilds it."""
    h = hashlib.sha256()
    for path in sorted(p for p in source_dir().rglob("*") if p.is_file()):
        h.update(path.relative_to(source_dir()).as_posix().encode() + b"\0" + path.read_bytes() + b"\0")
    return h.hexdigest()


def inspector_key(pin: str) -> str:
    """The folder name of the build for ``pin`` and the current source: pin and source digest."""
    slug = re.sub(r"[^A-Za-z0-9.]+", "-", pin.strip()).strip("-") or "pin"
    return f"{slug}-{source_digest()[:16]}"


def cache_root(config: LeanSection, env: dict[str, str] | None = None) -> Path:
    """``[lean] inspector_dir``, else ``$XDG_CACHE_HOME/fyan/inspector``, else
    ``~/.cache/fyan/inspector``."""
    env = env if env is not None else dict(os.environ)
    if config.inspector_dir:
        return Path(config.inspector_dir).expanduser()
    base = env.get("XDG_CACHE_HOME") or str(Path(env.get("HOME", "~")).expanduser() / ".cache")
    return Path(base) / "fyan" / "inspector"


def _sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def _writable_tree(path: Path) -> None:
    for p in [path, *path.rglob("*")]:
        try:
            if not p.is_symlink():
                p.chmod(p.stat().st_mode | stat.S_IWUSR)
        except OSError:
            pass


def _read_only_tree(path: Path) -> None:
    for p in sorted([path, *path.rglob("*")], key=lambda x: len(x.parts), reverse=True):
        if p.is_symlink():
            continue
        mode = p.stat().st_mode
        p.chmod(mode & ~(stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH))


def remove_tree(path: Path) -> None:
    """Remove a (possibly read-only) folder."""
    if path.exists():
        _writable_tree(path)
        shutil.rmtree(path, ignore_errors=True)


def build_inspector(toolchain: Toolchain, pin: str, dest_root: Path, *, timeout_s: float,
                    memory_mb: int | None = None, log_dir: Path | None = None) -> InspectorBuild:
    """Compile the inspector for ``pin`` into ``dest_root/<key>/`` (``inspector_key``): a scratch
    copy of ``lake-template/inspector/`` with ``lean-toolchain`` set to ``pin``, ``lake build
    fyan-inspector`` there (Fyan's own source, no candidate involved: run unconfined so elan may
    install the pinned toolchain; ``timeout_s`` seconds, ``memory_mb`` MiB), then the executable
    and a manifest (pin, Lean version, SHA-256) are moved into place and made read-only.

    Raises ``InspectorError`` when the build fails or leaves no executable. The build log goes
    to ``log_dir/inspector-build.log`` when given (else next to the build)."""
    key = inspector_key(pin)
    dest_root.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix=f".build-{key}-", dir=dest_root))
    try:
        for path in source_dir().iterdir():
            if path.is_file():
                shutil.copyfile(path, scratch / path.name)
        (scratch / "lean-toolchain").write_text(pin.strip() + "\n", encoding="utf-8")
        log = (log_dir or scratch) / "inspector-build.log"
        proc = run_process([str(toolchain.lake), "build", EXECUTABLE], cwd=scratch, timeout_s=timeout_s,
                           memory_mb=memory_mb, sandbox="off", log_path=log, lean_kind="inspector_build")
        exe = scratch / ".lake" / "build" / "bin" / EXECUTABLE
        if not proc.ok or not exe.is_file():
            tail = [line for line in proc.output.strip().splitlines() if line.strip()][-3:]
            raise InspectorError(
                f"the trusted inspector could not be built for {pin} ({proc.describe()}"
                + (f": {' | '.join(tail)}" if tail else "") + f"; log {log}); check that the toolchain {pin} "
                "is installed (elan toolchain install " + pin + ")")
        folder = dest_root / key
        staged = scratch / "staged"
        (staged / "bin").mkdir(parents=True)
        shutil.copy2(exe, staged / "bin" / EXECUTABLE)
        sha = _sha256_file(staged / "bin" / EXECUTABLE)
        manifest = {"format": FORMAT, "key": key, "pin": pin, "lean_version": toolchain.lean_version,
                    "toolchain": toolchain.version, "source_sha256": source_digest(), "sha256": sha,
                    "built_at": time.strftime("%Y-%m-%dT%H:%M:%S")}
        (staged / MANIFEST).write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
        remove_tree(folder)
        os.replace(staged, folder)
        _read_only_tree(folder)
        return InspectorBuild(folder / "bin" / EXECUTABLE, folder, key, pin, toolchain.lean_version, sha,
                              f"built now for {pin}")
    finally:
        remove_tree(scratch)


def verified_build(folder: Path, toolchain: Toolchain | None = None) -> InspectorBuild | None:
    """The build in ``folder`` when its executable matches the SHA-256 in its manifest (and,
    given ``toolchain``, was built by that toolchain: same ``lake --version``)."""
    try:
        manifest = json.loads((folder / MANIFEST).read_text(encoding="utf-8"))
        exe = folder / "bin" / EXECUTABLE
        if manifest.get("format") != FORMAT or _sha256_file(exe) != manifest.get("sha256"):
            return None
        if toolchain is not None and manifest.get("toolchain") != toolchain.version:
            return None
        return InspectorBuild(exe, folder, manifest["key"], manifest["pin"], manifest.get("lean_version"),
                              manifest["sha256"], f"built {manifest.get('built_at', '?')} for {manifest['pin']}")
    except (OSError, ValueError, KeyError):
        return None


def ensure_inspector(toolchain: Toolchain, pin: str, config: LeanSection,
                     log_dir: Path | None = None) -> tuple[InspectorBuild | None, str | None]:
    """(the inspector for ``pin``, None) — reused when its executable still matches its
    manifest's SHA-256 and was built by this toolchain, rebuilt when it does not (the note says
    so) or when the pin or the inspector's source changed — or (None, why it cannot be had).
    Concurrent callers wait for one build (a file lock next to the folder). Never raises."""
    root = cache_root(config)
    try:
        root.mkdir(parents=True, exist_ok=True)
        key = inspector_key(pin)
        with open(root / f".{key}.lock", "a+") as lock:
            fcntl.flock(lock.fileno(), fcntl.LOCK_EX)
            folder = root / key
            found = verified_build(folder, toolchain)
            if found is not None:
                return found, None
            tampered = folder.exists() and verified_build(folder) is None
            build = build_inspector(toolchain, pin, root, timeout_s=config.build_timeout,
                                    memory_mb=config.memory_limit_mb, log_dir=log_dir)
            if tampered:
                build = InspectorBuild(build.executable, build.folder, build.key, build.pin, build.lean_version,
                                       build.sha256, f"rebuilt for {pin}: the kept executable did not match its "
                                       "recorded SHA-256 (changed or incomplete)")
            return build, None
    except InspectorError as e:
        return None, str(e)
    except OSError as e:
        return None, (f"the trusted inspector cannot be kept in {root}: {e.strerror or e}; "
                      "set [lean] inspector_dir to a folder you can write")


# -- running -----------------------------------------------------------------------------------

def run_inspector(
    build: InspectorBuild, toolchain: Toolchain, workspace: Path, *, config: LeanSection, out_dir: Path,
    name: str = "inspect", modules: list[str] = (), names: list[str] = (), imports: list[str] = (),
    black_box: list[str] = (), search_path: list[Path] = (), local_prefix: str = "",
    confinement: Confinement | None = None, lean_env: dict[str, str] | None = None,
) -> Inspection:
    """Run the inspector in ``workspace`` — with ``lean_env`` (``LEAN_PATH`` and ``LEAN_SYSROOT``
    of ``fyan.lean.compile.LeanSetup.environment``) when given, else under ``lake env`` (a Lake
    package whose modules are built, e.g. an adopted package) — on
    ``modules`` (every declaration reported) and ``names`` (looked up), and read its report
    from ``out_dir/<name>.json``; command and output go to ``out_dir/<name>.log``. Runs
    confined (``confinement``: the caller's; it may write only ``out_dir`` and the workspace),
    after every process of the candidate ended. The executable's SHA-256 is checked first.
    Never raises: a changed executable, a crash, a timeout, no report, a report in another
    format or from another Lean version, or a module the environment lacks is ``problem``."""
    out_dir.mkdir(parents=True, exist_ok=True)
    out = (out_dir / f"{name}.json").resolve()
    out.unlink(missing_ok=True)
    try:
        sha = _sha256_file(build.executable)
    except OSError as e:
        return Inspection(problem=f"the trusted inspector {build.executable} is unreadable: {e}")
    if sha != build.sha256:
        return Inspection(problem=f"the trusted inspector {build.executable} does not match its recorded SHA-256 "
                                  "(changed after it was built): evidence refused; it is rebuilt on the next run",
                          executable_sha256=sha)
    argv = ([] if lean_env is not None else [str(toolchain.lake), "env"]) + [str(build.executable), "--out", str(out)]
    for flag, values in (("--module", modules), ("--name", names), ("--import", imports), ("--black-box", black_box),
                         ("--search-path", [str(p) for p in search_path])):
        for v in values:
            argv += [flag, v]
    if local_prefix:
        argv += ["--local-prefix", local_prefix]
    if confinement is None:
        confinement = Confinement(writable=(out_dir, workspace))
    env = None
    if lean_env is not None:
        env = tool_environment(lean_env)
    proc = run_process(argv, cwd=workspace, timeout_s=config.build_timeout, memory_mb=config.memory_limit_mb,
                       sandbox=config.sandbox, confinement=confinement, env=env, log_path=out_dir / f"{name}.log",
                       lean_kind="inspector")
    rel = str(out)
    if proc.refused or proc.exit_code is None:
        return Inspection(problem=f"the inspector did not finish: {proc.describe()}", process=proc,
                          executable_sha256=sha)
    if proc.exit_code != 0:
        tail = [line for line in proc.output.strip().splitlines() if line.strip()][-1:]
        return Inspection(problem=f"the inspector failed ({proc.describe()})" + (f": {tail[0][:200]}" if tail else ""),
                          process=proc, executable_sha256=sha)
    try:
        data = json.loads(out.read_text(encoding="utf-8"))
        report = InspectorReport.model_validate(data)
    except FileNotFoundError:
        return Inspection(problem="the inspector wrote no report", process=proc, executable_sha256=sha)
    except (ValueError, ValidationError) as e:
        return Inspection(problem=f"the inspector's report is malformed: {str(e).splitlines()[0]}", process=proc,
                          output_file=rel, executable_sha256=sha)
    result = Inspection(report=report, process=proc, output_file=rel, executable_sha256=sha)
    if report.format != FORMAT:
        result.problem = f"the inspector's report has format {report.format!r}, expected {FORMAT}"
    elif report.error:
        result.problem = f"the inspector could not load the modules: {report.error.splitlines()[0][:300]}"
    elif report.lean_version and toolchain.lean_version and report.lean_version != toolchain.lean_version:
        result.problem = (f"the inspector runs Lean {report.lean_version} but the toolchain is Lean "
                          f"{toolchain.lean_version}: rebuild it (delete {build.folder})")
    else:
        missing = [m for m in modules if (mod := report.module(m)) is None or not mod.found]
        if missing:
            result.problem = f"module(s) {', '.join(missing)} not in the inspected environment"
    return result
