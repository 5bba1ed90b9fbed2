"""Gate-owned workspaces and builds: evidence from files the gate checked, built where no agent writes.

Agents and earlier attempts write in ``workspaces/<unit>/``; a build there could reuse outputs
they left. Every build whose result the gateway decides on — the completion
gate, the freeze of an audited statement, the scaffold's compile check, name look-ups — runs in a
**gate workspace** instead, with plain ``lean`` (``fyan.lean.compile``; no Lake
workspace, manifest or trace takes part):

* fresh (``.fyan/gate/<unit>/<purpose>/``, deleted and recreated each time), under ``.fyan/``
  where confined processes cannot write;
* filled only with **recorded, hash-checked** files (``recorded_bytes``)::

      src/<Lib>/<Unit>/Basic.lean …   the unit's own files as the gateway recorded them, and the
                                      source of an upstream unit that has no reusable output
      lib/<Lib>/<Up>/Basic.olean      the one folder a compile here searches (Lean takes the first
                                      search folder holding an import's top-level name and never
                                      looks further, so all of ``<Lib>`` lives in one folder):
                                      the ``.olean`` the gate compiled when each upstream unit
                                      completed (``units/<up>/Basic.olean``; each complete unit is
                                      compiled once), reused only when
                                      ``Basic.olean.json`` says it was compiled from exactly the
                                      recorded source, against exactly the upstream ``.olean`` files
                                      placed here, by this very Lean build (version and git hash: Lean
                                      refuses an ``.olean`` of another build, ``incompatible header``);
                                      then each compile's checked outputs, copied in read-only
      build/<name>/                   the output folder of one compile (the only folder it may write)
      tmp/                            ``TMPDIR`` of the compiles

* built in **two phases** (``build``): first what the gate trusts (upstream units without a
  reusable output, the audited ``Statement.lean``), then the candidate, each compile with
  ``LEAN_PATH`` = ``lib/`` then the package's dependencies (``LeanSetup``) and every folder but its
  own output folder read-only in the sandbox. An output folder is never on a search path; after
  a compile it must hold exactly the module's own output files (no link, no other file:
  compile-time code that plants an ``Init.olean`` or a second module fails the build), every other
  file of the workspace must be unchanged (``changes_outside_outputs``), and only then are the
  outputs copied into ``lib/`` with their SHA-256. ``recheck`` hashes every recorded file and
  checked output again when the decision is made.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from fyan.config import LeanSection
from fyan.lean import compile as leanc
from fyan.sandbox import safefile
from fyan.lean.compile import CompileResult, LeanSetup, LeanSetupError, module_path
from fyan.lean.inspector import Inspection, InspectorBuild, remove_tree, run_inspector
from fyan.lakepackage.package import unit_module, upstream
from fyan.sandbox.runner import Confinement, project_confinement, tool_environment
from fyan.lean.toolchain import Toolchain
from fyan.project import Project
from fyan.state.models import UnitRecord
from fyan.state.store import Store


class RecordedInputError(Exception):
    """A file the gate reads is not recorded, is missing, or differs from its recorded SHA-256
    (the message names it)."""


class GateEnvironmentError(Exception):
    """The gate workspace cannot be prepared for a reason no candidate can fix (the project's
    Lake package is incomplete, the toolchain cannot be resolved, the folder cannot be written);
    the message says what to do."""


def recorded_bytes(project: Project, store: Store, unit_id: str, name: str) -> bytes:
    """The bytes of ``units/<unit_id>/<name>``, which must match the SHA-256 the gateway recorded
    for that artifact; read once, so what is checked is what is used. Only a regular file is read
    (``O_NOFOLLOW | O_NONBLOCK``: a link, a FIFO or a device is refused before it is opened).
    Raises ``RecordedInputError`` otherwise."""
    from fyan.state.gateway import sha256_bytes

    recorded = store.artifact(unit_id, name)
    rel = f"units/{unit_id}/{name}"
    if recorded is None:
        raise RecordedInputError(f"no {name} recorded for unit {unit_id} (the stage that writes it has not passed)")
    path = project.paths.unit(unit_id) / name
    try:
        data = read_regular(path)
    except FileNotFoundError:
        raise RecordedInputError(f"{rel} is missing (recorded sha256 {recorded.sha256[:12]}…)") from None
    except OSError as e:
        raise RecordedInputError(f"{rel} is unreadable: {e.strerror or e}") from None
    if sha256_bytes(data) != recorded.sha256:
        raise RecordedInputError(f"{rel} differs from the recorded artifact (edited after its stage)")
    return data


def read_regular(path: Path, limit: int = 1 << 30) -> bytes:
    """The bytes of ``path`` when it is a regular file of at most ``limit`` bytes (default 1 GiB:
    ``.olean`` files), checked with ``lstat`` and opened without following a link and without
    blocking (``fyan.sandbox.safefile.read_bytes``: a FIFO or device planted in its place is refused,
    never read). Raises ``OSError`` (``FileNotFoundError`` when it does not exist)."""
    return safefile.read_bytes(path, limit=limit)


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


#: the output files of a module ``M`` (``M.olean``; with Lean's module system also
#: ``M.olean.server``, ``M.olean.private``, ``M.ir``, ``M.ir.sig``; ``M.ilean``): docs/lean-contract.md
OUTPUT_SUFFIXES = (".olean", ".olean.server", ".olean.private", ".ir", ".ir.sig", ".ilean")


@dataclass
class GateWorkspace:
    """A prepared gate workspace (module docstring)."""

    root: Path
    lib: str
    project_root: Path
    setup: LeanSetup
    toolchain: Toolchain
    #: upstream modules whose sources are here, to build in the first phase (no reusable output)
    upstream_modules: list[str] = field(default_factory=list)
    #: upstream modules whose recorded ``.olean`` is in ``lib/`` (compiled once, when they completed)
    compiled_upstream: list[str] = field(default_factory=list)
    #: every file placed from a recorded artifact or copied from a checked output: path -> SHA-256
    recorded: dict[Path, str] = field(default_factory=dict)

    @property
    def src(self) -> Path:
        return self.root / "src"

    @property
    def libdir(self) -> Path:
        return self.root / "lib"

    @property
    def tmp(self) -> Path:
        return self.root / "tmp"

    def out(self, name: str) -> Path:
        """The output folder of the compile called ``name``."""
        return self.root / "build" / name

    def module_file(self, module: str) -> Path:
        return module_path(self.src, module, ".lean")

    def search_path(self) -> list[Path]:
        """Where a compile or a checker here looks for ``<Lib>`` modules, before the dependencies."""
        return [self.libdir]

    def files(self) -> dict[str, str]:
        """SHA-256 of every file of the workspace outside ``build/`` and ``tmp/`` (relative path;
        a link as ``-> <target>``)."""
        out: dict[str, str] = {}
        skip = {self.root / "build", self.tmp}
        for dirpath, dirnames, filenames in os.walk(self.root):
            here = Path(dirpath)
            for d in list(dirnames):
                if (here / d) in skip:
                    dirnames.remove(d)
                elif (here / d).is_symlink():
                    out[(here / d).relative_to(self.root).as_posix()] = "-> " + os.readlink(here / d)
                    dirnames.remove(d)
            for f in filenames:
                path = here / f
                rel = path.relative_to(self.root).as_posix()
                if path.is_symlink():
                    out[rel] = "-> " + os.readlink(path)
                else:
                    try:
                        out[rel] = _sha(read_regular(path))
                    except OSError as e:
                        out[rel] = f"unreadable: {e}"
        return out

    def changes_outside_outputs(self, before: dict[str, str], module: str, out: Path) -> list[str]:
        """What a compile of ``module`` into ``out`` changed beyond the module's own output files
        (``OUTPUT_SUFFIXES``): a file of the workspace changed, removed or added outside ``build/``
        and ``tmp/`` (``before``: ``files()`` before the compile), and in ``out`` any link, anything
        not a regular file, or any other file (an ``Init.olean`` planted there would shadow Lean's
        own library for anything searching that folder)."""
        after = self.files()
        problems = [f"{rel} was changed or removed" for rel, digest in before.items() if after.get(rel) != digest]
        problems += [f"{rel} was created" for rel in sorted(set(after) - set(before))]
        allowed = {module_path(out, module, suffix) for suffix in OUTPUT_SUFFIXES}
        for dirpath, dirnames, filenames in os.walk(out):
            here = Path(dirpath)
            for name in [*dirnames, *filenames]:
                path = here / name
                rel = path.relative_to(self.root).as_posix()
                if path.is_symlink():
                    problems.append(f"{rel} was created as a link ({os.readlink(path)})")
                elif name in dirnames:
                    continue
                elif not path.is_file():
                    problems.append(f"{rel} is not a regular file")
                elif path not in allowed:
                    problems.append(f"{rel} was created (not an output of {module})")
            dirnames[:] = [d for d in dirnames if not (here / d).is_symlink()]
        return problems

    def publish(self, module: str, out: Path) -> dict[str, bytes]:
        """Copy ``module``'s output files from ``out`` into ``lib/`` (read-only, hashed: what
        every later compile, checker and the gateway read) and return them (suffix -> bytes)."""
        files: dict[str, bytes] = {}
        for suffix in OUTPUT_SUFFIXES:
            path = module_path(out, module, suffix)
            if os.path.lexists(path):
                files[suffix] = read_regular(path)
        for suffix, data in files.items():
            dest = module_path(self.libdir, module, suffix)
            dest.parent.mkdir(parents=True, exist_ok=True)
            if os.path.lexists(dest):
                os.chmod(dest, 0o644)
                os.unlink(dest)
            dest.write_bytes(data)
            dest.chmod(0o444)
            self.recorded[dest] = _sha(data)
        return files

    def recheck(self) -> list[str]:
        """Every recorded file and published output, hashed again now (the decision rests on
        them): what changed since it was placed."""
        problems = []
        for path, digest in self.recorded.items():
            try:
                same = _sha(read_regular(path)) == digest
            except OSError:
                same = False
            if not same:
                problems.append(f"{path.relative_to(self.root).as_posix()} changed after it was checked")
        return problems

    def confinement(self, *, writable: list[Path], readable: Sequence[Path] = ()) -> Confinement:
        """The sandbox of a process here: the project and the home hidden; the workspace, the
        toolchain and the dependencies readable; only ``writable`` (and ``tmp/``) writable."""
        return project_confinement(self.project_root, [self.tmp, *writable], toolchain=self.toolchain,
                                   read_only=[self.root], extra_readable=[*self.setup.readable(), *readable])

    def remove(self) -> None:
        remove_tree(self.root)


def upstream_output(project: Project, store: Store, unit: UnitRecord, source: bytes,
                    used: dict[str, str] | None = None, setup: LeanSetup | None = None) -> bytes | None:
    """The ``.olean`` of upstream ``unit``'s module as a passing gate run compiled it from
    ``source`` (its recorded ``Basic.lean``): ``units/<unit>/Basic.olean``, checked against its
    recorded SHA-256, with ``Basic.olean.json`` (recorded by the same gate run) saying it was
    compiled from exactly ``source``, against exactly the upstream ``.olean`` files ``used``
    (module -> SHA-256: Lean does not re-check an imported module's content, so an output compiled
    against an upstream unit completed again since is not reused), and — given ``setup`` — by the
    same Lean (version and git hash: Lean refuses an ``.olean`` of another build).
    None when there is no such output: the caller then builds ``source``. Raises
    ``RecordedInputError`` when a recorded file is missing or differs."""
    if store.artifact(unit.id, "Basic.olean") is None or store.artifact(unit.id, "Basic.olean.json") is None:
        return None
    try:
        meta = json.loads(recorded_bytes(project, store, unit.id, "Basic.olean.json"))
    except ValueError:
        return None
    if not isinstance(meta, dict) or meta.get("source_sha256") != _sha(source) or meta.get("upstream_oleans") != used:
        return None
    if setup is not None and (meta.get("lean_githash") != setup.githash or meta.get("lean_version") != setup.version):
        return None
    olean = recorded_bytes(project, store, unit.id, "Basic.olean")
    return olean if _sha(olean) == meta.get("olean_sha256") else None


def check_package(project: Project) -> None:
    """Raise ``GateEnvironmentError`` when the project's Lake package lacks its ``lakefile.toml``
    or ``lean-toolchain`` (with what to do)."""
    pkg = project.paths.lean
    for name in ("lakefile.toml", "lean-toolchain"):
        if not (pkg / name).is_file():
            raise GateEnvironmentError(
                f"the project's Lake package has no {name} ({project.paths.rel(pkg / name)}); restore it "
                "(it is written from lake-template/ when the project is created)")


def resolve_setup(project: Project, toolchain: Toolchain, log_dir: Path | None = None) -> LeanSetup:
    """The ``LeanSetup`` of the project's Lake package (``fyan.lean.compile.resolve``), checked to
    be the pinned Lean. Raises ``GateEnvironmentError``."""
    pkg = project.paths.lean
    check_package(project)
    try:
        setup = leanc.resolve(toolchain, pkg, project.config.lean, log_dir=log_dir)
    except LeanSetupError as e:
        raise GateEnvironmentError(str(e)) from None
    if toolchain.lean_version and setup.version != toolchain.lean_version:
        raise GateEnvironmentError(f"`lean` in the project's package is Lean {setup.version} ({setup.lean}) but "
                                   f"`lake --version` reports Lean {toolchain.lean_version}: fix the toolchain "
                                   "(elan toolchain install <pin>, or [lean] lake)")
    return setup


def prepare(project: Project, store: Store, unit: UnitRecord, files: dict[str, bytes], *, purpose: str,
            toolchain: Toolchain, include_upstream: bool = True, log_dir: Path | None = None) -> GateWorkspace:
    """A fresh gate workspace for ``unit`` (module docstring) with the unit's ``files`` (part →
    bytes, e.g. ``{"Basic": ...}``, already checked by the caller). ``upstream_modules`` of the
    result: the upstream modules the first phase must build (units without a reusable output).
    Raises ``RecordedInputError`` when an upstream unit's recorded ``Basic.olean`` or
    ``Basic.lean`` fails its check, and ``GateEnvironmentError`` when the project's package or the
    toolchain cannot be used, or the folder cannot be written."""
    lib = project.config.lean_lib
    root = project.paths.gate_workspace(unit.id, purpose)
    setup = resolve_setup(project, toolchain, log_dir)
    deps = upstream(store, unit.id) if include_upstream else []
    adopted = store.adopted()  # complete by adoption: their modules come from the required adopted package
    deps = [d for d in deps if d.id not in adopted]
    outputs: dict[str, bytes] = {}
    sources: dict[str, bytes] = {}
    for d in sorted(deps, key=lambda d: len(upstream(store, d.id))):  # a unit after its own upstream units
        source = recorded_bytes(project, store, d.id, "Basic.lean")  # checked either way
        below = [unit_module(project, e) for e in upstream(store, d.id) if e.id not in adopted]
        used = {m: _sha(outputs[m]) for m in below if m in outputs}
        olean = upstream_output(project, store, d, source, used, setup) if len(used) == len(below) else None
        if olean is not None:
            outputs[unit_module(project, d)] = olean
        else:
            sources[unit_module(project, d)] = source
    try:
        remove_tree(root)
        root.mkdir(parents=True)
        safefile.write_bytes(root / "lean-toolchain", safefile.read_bytes(project.paths.lean / "lean-toolchain"))
        ws = GateWorkspace(root, lib, project.paths.root, setup, toolchain, list(sources), list(outputs))
        for d in (ws.src, ws.libdir, ws.root / "build", ws.tmp):
            d.mkdir()
        placed = [(module_path(ws.libdir, m, ".olean"), data) for m, data in outputs.items()]
        placed += [(ws.module_file(m), data) for m, data in sources.items()]
        placed += [(ws.module_file(unit_module(project, unit, part)), data) for part, data in files.items()]
        for path, data in placed:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data)
            path.chmod(0o444)
            ws.recorded[path] = _sha(data)
    except OSError as e:
        raise GateEnvironmentError(
            f"cannot prepare the gate workspace {project.paths.rel(root)}: {e.strerror or e}; make .fyan/ writable"
        ) from None
    return ws


def module_outputs(ws: GateWorkspace, module: str) -> dict[str, bytes]:
    """What the gate hands the gateway when ``module`` passed: its ``.olean`` as this workspace's
    build compiled it (``Basic.olean``, as published in ``lib/``) and what it was compiled from
    (``Basic.olean.json``: the module, the SHA-256 of its source and of the ``.olean``, of each
    upstream ``.olean`` it was compiled against — ``upstream_oleans`` — and the Lean version and
    git hash that compiled it), both recorded as derived artifacts; the ``.olean`` then goes into
    the project package's outputs (``fyan.lakepackage.package``). Empty when there is no output."""
    try:
        olean = read_regular(module_path(ws.libdir, module, ".olean"))
        source = read_regular(ws.module_file(module))
        used = {m: _sha(read_regular(module_path(ws.libdir, m, ".olean")))
                for m in [*ws.compiled_upstream, *ws.upstream_modules]}
    except OSError:
        return {}
    meta = {"module": module, "source_sha256": _sha(source), "olean_sha256": _sha(olean), "upstream_oleans": used,
            "lean_version": ws.setup.version, "lean_githash": ws.setup.githash}
    return {"Basic.olean": olean, "Basic.olean.json": (json.dumps(meta, indent=2) + "\n").encode()}


def build(ws: GateWorkspace, config: LeanSection, log_dir: Path, *, trusted: list[str], candidate: list[str],
          name: str = "build") -> tuple[CompileResult | None, CompileResult | None]:
    """The two-phase build (module docstring): each of ``trusted`` compiled in order (None when
    empty; stops at the first failure, which it returns), then, when they all succeeded, each of
    ``candidate`` (None when empty; the first failure, else the last result). Every compile writes
    only its own output folder; its outputs reach ``lib/`` only when it succeeded and changed
    nothing else. Logs ``<name>-upstream[-i].log`` and ``<name>[-i].log`` in ``log_dir``."""
    first = None
    for i, module in enumerate(trusted):
        first = _compile(ws, module, config, log_dir, f"{name}-upstream" + (f"-{i}" if i else ""))
        if not first.ok:
            return first, None
    second = None
    for i, module in enumerate(candidate):
        second = _compile(ws, module, config, log_dir, name + (f"-{i}" if i else ""))
        if not second.ok:
            return first, second
    return first, second


def _compile(ws: GateWorkspace, module: str, config: LeanSection, log_dir: Path, name: str) -> CompileResult:
    out = ws.out(name)
    remove_tree(out)
    out.mkdir(parents=True)
    before = ws.files()
    result = leanc.compile_module(ws.setup, source_root=ws.src, module=module, out_root=out,
                                  search_path=ws.search_path(), config=config, log_dir=log_dir, name=name,
                                  confinement=ws.confinement(writable=[out]))
    tampered = ws.changes_outside_outputs(before, module, out)
    if tampered:
        shown = "; ".join(tampered[:5]) + (f"; and {len(tampered) - 5} more" if len(tampered) > 5 else "")
        return result.model_copy(update={
            "ok": False, "environment_error": None, "olean": None,
            "reason": f"the compile of {module} changed the gate workspace beyond its own outputs "
                      f"(compile-time code?): {shown}; nothing built there is trusted"})
    if not result.ok:
        return result
    try:
        ws.publish(module, out)
    except OSError as e:
        return result.model_copy(update={"ok": False, "olean": None,
                                         "reason": f"the output of {module} cannot be read: {e}"})
    return result


def inspect(ws: GateWorkspace, inspector: InspectorBuild, config: LeanSection, out_dir: Path, *, name: str,
            modules: Sequence[str] = (), names: Sequence[str] = (), imports: Sequence[str] = (), local_prefix: str = "",
            black_box: Sequence[str] = ()) -> Inspection:
    """Run the trusted inspector (``fyan.lean.inspector.run_inspector``) on the published outputs,
    confined: ``LEAN_PATH`` = ``lib/``, then the dependencies; it may write only ``out_dir`` and
    reads the inspector's own folder."""
    env = ws.setup.environment(ws.search_path())
    confinement = ws.confinement(writable=[out_dir], readable=[inspector.folder])
    return run_inspector(inspector, ws.toolchain, ws.root, config=config, out_dir=out_dir, name=name,
                         modules=list(modules), names=list(names), imports=list(imports), local_prefix=local_prefix,
                         black_box=list(black_box), confinement=confinement, lean_env=env)


def run_tool(ws: GateWorkspace, argv: list[str], config: LeanSection, log_dir: Path, *, name: str, kind: str,
             readable: Sequence[Path] = (), writable: Sequence[Path] = (), cwd: Path | None = None):
    """Run a checker program (a kernel replay) on the published outputs, as the inspector runs: in
    the workspace, ``LEAN_PATH`` = ``lib/``, then the dependencies, confined, admitted by memory as
    ``kind``; returns its ``ProcessResult``."""
    from fyan.sandbox.runner import run_process

    env = tool_environment(ws.setup.environment(ws.search_path()), pass_env=config.pass_env)
    return run_process(argv, cwd=cwd or ws.root, timeout_s=config.build_timeout, memory_mb=config.memory_limit_mb,
                       sandbox=config.sandbox, confinement=ws.confinement(writable=list(writable), readable=list(readable)),
                       env=env, log_path=log_dir / f"{name}.log", lean_kind=kind)


def comparator_package(ws: GateWorkspace, project: Project, store: Store, unit: UnitRecord) -> Path:
    """A Lake package for leanprover/comparator, which builds the challenge and the solution itself
    with ``lake build`` (docs/lean-contract.md): ``<ws>/comparator/`` with the project's
    ``lakefile.toml`` (its library narrowed to the unit's and its upstream units' namespaces),
    ``lean-toolchain`` and ``lake-manifest.json``, Lake's ``packagesDir`` naming the project's
    ``.lake/packages`` (its dependencies read in place, never copied), and
    the recorded sources of the unit (``Statement``, ``Basic``) and of every upstream unit — never
    an output Lake did not build there. Raises ``OSError``, ``GateEnvironmentError`` or
    ``RecordedInputError``."""
    from fyan.lakepackage.package import LakefileError, unit_namespace, workspace_lakefile

    pkg = project.paths.lean
    root = ws.root / "comparator"
    root.mkdir()
    deps = [d for d in upstream(store, unit.id) if d.id not in store.adopted()]
    try:
        lakefile = workspace_lakefile(safefile.read_text(pkg / "lakefile.toml"), ws.lib,
                                      [unit_namespace(project, u) for u in [unit, *deps]])
    except (LakefileError, OSError, UnicodeDecodeError) as e:
        raise GateEnvironmentError(str(e)) from None
    from fyan.lakepackage.workspace import shared_manifest, shared_packages_dir, with_packages_dir

    shared = shared_packages_dir(pkg, root)  # the project's one set of dependencies, read in place
    (root / "lakefile.toml").write_text(with_packages_dir(lakefile, shared), encoding="utf-8")
    if (pkg / "lean-toolchain").is_file():
        safefile.copy_file(pkg / "lean-toolchain", root / "lean-toolchain")
    manifest = shared_manifest(pkg, shared)
    if manifest is not None:
        (root / "lake-manifest.json").write_text(manifest, encoding="utf-8")
    elif (pkg / "lake-manifest.json").is_file():
        safefile.copy_file(pkg / "lake-manifest.json", root / "lake-manifest.json")
    sources = {unit_module(project, unit, part): read_regular(ws.module_file(unit_module(project, unit, part)))
               for part in ("Basic", "Statement")}
    sources.update({unit_module(project, d): recorded_bytes(project, store, d.id, "Basic.lean") for d in deps})
    for module, data in sources.items():
        path = module_path(root, module, ".lean")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    return root
