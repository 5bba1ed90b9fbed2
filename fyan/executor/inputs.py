"""The head's side of a task's inputs: what a stage attempt or a gate build needs, as a
``TaskSpec``, built from the store (read-only) and the project's files.

Cost per task is flat in the project's size: the spec carries the unit's own rows
and files and only the *keys* of its direct dependencies' interfaces. An interface — an upstream
unit's statement, proof module, frozen declarations and the keys of its own dependencies — is
built once per completion (keyed by the id of the gate run that completed the unit) and put into
the backend's blob store; a node fetches the interfaces it lacks, recursively, and keeps them
(``fyan.executor.mirror``). The prompts bundle and the replay cassette travel the same way.
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Callable
from pathlib import Path

import msgpack

from fyan.sandbox import safefile
from fyan.config import config_snapshot
from fyan.executor.payload import TaskKind, TaskSpec, UnitData, encode_unit, inputs_digest, interface_key
from fyan.project import Project
from fyan.resources import data_dir
from fyan.stages import resolve, stage_spec, stage_specs
from fyan.state.models import Stage, StageRun
from fyan.state.store import Store

#: Files of ``lean/`` a task gets (the Lake package's configuration; modules come with interfaces)
PACKAGE_FILES = ("lakefile.toml", "lakefile.lean", "lean-toolchain", "lake-manifest.json")
#: Files of an upstream unit its dependents read (statement, proof module, its adoption record,
#: and the module as the gate that completed the unit compiled it: dependents read it instead of
#: compiling it again)
INTERFACE_FILES = ("problem.tex", "Basic.lean", "adoption.json", "Basic.olean", "Basic.olean.json")
#: ``meta`` rows a task gets (the session start decides which environment failures still block)
TASK_META = ("schema_version", "project_id", "session_started", "session_scoped", "head_token")


def prompts_bundle() -> tuple[str, bytes]:
    """(blob key, bytes) of every prompt file (``prompts/``), MessagePack name → text bytes."""
    folder = data_dir("prompts")
    files = {p.name: p.read_bytes() for p in sorted(folder.glob("*.md"))}
    data = msgpack.packb(files, use_bin_type=True)
    return f"prompts:{hashlib.sha256(data).hexdigest()}", data


class InputBuilder:
    """Builds task specs for one project (thread-safe). ``put(key, bytes)`` stores a blob where
    the backend's nodes can fetch it; ``has(key)`` says whether it is there already."""

    def __init__(self, project: Project, store: Store, project_id: str, put: Callable[[str, bytes], None]) -> None:
        self.project = project
        self.store = store
        self.project_id = project_id
        self._put = put
        self._lock = threading.Lock()
        self._interfaces: dict[str, int] = {}  # unit -> version already put
        self._cassette: tuple[tuple[int, int], str] | None = None
        self._declarations: tuple[tuple[int, int], str] | None = None
        self._prompts: str | None = None
        self._meta: tuple[str, dict[str, str]] | None = None
        self._config = config_snapshot(project.config)
        self._replays = any(
            project.config.agents.for_stage(s.name).provider in ("replay", "record") for s in stage_specs() if s.agent)

    # -- shared blobs ------------------------------------------------------------------------
    def prompts(self) -> str:
        with self._lock:
            if self._prompts is None:
                key, data = prompts_bundle()
                self._put(key, data)
                self._prompts = key
            return self._prompts

    def cassette(self) -> str | None:
        """Blob key of the replay cassette as it is now (re-read only when it changed)."""
        if not self._replays:
            return None
        path = self.project.paths.root / self.project.config.agents.replay_file
        try:
            st = path.stat()
        except FileNotFoundError:
            return None  # the provider on the node reports the missing cassette
        sig = (st.st_mtime_ns, st.st_size)
        with self._lock:
            if self._cassette is not None and self._cassette[0] == sig:
                return self._cassette[1]
            data = path.read_bytes()
            key = f"cassette:{hashlib.sha256(data).hexdigest()}"
            self._put(key, data)
            self._cassette = (sig, key)
            return key

    def declarations(self, stage: Stage) -> str | None:
        """Blob key of the ``[prover] declarations`` list as it is now, for a ``prove`` task
        (None: not configured, missing, or another stage; the node then says it is not there)."""
        name = self.project.config.prover.declarations
        if stage is not Stage.PROVE or not name:
            return None
        path = self.project.paths.root / name
        try:
            st = path.stat()
        except OSError:
            return None
        sig = (st.st_mtime_ns, st.st_size)
        with self._lock:
            if self._declarations is not None and self._declarations[0] == sig:
                return self._declarations[1]
            data = path.read_bytes()
            key = f"declarations:{hashlib.sha256(data).hexdigest()}"
            self._put(key, data)
            self._declarations = (sig, key)
            return key

    # -- interfaces --------------------------------------------------------------------------
    def interface(self, unit: str) -> tuple[str, int]:
        """(unit, version) of ``unit``'s current interface, put into the blob store if new.
        Raises ``ValueError`` when the unit is not complete (no gate run succeeded)."""
        version = self.store.completion(unit)
        if version is None:
            version = self.store.adoption_version(unit)
        if version is None:
            raise ValueError(f"{unit} is not complete: it has no interface")
        with self._lock:
            if self._interfaces.get(unit) == version:
                return unit, version
        rows = self.store.export_unit(unit, history=False)
        deps = sorted({r["depends_on"] for r in rows["unit_deps"]})
        dep_refs = [self.interface(d) for d in deps]
        record = rows["units"][0]
        files: dict[str, bytes] = {}
        for name in INTERFACE_FILES:
            path = self.project.paths.unit(unit) / name
            if path.is_file():
                files[f"units/{unit}/{name}"] = path.read_bytes()
        module = self.project.paths.lean / self.project.config.lean_lib / record["module"] / "Basic.lean"
        if module.is_file():
            files[self.project.paths.rel(module)] = module.read_bytes()
        shipped = {p.split("/", 2)[2] for p in files if p.startswith(f"units/{unit}/")}
        rows["artifacts"] = [a for a in rows["artifacts"] if a["kind"] in shipped]
        data = UnitData(unit=unit, version=version, rows=rows, files=files, deps=dep_refs)
        self._put(interface_key(self.project_id, unit, version), encode_unit(data))
        with self._lock:
            self._interfaces[unit] = version
        return unit, version

    def _meta_rows(self, head: str) -> dict[str, str]:
        """The store's ``meta`` rows a task reads (``TASK_META``), once per session (the gateway
        writes them when a session starts, never during a run). Not the intake catalogue: it
        grows with the document (1 MB at 1,500 statements) and only the head reads it."""
        with self._lock:
            if self._meta is not None and self._meta[0] == head:
                return self._meta[1]
        meta = {k: v for k, v in self.store.meta_all().items() if k in TASK_META}
        with self._lock:
            self._meta = (head, meta)
        return meta

    # -- one task ----------------------------------------------------------------------------
    def spec(self, run: StageRun, kind: TaskKind, head: str) -> TaskSpec:
        """The inputs of ``run`` (raises ``OSError`` when a recorded file cannot be read)."""
        paths = self.project.paths
        rows = self.store.export_unit(run.unit, history=True)
        files: dict[str, bytes] = {}
        for a in rows["artifacts"]:
            path = paths.root / a["path"]
            if a["path"].startswith(f"units/{run.unit}/") and safefile.is_regular(path):
                files[a["path"]] = safefile.read_bytes(path)
        deps = sorted({r["depends_on"] for r in rows["unit_deps"]})
        upstream = [self.interface(d) for d in deps]
        package = {f"lean/{n}": (paths.lean / n).read_bytes() for n in PACKAGE_FILES if (paths.lean / n).is_file()}
        extra: dict[str, bytes] = {}
        guidance = paths.guidance / f"{run.unit}.md"
        if guidance.is_file():
            extra[f"guidance/{run.unit}.md"] = guidance.read_bytes()
        shadows = paths.root / "shadows" / run.unit
        if shadows.is_dir():
            for p in sorted(shadows.rglob("*")):
                if safefile.is_regular(p):
                    extra[paths.rel(p)] = safefile.read_bytes(p)
        stage_inputs = stage_spec(run.stage).inputs  # e.g. the audit's earlier verdicts
        if stage_inputs is not None:
            extra.update(resolve(stage_inputs)(rows, run, paths.root))
        return TaskSpec(
            kind=kind, head=head, project_id=self.project_id, run=run.model_dump(mode="json"), config=self._config,
            unit=UnitData(unit=run.unit, version=0, rows=rows, files=files), upstream=upstream, package=package,
            extra=extra, meta=self._meta_rows(head), prompts=self.prompts(), cassette=self.cassette(),
            declarations=self.declarations(run.stage), inputs_digest=inputs_digest(rows),
        )


def rel_ok(rel: str) -> bool:
    """A relative path that stays inside the folder it is joined to (no absolute path, no
    ``..``, no empty part): what a payload may name."""
    if not rel or rel.startswith("/") or "\\" in rel or "\0" in rel:
        return False
    parts = rel.split("/")
    return all(p not in ("", ".", "..") for p in parts)


def safe_join(root: Path, rel: str) -> Path:
    """``root / rel`` for a payload path; raises ``ValueError`` for a path that would leave
    ``root`` (``rel_ok``)."""
    if not rel_ok(rel):
        raise ValueError(f"refused path {rel!r} in a task payload (absolute, `..` or empty part)")
    return root.joinpath(*rel.split("/"))
