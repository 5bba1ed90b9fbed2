"""The trusted inspector: evidence about compiled modules from a program of Fyan's own.

``lake-template/inspector/FyanInspector.lean`` is a small Lean program (a ``lean_exe``). It is
compiled for a toolchain pin before any candidate exists (``build_inspector``, callable on any
pin and into any folder; ``ensure_inspector`` keeps one build per pin and inspector source in
``[lean] inspector_dir``, default ``~/.cache/fyan/inspector/``, outside every workspace and out
of reach of confined processes, and checks the executable's SHA-256 against the build's
manifest before each use). At gate time it loads a unit's compiled modules as an environment
the way lean4checker and comparator do — ``importModules`` without loading extension states
and without running initializers, so nothing of the candidate is elaborated or executed — and
writes one JSON report (``InspectorReport``, format ``fyan-inspector/3``, read strictly and
echoing a nonce Fyan passes) with, for **every**
declaration of the modules: kind, module, the elaborated type (hashed here: ``type_hash``;
``statement_hash`` adds a definition's value or an inductive type's constructors), a printed
form, safety, ``implemented_by``/``extern``/``init``, ``sorryAx`` used directly, the transitive
axioms, kernel-evaluated constants and missing constants; per module whether it is a ``module``
file, its imports, the extension entries and the registrations (instances, unification hints,
reducible declarations) it adds; and for each looked-up
name (``names``) the same plus the constants its statement uses, the local definitions it
depends on, and its binder domains (why a program of Fyan's own: docs/design.md, the completion gate).

This replaces the earlier probe, a Lean file elaborated after importing the candidate: the
candidate's macros and instances were live while it ran. The report is
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
import secrets
import shutil
import stat
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, ValidationError, model_validator

from fyan.config import LeanSection
from fyan.lean.policy import declaration_findings, extension_findings, foreign_meaning_findings
from fyan.sandbox.runner import Confinement, ProcessResult, run_process, tool_environment, toolchain_paths
from fyan.lean.toolchain import Toolchain
from fyan.resources import data_dir

FORMAT = "fyan-inspector/3"
EXECUTABLE = "fyan-inspector"
MANIFEST = "manifest.json"


def digest(text: str) -> str:
    """``sha256:<hex>`` of ``text`` (UTF-8): how elaborated terms are compared."""
    return "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest()


# -- the report (format fyan-inspector/3) ----------------------------------------------------
#
# Read strictly: every field is required (nothing defaults to "safe"), unknown fields are refused
# (``extra="forbid"``), kinds and safety are closed sets, and the report must echo the nonce Fyan
# passed. Anything else is no evidence (``Inspection.problem``), with the raw output kept
# (``Inspection.raw_output``): an answer read leniently would let a truncated or forged report pass as
# "found, safe, no axioms".

#: the constant kinds the inspector names (``kindName``: exhaustive over Lean's ``ConstantInfo``)
ConstantKind = Literal["axiom", "def", "theorem", "opaque", "quot", "inductive", "constructor", "recursor"]
Safety = Literal["safe", "unsafe", "partial"]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class UsedConstant(_Strict):
    """A constant a statement uses directly, with the module that declares it (``""``: not in the
    environment, kind ``missing``), its kind, whether it is a structure projection, and the
    constants in the conclusion of its own type (for an instance: the class and what it is an
    instance for)."""

    name: str
    module: str
    kind: ConstantKind | Literal["missing"]
    projection: bool
    conclusion: list[str]


class LocalConstant(_Strict):
    """A declaration of the project's library that a statement depends on, with what it means (its
    type, and its value for a definition: derived ``Repr`` of the elaborated terms)."""

    name: str
    module: str
    kind: ConstantKind
    meaning: list[str]

    @property
    def digest(self) -> str:
        """SHA-256 of what it means."""
        return digest("\n:=\n".join(self.meaning))


class AboutConstant(_Strict):
    """A constant a registration is about, with its module (``""``: not in the environment)."""

    name: str
    module: str


class StoredKey(_Strict):
    """One key Lean stored for an instance or a unification hint in its discrimination tree, in
    pre-order: ``kind``; the constant of a ``const``/``proj`` key and its module (``""``
    otherwise); ``arity``: how many subtrees follow it (``fyan.lean.policy.key_arguments``)."""

    kind: Literal["const", "fvar", "proj", "star", "arrow", "lit", "other"]
    name: str
    module: str
    arity: int = Field(ge=0)


class Registration(_Strict):
    """Something a module registers that changes how later code elaborates: an ``instance``
    (``about``: the constants of its type's conclusion, the class first), a ``unification_hint``
    or a ``reducible`` declaration (``about``: the constants of its value); ``scoped``: active
    where its namespace is opened (Fyan's unit files open their upstream units' namespaces);
    ``keys``: what Lean stored for an instance or a hint (the class first), ``out_params``: the
    ``outParam`` positions of an instance's class (both empty for a reducible declaration)."""

    kind: Literal["instance", "unification_hint", "reducible"]
    declaration: str
    module: str
    scoped: bool
    about: list[AboutConstant]
    keys: list[StoredKey]
    out_params: list[int]


class InspectedDeclaration(_Strict):
    """What the inspector reports about one declaration of an inspected module.

    ``type_repr`` is the elaborated type's full structure, ``value_repr`` a definition's value (an
    inductive type: its constructors' types; else null). ``axioms``, ``kernel_evaluated``
    (``Lean.reduceBool``/``Lean.reduceNat`` reached: the kernel runs compiled code) and
    ``missing_constants`` (reached but not in the environment) are transitive."""

    name: str
    found: Literal[True]
    kind: ConstantKind
    module: str
    level_params: list[str]
    type_repr: str
    type_pp: str
    value_repr: str | list[str] | None
    safety: Safety
    implemented_by: str | None
    extern: bool
    init: bool
    sorry_direct: bool
    sorry_in_type: bool
    conclusion_true: bool
    axioms: list[str]
    kernel_evaluated: list[str]
    missing_constants: list[str]

    @property
    def type_hash(self) -> str:
        """``sha256:`` of the elaborated type's full structure."""
        return digest(self.type_repr)

    @property
    def statement_hash(self) -> str:
        """``type_hash``, plus a definition's value (its body *is* its statement) or an inductive
        type's constructor types, plus the universe parameters in order when there are any."""
        value = "\n".join(self.value_repr) if isinstance(self.value_repr, list) else self.value_repr
        # universe parameters in order: `foo.{u, v}` and `foo.{v, u}` have one type_repr, but an
        # explicit `foo.{0, 1}` downstream means different things
        levels = f"universe {' '.join(self.level_params)}\n" if self.level_params else ""
        if value is None:
            return digest(levels + self.type_repr) if levels else self.type_hash
        return digest(f"{levels}{self.type_repr}\n:=\n{value}")

    @property
    def uses_sorry(self) -> bool:
        """``sorryAx`` in the declaration itself or among its transitive axioms."""
        return self.sorry_direct or "sorryAx" in self.axioms

    # a looked-up declaration has more (``InspectedLookup``); a module's declarations have none
    @property
    def local_digests(self) -> dict[str, str]:
        return {}

    @property
    def binder_domain_hashes(self) -> list[str]:
        return []


class Reference(_Strict):
    """A declaration of the ``--import`` modules a looked-up declaration reaches (through types
    and values: statement and proof), with the declarations of those modules it refers to
    directly (``references``, in order). Drift follows these through helpers no blueprint node names,
    to find a ``\\uses`` the blueprint misses."""

    name: str
    references: list[str]


class InspectedLookup(InspectedDeclaration):
    """A looked-up name that was found: a declaration's fields plus the constants its statement
    uses, the local definitions its meaning depends on, its binder domains and, when the run asked
    for them (``follow_references``; else empty), the reference graph of the ``--import`` modules
    reachable from it (``references``: itself first)."""

    constants: list[UsedConstant]
    local_constants: list[LocalConstant]
    binder_domains: list[str]
    references: list[Reference]

    @property
    def local_digests(self) -> dict[str, str]:
        return {c.name: c.digest for c in self.local_constants}

    @property
    def binder_domain_hashes(self) -> list[str]:
        return [digest(d) for d in self.binder_domains]


class MissingDeclaration(_Strict):
    """A looked-up name that is not in the inspected environment (exactly ``{name, found:
    false}``). Every check that needs it fails on it; the attributes below only keep callers that
    read a record before testing ``found`` from crashing, and read as "nothing known"."""

    name: str
    found: Literal[False]

    kind: None = None
    module: None = None
    type_hash: None = None
    statement_hash: None = None
    type_pp: str = ""
    safety: None = None
    implemented_by: None = None
    extern: bool = False
    init: bool = False
    sorry_direct: bool = False
    sorry_in_type: bool = False
    conclusion_true: bool = False
    level_params: tuple[str, ...] = ()
    axioms: tuple[str, ...] = ()
    kernel_evaluated: tuple[str, ...] = ()
    missing_constants: tuple[str, ...] = ()
    constants: tuple[UsedConstant, ...] = ()
    local_constants: tuple[LocalConstant, ...] = ()
    references: tuple[Reference, ...] = ()
    binder_domain_hashes: tuple[str, ...] = ()

    @property
    def uses_sorry(self) -> bool:
        return False

    @property
    def local_digests(self) -> dict[str, str]:
        return {}

    @model_validator(mode="before")
    @classmethod
    def _only_name_and_found(cls, data: Any) -> Any:
        if isinstance(data, dict) and set(data) != {"name", "found"}:
            raise ValueError(f"a record of a missing declaration has exactly name and found, not {sorted(data)}")
        return data


Lookup = Annotated[InspectedLookup | MissingDeclaration, Field(discriminator="found")]
#: a looked-up record, found or not (for type annotations of callers)
LookupRecord = InspectedLookup | MissingDeclaration


class ExtensionEntries(_Strict):
    """Entries a module adds to one environment extension (attributes, syntax, instances, ...)."""

    name: str
    entries: int


class InspectedModule(_Strict):
    """One inspected module: whether it is a file of Lean's module system (``is_module``; it was
    loaded at the private level all the same: ``import_level``), its imports, every declaration,
    its extension entries and registrations, the compiler's extra constant names."""

    name: str
    found: Literal[True]
    is_module: bool
    imports: list[str]
    declarations: list[InspectedDeclaration]
    extensions: list[ExtensionEntries]
    registrations: list[Registration]
    extra_constants: list[str]
    #: the Lean version of the report this module came from (set by ``InspectorReport``; not JSON)
    _lean_version: str | None = PrivateAttr(default=None)

    @property
    def lean_version(self) -> str | None:
        return self._lean_version


class MissingModule(_Strict):
    """A ``--module`` that is not in the environment: no evidence (``run_inspector`` fails on it)."""

    name: str
    found: Literal[False]


ModuleRecord = Annotated[InspectedModule | MissingModule, Field(discriminator="found")]


class BlueprintEntry(_Strict):
    """One entry of LeanArchitect's ``Architect.blueprintExt`` (a ``NameMapExtension Node``: the
    pair ``(declaration, Node)`` that ``@[blueprint]`` stored, hanwenzhu/LeanArchitect
    ``Architect/Attribute.lean``). ``module``: the module whose ``.olean`` holds the entry;
    ``label``: ``Node.latexLabel``; ``statement_uses``/``proof_uses``: the LaTeX **labels** the
    attribute stored (``NodePart.uses``: inferred constants mapped to their labels plus ``uses :=``
    / ``proofUses :=``), ``proof_uses`` None without a proof part; ``not_ready``: ``Node.notReady``."""

    name: str
    module: str
    label: str
    statement_uses: list[str]
    proof_uses: list[str] | None
    not_ready: bool

    @property
    def uses(self) -> set[str]:
        """Every label the node uses (statement and proof)."""
        return set(self.statement_uses) | set(self.proof_uses or [])


class BlueprintAbsent(_Strict):
    """The environment has no ``Architect.blueprintExt``: the package does not use LeanArchitect."""

    present: Literal[False]


class BlueprintPresent(_Strict):
    """The environment declares ``Architect.blueprintExt``: its entries from every module, or, when
    the declared ``Node``/``NodePart`` do not have the fields and types the inspector reads
    (another LeanArchitect version), ``layout_problem`` says which and ``entries`` is empty (the
    entries are not read at all: reading them with another layout is not safe)."""

    present: Literal[True]
    extension: Literal["Architect.blueprintExt"]
    layout_problem: str | None
    entries: list[BlueprintEntry]

    @model_validator(mode="after")
    def _no_entries_with_a_problem(self) -> "BlueprintPresent":
        if self.layout_problem is not None and self.entries:
            raise ValueError("entries read although the layout was refused")
        return self


BlueprintRecord = Annotated[BlueprintAbsent | BlueprintPresent, Field(discriminator="present")]


class InspectorReport(_Strict):
    """The inspector's JSON output (``FyanInspector.lean`` documents every field). ``nonce`` echoes
    the one Fyan passed; ``import_level`` is the ``OLeanLevel`` the modules were loaded at
    (``private``: every body and private declaration, src/Lean/Environment.lean ``importModules``);
    ``blueprint``: LeanArchitect's compiled ``@[blueprint]`` entries (``BlueprintAbsent`` without
    LeanArchitect, ``BlueprintPresent`` with it, possibly with no entries); ``error`` says why
    nothing could be loaded (then no evidence)."""

    format: Literal["fyan-inspector/3"]
    nonce: str
    lean_version: str
    import_level: Literal["private"]
    modules: list[ModuleRecord]
    lookups: list[Lookup]
    problems: list[str]
    #: LeanArchitect's ``@[blueprint]`` entries in the environment (``BlueprintRecord``)
    blueprint: BlueprintRecord
    error: str | None

    @model_validator(mode="after")
    def _tag_modules(self) -> "InspectorReport":
        for m in self.modules:
            if isinstance(m, InspectedModule):
                m._lean_version = self.lean_version
        return self

    def module(self, name: str) -> InspectedModule | None:
        """The inspected module ``name`` (None when absent or missing)."""
        return next((m for m in self.modules if m.name == name and isinstance(m, InspectedModule)), None)

    def lookup(self, name: str) -> InspectedLookup | MissingDeclaration | None:
        return next((d for d in self.lookups if d.name == name), None)

    @property
    def records(self) -> dict[str, InspectedLookup | MissingDeclaration]:
        """Looked-up declarations by name."""
        return {d.name: d for d in self.lookups}


#: how much of the inspector's raw output an ``Inspection`` keeps when it gives no evidence
RAW_OUTPUT_LIMIT = 64 * 1024


class Inspection(BaseModel):
    """One run of the inspector: the report, or why there is none (``problem``, with the report
    file's first ``RAW_OUTPUT_LIMIT`` bytes in ``raw_output``)."""

    report: InspectorReport | None = None
    problem: str | None = None
    process: ProcessResult | None = None
    output_file: str | None = None
    executable_sha256: str | None = None
    raw_output: str | None = None

    @property
    def ok(self) -> bool:
        return self.problem is None and self.report is not None

    def evidence(self) -> dict[str, Any]:
        p = self.process
        out: dict[str, Any] = {"inspector_report": self.output_file, "inspector_sha256": self.executable_sha256}
        if p is not None:
            out.update({"inspector_command": " ".join(p.argv), "inspector_exit_code": p.exit_code,
                        "inspector_duration_s": p.duration_s, "inspector_sandboxed": p.sandboxed})
        if self.problem is not None:
            out.update({"inspector_problem": self.problem, "inspector_raw_output": self.raw_output})
        return out


def module_findings(module: InspectedModule, *, expected_imports: list[str] | None = None, strict: bool = False,
                    extra_allow: frozenset[str] | set[str] = frozenset(),
                    kernel_allow: frozenset[str] | set[str] = frozenset(),
                    declared: frozenset[str] | set[str] = frozenset()) -> list[str]:
    """What ``fyan.lean.policy`` refuses in ``module``: a ``module`` file, declarations (axioms,
    ``unsafe``, ``partial``, ``opaque``, ``implemented_by``, ``extern``, ``init``, kernel-evaluated
    constants, constants missing from the environment), extension entries the policy by effect
    refuses (``fyan.lean.extensions``; an extension no row classifies unless ``extra_allow``, the
    validated ``[lean] extension_allowlist``, names it; with ``strict`` also instances), and imports
    other than ``expected_imports`` (and ``Init``). ``kernel_allow``: kernel-evaluated constants
    admitted (``[lean] kernel_allow``; default none). Instances and unification hints the unit does
    not own (its own namespace: ``module.name`` without its last component) are refused unless
    ``declared`` (the audited plan's instance nodes) names them (``foreign_meaning_findings``)."""
    allow = frozenset(extra_allow)
    out = []
    if module.is_module:
        out.append(f"{module.name} is a `module` file (Lean's module system): Fyan never writes one, and its "
                   "exported data hides proof bodies and private declarations from an ordinary import")
    for d in module.declarations:
        for why in declaration_findings(d.kind, d.safety, d.implemented_by, d.extern, d.init,
                                        kernel_evaluated=d.kernel_evaluated, missing=d.missing_constants,
                                        kernel_allow=kernel_allow):
            out.append(f"{d.name}: {why}")
    for finding in extension_findings([(e.name, e.entries) for e in module.extensions], strict=strict, allow=allow):
        out.append(f"{module.name} registers {finding}")
    out += foreign_meaning_findings(module, module.name.rpartition(".")[0], declared)
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
                           memory_mb=memory_mb, sandbox="off", log_path=log, lean_kind="inspector_build",
                           pass_env=("ELAN_HOME", "ELAN_TOOLCHAIN"))
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

def inspector_confinement(build: InspectorBuild, toolchain: Toolchain, workspace: Path, *, config: LeanSection,
                          out_dir: Path, search_path: Sequence[Path] = (),
                          lean_env: dict[str, str] | None = None) -> Confinement:
    """The default confinement of one inspector run: write ``out_dir`` and ``workspace``; read the
    inspector's own folder, the toolchain (``fyan.sandbox.runner.toolchain_paths``: elan's home and
    ``lake``'s prefix), the folders of ``lean_env``'s ``LEAN_PATH`` and ``LEAN_SYSROOT``,
    ``search_path`` and ``[lean] sandbox_readable``. The sandbox hides ``/tmp`` and ``$HOME``,
    where each of these may lie; the inspector must read every ``.olean`` it loads."""
    readable: list[Path] = [build.folder, *toolchain_paths(toolchain.lake), *(Path(p) for p in search_path),
                            *(Path(p).expanduser() for p in config.sandbox_readable)]
    if lean_env is not None:
        readable += [Path(p) for p in lean_env.get("LEAN_PATH", "").split(os.pathsep) if p]
        if lean_env.get("LEAN_SYSROOT"):
            readable.append(Path(lean_env["LEAN_SYSROOT"]))
    shown = [Path(p).resolve() for p in (out_dir, workspace)]
    extra = [p for p in dict.fromkeys(Path(r).resolve() for r in readable)
             if p.exists() and not any(p == w or w in p.parents for w in shown)]
    return Confinement(writable=(out_dir, workspace), read_only=tuple(extra))


def run_inspector(
    build: InspectorBuild, toolchain: Toolchain, workspace: Path, *, config: LeanSection, out_dir: Path,
    name: str = "inspect", modules: Sequence[str] = (), names: Sequence[str] = (), imports: Sequence[str] = (),
    black_box: Sequence[str] = (), search_path: Sequence[Path] = (), local_prefix: str = "",
    confinement: Confinement | None = None, lean_env: dict[str, str] | None = None,
    follow_references: bool = False, declarations: Path | None = None, nonce: str | None = None,
) -> Inspection:
    """Run the inspector in ``workspace`` — with ``lean_env`` (``LEAN_PATH`` and ``LEAN_SYSROOT``
    of ``fyan.lean.compile.LeanSetup.environment``) when given, else under ``lake env`` (a Lake
    package whose modules are built, e.g. an adopted package) — on
    ``modules`` (every declaration reported) and ``names`` (looked up), and read its report
    from ``out_dir/<name>.json``; command and output go to ``out_dir/<name>.log``. Runs
    confined (``confinement``: the caller's; default ``inspector_confinement``),
    after every process of the candidate ended. The executable's SHA-256 is checked first.
    Never raises: a changed executable, a crash, a timeout, no report, a report in another
    format or from another Lean version, or a module the environment lacks is ``problem``.
    ``follow_references``: each found lookup reports the reference graph of the ``imports``
    modules reachable from it (``InspectedLookup.references``). ``declarations``: also write
    every non-internal constant of the environment to that file (inside ``out_dir``, which the
    confinement lets it write), read by ``fyan.prover.environment.read_inspector_list``.
    ``nonce``: the nonce the run echoes (default a fresh one), given by a caller that checks the
    declaration list's header against its own."""
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
    nonce = nonce or secrets.token_hex(16)
    argv = ([] if lean_env is not None else [str(toolchain.lake), "env"]) + [str(build.executable), "--out", str(out),
                                                                              "--nonce", nonce]
    for flag, values in (("--module", modules), ("--name", names), ("--import", imports), ("--black-box", black_box),
                         ("--search-path", [str(p) for p in search_path])):
        for v in values:
            argv += [flag, v]
    if local_prefix:
        argv += ["--local-prefix", local_prefix]
    if follow_references:
        argv.append("--follow-references")
    if declarations is not None:
        argv += ["--declarations", str(declarations)]
    if confinement is None:
        confinement = inspector_confinement(build, toolchain, workspace, config=config, out_dir=out_dir,
                                            search_path=search_path, lean_env=lean_env)
    env = None
    if lean_env is not None:
        env = tool_environment(lean_env, pass_env=config.pass_env)
    proc = run_process(argv, cwd=workspace, timeout_s=config.build_timeout, memory_mb=config.memory_limit_mb,
                       sandbox=config.sandbox, confinement=confinement, env=env, pass_env=config.pass_env,
                       log_path=out_dir / f"{name}.log",
                       lean_kind="inspector")
    return read_report(out, proc, sha, nonce=nonce, modules=list(modules),
                       lean_version=toolchain.lean_version, rebuild_hint=str(build.folder))


def _raw(path: Path) -> str | None:
    try:
        with open(path, "rb") as fh:
            return fh.read(RAW_OUTPUT_LIMIT).decode("utf-8", errors="replace")
    except OSError:
        return None


def read_report(out: Path, proc: ProcessResult | None, sha: str | None, *, nonce: str, modules: list[str],
                lean_version: str | None, rebuild_hint: str = "") -> Inspection:
    """Read the inspector's report ``out`` strictly (``InspectorReport``): the
    process must have exited 0, the report must parse with every field present and none unknown,
    echo ``nonce``, come from ``lean_version`` (when known), carry no ``error`` and find every
    module of ``modules``. Anything else is an ``Inspection`` with a ``problem`` and the report's
    raw text (``raw_output``). Never raises."""
    rel = str(out)
    if proc is not None and (proc.refused or proc.exit_code is None):
        return Inspection(problem=f"the inspector did not finish: {proc.describe()}", process=proc,
                          executable_sha256=sha, raw_output=_raw(out))
    if proc is not None and proc.exit_code != 0:
        tail = [line for line in proc.output.strip().splitlines() if line.strip()][-1:]
        return Inspection(problem=f"the inspector failed ({proc.describe()})" + (f": {tail[0][:200]}" if tail else ""),
                          process=proc, executable_sha256=sha, raw_output=_raw(out))
    raw = _raw(out)
    if raw is None:
        return Inspection(problem="the inspector wrote no report", process=proc, executable_sha256=sha)
    try:
        data = json.loads(out.read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        return Inspection(problem=f"the inspector's report is not JSON: {str(e).splitlines()[0]}", process=proc,
                          output_file=rel, executable_sha256=sha, raw_output=raw)
    if isinstance(data, dict) and data.get("format") != FORMAT:
        return Inspection(problem=f"the inspector's report has format {data.get('format')!r}, expected {FORMAT}",
                          process=proc, output_file=rel, executable_sha256=sha, raw_output=raw)
    try:
        report = InspectorReport.model_validate(data)
    except ValidationError as e:
        first = e.errors()[0] if e.errors() else {"loc": (), "msg": str(e)}
        where = ".".join(str(x) for x in first.get("loc", ()))
        return Inspection(problem=f"the inspector's report does not follow {FORMAT} ({e.error_count()} error(s); "
                                  f"{where or 'report'}: {first.get('msg')}): no evidence",
                          process=proc, output_file=rel, executable_sha256=sha, raw_output=raw)
    result = Inspection(report=report, process=proc, output_file=rel, executable_sha256=sha)
    if report.nonce != nonce:
        result.problem = ("the inspector's report does not echo this run's nonce (a report of another run, or not "
                          "the inspector's): no evidence")
    elif report.error is not None:
        result.problem = f"the inspector could not load the modules: {report.error.splitlines()[0][:300] if report.error else '?'}"
    elif lean_version and report.lean_version != lean_version:
        result.problem = (f"the inspector runs Lean {report.lean_version} but the toolchain is Lean "
                          f"{lean_version}: rebuild it" + (f" (delete {rebuild_hint})" if rebuild_hint else ""))
    else:
        missing = [m for m in modules if report.module(m) is None]
        if missing:
            result.problem = f"module(s) {', '.join(missing)} not in the inspected environment"
    if result.problem is not None:
        result.raw_output = raw
    return result
