"""Gate-owned workspaces and builds: evidence from files the gate checked, built where no agent writes.

Agents and earlier attempts write in ``workspaces/<unit>/``; a build there could reuse outputs
they left (Lake trusts an up-to-date ``.olean`` and its trace instead of rebuilding; issue 11,
finding 7). Every build whose result the gateway decides on — the completion gate, the freeze
of an audited statement, the scaffold's compile check, name look-ups — therefore runs in a
**gate workspace** instead:

* fresh (``.fyan/gate/<unit>/<purpose>/``, deleted and recreated each time; nothing of an
  earlier run or of an agent is reused), under ``.fyan/`` where confined processes cannot
  write;
* filled only with **recorded, hash-checked** files (``recorded_bytes``): the unit's own files
  as recorded by the gateway; for every upstream unit the ``.olean`` this gate's trusted build
  compiled when that unit completed (``units/<unit>/Basic.olean``, recorded with its SHA-256 by
  the gate run that completed it; ``module_outputs`` hands it to the gateway), placed in the
  workspace's ``.lake/build/lib/lean`` — each complete unit is compiled once (issue 15) — or,
  for a unit completed before outputs were recorded, its recorded ``Basic.lean`` to build
  again; the project's ``lakefile.toml`` (its library narrowed to the unit's namespace and
  those rebuilt upstream units: ``fyan.lean.package.workspace_lakefile``) and
  ``lean-toolchain`` from the project's Lake package (``lean/``, out of reach of confined
  processes); Lake packages (Mathlib) are linked read-only from the project package;
* built in **two phases** (``build``): first what the gate trusts (upstream units it must
  rebuild, the audited ``Statement.lean`` when it is the reference), then the candidate's
  module, with every file already in the workspace (sources, configuration, upstream and
  earlier outputs) bound read-only in the sandbox, so compile-time code of the candidate cannot
  rewrite an upstream ``.olean`` the inspector and the kernel checker then read; after the
  build, anything it changed beyond its own outputs — a changed upstream ``.olean``, a moved
  packages link, a new ``lakefile.lean``, an ``.olean`` that would shadow ``Init`` or
  ``Mathlib`` on the search path — fails the build (``changes_outside_outputs``).

Build outputs reused later are only those the gate produced itself: in the same run, or, for
upstream units, in the gate run that completed them (checked against the SHA-256 recorded then).
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass, field
from pathlib import Path

from fyan.config import LeanSection
from fyan.lean.inspector import Inspection, InspectorBuild, remove_tree, run_inspector
from fyan.lean.lake import BuildResult, lake_build
from fyan.lean.package import LakefileError, olean_path, unit_module, unit_namespace, upstream, workspace_lakefile
from fyan.lean.runner import Confinement, project_confinement
from fyan.lean.toolchain import Toolchain
from fyan.project import Project
from fyan.state.models import UnitRecord
from fyan.state.store import Store


class RecordedInputError(Exception):
    """A file the gate reads is not recorded, is missing, or differs from its recorded SHA-256
    (the message names it)."""


class GateEnvironmentError(Exception):
    """The gate workspace cannot be prepared for a reason no candidate can fix (the project's
    Lake package is incomplete, the folder cannot be written); the message says what to do."""


def recorded_bytes(project: Project, store: Store, unit_id: str, name: str) -> bytes:
    """The bytes of ``units/<unit_id>/<name>``, which must match the SHA-256 the gateway recorded
    for that artifact; read once, so what is checked is what is used. Raises
    ``RecordedInputError`` otherwise."""
    from fyan.state.gateway import sha256_bytes

    recorded = store.artifact(unit_id, name)
    rel = f"units/{unit_id}/{name}"
    if recorded is None:
        raise RecordedInputError(f"no {name} recorded for unit {unit_id} (the stage that writes it has not passed)")
    path = project.paths.unit(unit_id) / name
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise RecordedInputError(f"{rel} is missing (recorded sha256 {recorded.sha256[:12]}…)") from None
    except OSError as e:
        raise RecordedInputError(f"{rel} is unreadable: {e}") from None
    if sha256_bytes(data) != recorded.sha256:
        raise RecordedInputError(f"{rel} differs from the recorded artifact (edited after its stage)")
    return data


@dataclass
class GateWorkspace:
    """A prepared gate workspace: a Lake package of its own (``root``)."""

    root: Path
    lib: str
    project_root: Path
    #: upstream modules whose sources are here, to build in the first phase (no recorded output)
    upstream_modules: list[str] = field(default_factory=list)
    #: upstream modules whose recorded ``.olean`` is here (compiled once, when they completed)
    compiled_upstream: list[str] = field(default_factory=list)

    def module_file(self, module: str) -> Path:
        return self.root.joinpath(*module.split(".")).with_suffix(".lean")

    @property
    def lakefile(self) -> Path:
        return self.root / "lakefile.toml"

    def outputs(self) -> list[Path]:
        """Every file the builds so far left under ``.lake/build`` (to protect in the next phase)."""
        build = self.root / ".lake" / "build"
        return sorted(p for p in build.rglob("*") if p.is_file()) if build.is_dir() else []

    def files(self) -> dict[str, str]:
        """SHA-256 of every file in the workspace (relative path), the linked Lake packages and
        the sandbox's temporary folder excepted; the packages link itself as ``-> <target>``."""
        out: dict[str, str] = {}
        for dirpath, dirnames, filenames in os.walk(self.root):
            here = Path(dirpath)
            dirnames[:] = [d for d in dirnames if d != ".sandbox-tmp" and not (here / d).is_symlink()]
            for d in os.listdir(here):
                if (here / d).is_symlink():
                    out[(here / d).relative_to(self.root).as_posix()] = "-> " + os.readlink(here / d)
            for f in filenames:
                path = here / f
                if not path.is_symlink():
                    out[path.relative_to(self.root).as_posix()] = hashlib.sha256(path.read_bytes()).hexdigest()
        return out

    def changes_outside_outputs(self, before: dict[str, str]) -> list[str]:
        """What a build changed in the workspace beyond its own outputs (``before``: ``files()``
        before it): an existing file changed or removed (sources, configuration, earlier
        outputs, the packages link), or a new file that could be read as a module or a
        configuration — an ``.olean`` outside the project library's own folders (it would shadow
        ``Init``, ``Mathlib`` or an upstream unit for the inspector and the kernel checker), any
        new link (a folder link named ``Init`` would do the same unseen), or anything new at the
        workspace's top (a ``lakefile.lean``, a changed manifest)."""
        after = self.files()
        lib = self.lib
        problems = [f"{rel} was changed or removed" for rel, digest in before.items() if after.get(rel) != digest]
        for rel in sorted(set(after) - set(before)):
            parts = rel.split("/")
            if len(parts) == 1:
                problems.append(f"{rel} was created at the top of the workspace")
            elif after[rel].startswith("-> "):  # a build makes no link; one named `Init` or
                # `Mathlib` would put files on the search path unseen by the checks below
                problems.append(f"{rel} was created as a link ({after[rel]})")
            elif ".olean" in parts[-1] or parts[-1].endswith((".ilean", ".hash", ".trace")):
                allowed = [f".lake/build/lib/lean/{lib}/", f".lake/build/lib/lean/{lib}.", f".lake/build/ir/{lib}/",
                           f".lake/build/ir/{lib}."]
                if not rel.startswith(tuple(allowed)):
                    problems.append(f"{rel} was created outside the library's build folders")
        return problems

    def confinement(self, toolchain: Toolchain, *, protect: list[Path] = (), more_writable: list[Path] = (),
                    readable: list[Path] = ()) -> Confinement:
        """The sandbox of a process in this workspace: the project and the home hidden, the
        workspace (and ``more_writable``) writable, ``protect`` read-only inside it."""
        return project_confinement(self.project_root, [self.root, *more_writable], toolchain=toolchain,
                                   read_only=list(protect), extra_readable=list(readable))

    def remove(self) -> None:
        remove_tree(self.root)


def upstream_output(project: Project, store: Store, unit: UnitRecord, source: bytes,
                    used: dict[str, str] | None = None) -> bytes | None:
    """The ``.olean`` of upstream ``unit``'s module as a passing gate run compiled it from
    ``source`` (its recorded ``Basic.lean``): ``units/<unit>/Basic.olean``, checked against its
    recorded SHA-256, with ``Basic.olean.json`` (recorded by the same gate run) saying it was
    compiled from exactly ``source`` against exactly the upstream ``.olean`` files ``used``
    (module -> SHA-256: those the workspace reads; Lean does not re-check an imported module, so
    an output compiled against an upstream unit completed again since is not reused). None when there is no such output (a unit completed
    before issue 15, a gate run elsewhere that did not hand it over, a source recorded since):
    the caller then builds ``source``. Raises ``RecordedInputError`` when a recorded file is
    missing or differs."""
    if store.artifact(unit.id, "Basic.olean") is None or store.artifact(unit.id, "Basic.olean.json") is None:
        return None
    try:
        meta = json.loads(recorded_bytes(project, store, unit.id, "Basic.olean.json"))
    except ValueError:
        return None
    if meta.get("source_sha256") != hashlib.sha256(source).hexdigest() or meta.get("upstream_oleans") != used:
        return None
    olean = recorded_bytes(project, store, unit.id, "Basic.olean")
    return olean if hashlib.sha256(olean).hexdigest() == meta.get("olean_sha256") else None


def prepare(project: Project, store: Store, unit: UnitRecord, files: dict[str, bytes], *, purpose: str,
            include_upstream: bool = True) -> GateWorkspace:
    """A fresh gate workspace for ``unit`` (module docstring) with the unit's ``files`` (part →
    bytes, e.g. ``{"Basic": ...}``, already checked by the caller). ``upstream_modules`` of the
    result: the upstream modules the first phase must build (units without a recorded output).
    Raises ``RecordedInputError`` when an upstream unit's recorded ``Basic.olean`` or
    ``Basic.lean`` fails its check, and ``GateEnvironmentError`` when the project's package
    lacks its ``lakefile.toml`` (or its library's table) or ``lean-toolchain``, or the folder
    cannot be written."""
    lib = project.config.lean_lib
    root = project.paths.gate_workspace(unit.id, purpose)
    pkg = project.paths.lean
    for name in ("lakefile.toml", "lean-toolchain"):
        if not (pkg / name).is_file():
            raise GateEnvironmentError(
                f"the project's Lake package has no {name} ({project.paths.rel(pkg / name)}); restore it "
                "(it is written from lake-template/ when the project is created)")
    deps = upstream(store, unit.id) if include_upstream else []
    adopted = store.adopted()  # complete by adoption: their modules come from the required adopted package
    deps = [d for d in deps if d.id not in adopted]
    outputs: dict[str, bytes] = {}
    sources: dict[str, bytes] = {}
    roots = [unit_namespace(project, unit)]
    for d in sorted(deps, key=lambda d: len(upstream(store, d.id))):  # a unit after its own upstream units
        source = recorded_bytes(project, store, d.id, "Basic.lean")  # checked either way: a changed
        below = [unit_module(project, e) for e in upstream(store, d.id) if e.id not in adopted]
        used = {m: hashlib.sha256(outputs[m]).hexdigest() for m in below if m in outputs}
        olean = upstream_output(project, store, d, source, used) if len(used) == len(below) else None
        if olean is not None:
            outputs[unit_module(project, d)] = olean
        else:
            sources[unit_module(project, d)] = source
            roots.append(unit_namespace(project, d))
    try:
        lakefile = workspace_lakefile((pkg / "lakefile.toml").read_text(encoding="utf-8"), lib, roots)
    except LakefileError as e:
        raise GateEnvironmentError(str(e)) from None
    try:
        remove_tree(root)
        root.mkdir(parents=True)
        (root / "lakefile.toml").write_text(lakefile, encoding="utf-8")
        (root / "lean-toolchain").write_bytes((pkg / "lean-toolchain").read_bytes())
        packages = pkg / ".lake" / "packages"
        if packages.is_dir():
            (root / ".lake").mkdir()
            os.symlink(packages.resolve(), root / ".lake" / "packages")
        ws = GateWorkspace(root, lib, project.paths.root, list(sources), list(outputs))
        for module, data in outputs.items():
            path = olean_path(root, module)
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data)
        for module, data in sources.items():
            path = ws.module_file(module)
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data)
        for part, data in files.items():
            path = ws.module_file(unit_module(project, unit, part))
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data)
    except OSError as e:
        raise GateEnvironmentError(
            f"cannot prepare the gate workspace {project.paths.rel(root)}: {e.strerror or e}; make .fyan/ writable"
        ) from None
    return ws


def module_outputs(ws: GateWorkspace, module: str) -> dict[str, bytes]:
    """What the gate hands the gateway when ``module`` passed: its ``.olean`` as this gate
    workspace's build compiled it (``Basic.olean``) and what it was compiled from
    (``Basic.olean.json``: the module, the SHA-256 of its source, of the ``.olean`` and of each
    upstream ``.olean`` it was compiled against: ``upstream_oleans``), both
    recorded as derived artifacts; the ``.olean`` then goes into the project package's outputs
    (``fyan.lean.package``). Empty when there is no output."""
    try:
        olean = olean_path(ws.root, module).read_bytes()
        source = ws.module_file(module).read_bytes()
        used = {m: hashlib.sha256(olean_path(ws.root, m).read_bytes()).hexdigest()  # what it was compiled
                for m in [*ws.compiled_upstream, *ws.upstream_modules]}              # against (upstream_output)
    except OSError:
        return {}
    meta = {"module": module, "source_sha256": hashlib.sha256(source).hexdigest(),
            "olean_sha256": hashlib.sha256(olean).hexdigest(), "upstream_oleans": used}
    return {"Basic.olean": olean, "Basic.olean.json": (json.dumps(meta, indent=2) + "\n").encode()}


def build(ws: GateWorkspace, toolchain: Toolchain, config: LeanSection, log_dir: Path, *, trusted: list[str],
          candidate: list[str], name: str = "build") -> tuple[BuildResult | None, BuildResult | None]:
    """The two-phase build (module docstring): ``lake build <trusted>`` (None when empty), then,
    when it succeeded, ``lake build <candidate>`` with every output of the first phase bound
    read-only (None when ``candidate`` is empty). Logs ``<name>-upstream.log`` and
    ``<name>.log`` in ``log_dir``."""
    first = None
    if trusted:
        first = lake_build(toolchain, ws.root, trusted, config, log_dir, f"{name}-upstream",
                           confinement=ws.confinement(toolchain))
        if not first.ok:
            return first, None
    if not candidate:
        return first, None
    before = ws.files()
    protect = [ws.root / rel for rel, digest in before.items() if not digest.startswith("-> ")]
    second = lake_build(toolchain, ws.root, candidate, config, log_dir, name,
                        confinement=ws.confinement(toolchain, protect=protect))
    tampered = ws.changes_outside_outputs(before)
    if tampered:
        shown = "; ".join(tampered[:5]) + (f"; and {len(tampered) - 5} more" if len(tampered) > 5 else "")
        second = second.model_copy(update={
            "ok": False, "configuration_error": None,
            "reason": f"lake build {' '.join(candidate)} changed the gate workspace beyond its own outputs "
                      f"(compile-time code?): {shown}; nothing built there is trusted"})
    return first, second


def inspect(ws: GateWorkspace, inspector: InspectorBuild, toolchain: Toolchain, config: LeanSection, out_dir: Path,
            *, name: str, modules: list[str] = (), names: list[str] = (), imports: list[str] = (),
            local_prefix: str = "", black_box: list[str] = ()) -> Inspection:
    """Run the trusted inspector in ``ws`` (``fyan.lean.inspector.run_inspector``), confined: it
    may write only ``out_dir`` and the workspace, and reads the inspector's own folder."""
    confinement = ws.confinement(toolchain, more_writable=[out_dir], readable=[inspector.folder])
    return run_inspector(inspector, toolchain, ws.root, config=config, out_dir=out_dir, name=name, modules=list(modules),
                         names=list(names), imports=list(imports), local_prefix=local_prefix,
                         black_box=list(black_box), confinement=confinement)
