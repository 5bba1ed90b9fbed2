"""The gateway: the only code that writes stage state.

Agents and stage code write files into an *attempt folder* and nothing else. The gateway

1. refuses illegal transitions (``begin``): a stage out of order (``prove`` before ``audit``
   succeeded), any stage of a unit whose dependencies are not complete, a unit that is
   complete, blocked or already running;
2. decides an attempt's outcome (``finish``) only from the persisted files and the exit status,
   by running the stage's deterministic check (its ``StageSpec.check`` in ``fyan.stages``; never a model). A check
   that raises fails closed;
3. publishes the artifacts into ``units/<unit>/`` crash-safely: files are first copied into
   ``units/<unit>/.staging/`` (as ``<tag>.<path, quoted>``), then the transition (run status, artifact rows with their
   sha256, freezes, events) is committed in **one** SQLite transaction, then the staged files are
   renamed into place. A crash before the commit leaves the previous state (the staging folder
   is an orphan, deleted by ``recover``); a crash after it is rolled forward by ``recover``,
   which publishes a staged file only if the store records exactly its hash.

SQLite runs in WAL mode with ``synchronous=NORMAL``: a killed process never loses a committed
transition (a power cut may lose the last one, never half of one).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sqlite3
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote, unquote

from pydantic import BaseModel, Field

from fyan.sandbox import safefile
from fyan.errors import TransitionError
from fyan.project import Project, check_unit_id
from fyan.stages import post_task_names, stage_spec
from fyan.models.plan import UnitPlan
from fyan.state.faults import fault_point
from fyan.state.lifecycle import progress
from fyan.state.models import FailureKind, PostRun, RunStatus, Stage, StageRun, UnitRecord
from fyan.state.store import SCHEMA, SCHEMA_VERSION, Store, immediate_transaction, run_from_row



@dataclass
class PostOutcome:
    """A post-completion check's verdict and the files it admits for publication:
    ``unit_files`` inside ``units/<unit>/``, ``skill_files`` inside ``skills/``."""

    passed: bool
    reason: str
    unit_files: dict[str, bytes] = field(default_factory=dict)
    skill_files: dict[str, bytes] = field(default_factory=dict)


class FreezeSpec(BaseModel):
    """A declaration to freeze, with the hashes that bind it (see ``FreezeRecord``)."""

    decl: str
    role: str = "root"
    normalized_signature: str
    signature_hash: str
    type_hash: str | None = None
    bound_inputs: dict[str, str]


class AdoptionSpec(BaseModel):
    """One unit's adoption decision as the gateway records it (``record_adoptions``)."""

    unit: str
    outcome: str = Field(pattern=r"^(adopted|candidate|pipeline)$")
    package: str
    reason: str
    decls: list[dict[str, Any]] = Field(default_factory=list, description="per \\lean name: the inspector's evidence")
    freezes: list[FreezeSpec] = Field(default_factory=list)


@dataclass
class CheckContext:
    """What a stage check may look at: the project, the store (read-only), the attempt."""

    project: Project
    store: Store
    unit: UnitRecord
    run: StageRun
    attempt_dir: Path
    #: evidence produced for this attempt by Fyan's own code where the attempt ran (the executor:
    #: ``gate_report`` from a worker's completion gate), never read from the attempt folder
    evidence: Mapping[str, Any] = field(default_factory=dict)


@dataclass
class CheckOutcome:
    """A stage check's verdict. ``derived`` files (reports written by the check itself, e.g.
    ``audit/result.json``) are published whatever the verdict."""

    passed: bool
    reason: str
    derived: dict[str, bytes] = field(default_factory=dict)
    freezes: list[FreezeSpec] = field(default_factory=list)
    frozen_outputs: tuple[str, ...] = ()
    rewind_to: Stage | None = None
    failure_kind: FailureKind = FailureKind.CHECK
    event_data: dict[str, Any] = field(default_factory=dict)


Check = Callable[[CheckContext], CheckOutcome]
PostCheck = Callable[["PostContext"], PostOutcome]


@dataclass
class PostContext:
    """What a post-completion check may look at (like ``CheckContext``)."""

    project: Project
    store: Store
    unit: UnitRecord
    run: PostRun
    attempt_dir: Path


#: The one folder under ``units/`` where ingest stages the files of every unit before the
#: transaction that records them (a folder per unit cost a ``mkdir`` and an ``rmdir`` each).
INGEST_STAGING = ".ingest-staging"


def sync_filesystem(path: Path) -> None:
    """Flush to disk every file written on the filesystem that holds ``path`` (Linux
    ``syncfs(2)`` on a descriptor of ``path``: one call for any number of files; where the C
    library has no ``syncfs``, ``sync(2)``, which flushes every filesystem). Raises ``OSError``
    when the flush fails (a write error the disk reported), as ``fsync`` would."""
    import ctypes
    import ctypes.util

    syncfs = None
    try:
        syncfs = getattr(ctypes.CDLL(ctypes.util.find_library("c") or None, use_errno=True), "syncfs", None)
    except OSError:
        pass
    if syncfs is None:
        os.sync()
        return
    fd = os.open(path, os.O_RDONLY)
    try:
        if syncfs(fd) != 0:
            err = ctypes.get_errno()
            raise OSError(err, f"syncfs: {os.strerror(err)}", str(path))
    finally:
        os.close(fd)


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def sha256_file(path: Path) -> str:
    return sha256_bytes(path.read_bytes())


class Gateway:
    """Sole writer of a project's state database and of ``units/<unit>/``.

    ``checks`` maps each stage to its deterministic check; the orchestrator passes the
    registry's (``fyan.stages.stage_checks()``). Thread-safe: writes are serialised by a lock,
    checks run outside it.
    """

    def __init__(self, project: Project, checks: Mapping[str, Check] | None = None) -> None:
        self.project = project
        self.paths = project.paths
        self.checks = dict(checks or {})
        self.paths.state.mkdir(parents=True, exist_ok=True)
        self._lock = threading.RLock()
        self._sync_lock = threading.Lock()
        self._writes = threading.Condition()
        self._active = 0
        self._stopping = False
        #: ``_unit_dir``'s checked unit folders; the staging folders known to exist
        self._unit_dirs: dict[str, Path] = {}
        self._staged_dirs: set[Path] = set()
        self._conn = sqlite3.connect(self.paths.db, check_same_thread=False, isolation_level=None, timeout=30)
        self._conn.row_factory = sqlite3.Row
        self._conn.execute("PRAGMA journal_mode=WAL")
        self._conn.execute("PRAGMA synchronous=NORMAL")
        self._conn.execute("PRAGMA foreign_keys=ON")
        with self._tx() as c:
            for statement in SCHEMA.split(";"):
                if statement.strip():
                    c.execute(statement)
            row = c.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
            if row is None:
                c.execute("INSERT INTO meta VALUES ('schema_version', ?)", (str(SCHEMA_VERSION),))
            elif int(row["value"]) != SCHEMA_VERSION:
                raise TransitionError(
                    f"{self.paths.db}: state schema version {row['value']}, this Fyan needs {SCHEMA_VERSION}",
                    hint="use the Fyan version that created the project",
                )
            row = c.execute("SELECT value FROM meta WHERE key = 'project_id'").fetchone()
            if row is None:  # names this project's state wherever its attempts run (fyan.executor)
                c.execute("INSERT INTO meta VALUES ('project_id', ?)", (uuid.uuid4().hex,))
                row = c.execute("SELECT value FROM meta WHERE key = 'project_id'").fetchone()
            #: a random id of this project's state store, made once (a project re-created in the
            #: same folder gets another): workers keep their copies of the project under it
            self.project_id: str = row["value"]
        #: the fencing token of the current run session (``start_session``): results of attempts
        #: handed out under another token — a previous head's — are refused (``finish``)
        self.head_token: str | None = None
        self.store = Store(self.paths.db)

    def close(self) -> None:
        self.store.close()
        self._conn.close()

    # -- plumbing --------------------------------------------------------------------------
    def _tx(self):  # -> context manager of sqlite3.Connection
        return immediate_transaction(self._conn, self._lock)

    @staticmethod
    def _event(c: sqlite3.Connection, kind: str, unit: str | None, run_id: int | None, data: dict) -> None:
        c.execute(
            "INSERT INTO events (ts, kind, unit, run_id, data) VALUES (?, ?, ?, ?, ?)",
            (time.time(), kind, unit, run_id, json.dumps(data, sort_keys=True)),
        )

    def event(self, kind: str, unit: str | None = None, data: dict | None = None, run_id: int | None = None) -> None:
        """Append an event (advice received, source changed, ...) to the event log."""
        with self._tx() as c:
            self._event(c, kind, unit, run_id, data or {})

    def _unit_dir(self, unit: str) -> Path:
        """``units/<unit>`` (``ProjectPaths.unit``: refuses an id that is not a unit id or whose
        folder resolves elsewhere), checked once per unit and process, then remembered. The
        check resolves every component of the path (an ``lstat`` each, twice), which cost ~20
        system calls per transition; ``units/`` is written by this gateway alone,
        so a unit folder that resolved inside ``units/`` once stays there.
        ``tidy`` and ``recover`` forget the remembered folders."""
        path = self._unit_dirs.get(unit)
        if path is None:
            path = self.paths.unit(unit)
            self._unit_dirs[unit] = path
        return path

    def _staging(self, unit: str) -> Path:
        return self._unit_dir(unit) / ".staging"

    @staticmethod
    def _staged_name(tag: str, rel: str) -> str:
        """Staged files are flat: ``<tag>.<rel, url-quoted>`` (no folder to create per attempt)."""
        return f"{tag}.{quote(rel, safe='')}"

    @staticmethod
    def _ingest_staged_name(unit: str, rel: str) -> str:
        """Ingest stages every unit's files in one flat folder (``INGEST_STAGING``):
        ``<unit, url-quoted>+<rel, url-quoted>`` (quoting leaves no ``+`` in either part)."""
        return f"{quote(unit, safe='')}+{quote(rel, safe='')}"

    @staticmethod
    def _parse_staged(name: str) -> tuple[str, str] | None:
        tag, sep, rel = name.partition(".")
        return (tag, unquote(rel)) if sep and rel else None

    def _stage_files(self, unit: str, tag: str, files: Mapping[str, bytes], *, sync: bool = True) -> Path:
        """Write ``files`` into the unit's staging folder; each is flushed to disk (``fsync``)
        unless ``sync`` is False, when the caller flushes them all at once before its
        transaction records them (``register_units``)."""
        staging = self._staging(unit)
        if not files:
            return staging
        if staging not in self._staged_dirs:  # kept while the project runs (see ``tidy``)
            staging.mkdir(parents=True, exist_ok=True)
            self._staged_dirs.add(staging)
        for rel, data in files.items():
            target = staging / self._staged_name(tag, rel)
            try:
                fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
            except FileNotFoundError:  # the folder went away behind our back: make it again
                staging.mkdir(parents=True, exist_ok=True)
                fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
            try:
                os.write(fd, data)
                if sync:
                    os.fsync(fd)
            finally:
                os.close(fd)
        return staging

    def _unstage(self, unit: str, tag: str, files: Mapping[str, bytes]) -> None:
        for rel in files:
            try:
                os.unlink(self._staging(unit) / self._staged_name(tag, rel))
            except FileNotFoundError:
                pass

    def _publish(self, unit: str, tag: str, files: Mapping[str, bytes]) -> None:
        """Rename the staged files of ``tag`` into ``units/<unit>/``."""
        staging = self._staging(unit)
        unit_dir = self._unit_dir(unit)
        for rel in sorted(files):
            src, dest = staging / self._staged_name(tag, rel), unit_dir / rel
            try:
                os.replace(src, dest)
            except FileNotFoundError:
                if not src.exists():
                    raise
                dest.parent.mkdir(parents=True, exist_ok=True)
                os.replace(src, dest)

    def tidy(self) -> None:
        """Remove the (empty) staging folders of every unit; call when no attempt is running."""
        self._forget_dirs()
        if self.paths.units.is_dir():
            for staging in self.paths.units.glob("*/.staging"):
                try:
                    staging.rmdir()
                except OSError:
                    pass

    def _forget_dirs(self) -> None:
        self._unit_dirs.clear()
        self._staged_dirs.clear()

    def _insert_artifacts(
        self, c: sqlite3.Connection, unit: str, run_id: int | None, files: Mapping[str, bytes], frozen: tuple[str, ...]
    ) -> None:
        now = time.time()
        for rel, data in files.items():
            c.execute(
                "INSERT INTO artifacts (unit, run_id, kind, path, sha256, frozen, created_at) VALUES (?,?,?,?,?,?,?)",
                (unit, run_id, rel, f"units/{unit}/{rel}", sha256_bytes(data), int(rel in frozen), now),
            )

    # -- intake ----------------------------------------------------------------------------
    def begin_ingest(self, source: str) -> None:
        """Record that an ingest of ``source`` (the project's main file, relative) starts, with
        this process's id and the time (``meta`` key ``ingest_started``, JSON ``{"at": POSIX
        seconds, "pid", "source"}``; event ``ingest_started``). ``register_units`` clears it in
        the transaction that records the units, ``abandon_ingest`` when the ingest fails: a
        marker left with no units means the process was killed while ingesting
        (``fyan.orchestrator.status.ingest_state``). Nothing is recorded when units exist."""
        with self._tx() as c:
            if c.execute("SELECT COUNT(*) FROM units").fetchone()[0]:
                return
            data = {"at": time.time(), "pid": os.getpid(), "source": source}
            c.execute("INSERT OR REPLACE INTO meta VALUES ('ingest_started', ?)", (json.dumps(data, sort_keys=True),))
            self._event(c, "ingest_started", None, None, data)
        fault_point("ingest:started")

    def abandon_ingest(self, reason: str) -> None:
        """The ingest ``begin_ingest`` recorded ended without units (bad input, a refused
        model, Ctrl-C): clear its marker and record why (event ``ingest_abandoned``)."""
        with self._tx() as c:
            if c.execute("DELETE FROM meta WHERE key = 'ingest_started'").rowcount:
                self._event(c, "ingest_abandoned", None, None, {"reason": reason})

    def register_units(self, dag: UnitPlan, files: Mapping[str, Mapping[str, bytes]], meta: Mapping[str, str]) -> None:
        """Record the Specifier's units, edges and per-unit intake files (``problem.tex``...).

        Refused when the project already has units (re-ingesting is a separate operation).
        The files are staged in one folder (``INGEST_STAGING``) and flushed to disk by one
        filesystem sync (``sync_filesystem``) before the one transaction that records them, not
        one ``fsync`` per file: a book of 10,000 statements wrote some 19,000 files, and a sync
        and a staging folder each made intake's cost grow with the disk's latency rather than
        the document. A crash after the commit is rolled forward by ``recover`` (a staged file
        whose hash the store records is put in place), one before it leaves nothing recorded.
        """
        with self._lock:
            if self._conn.execute("SELECT COUNT(*) FROM units").fetchone()[0]:
                raise TransitionError(
                    f"{self.paths.root}: the project already has units", hint="inspect them with `fyan status`"
                )
            for u in dag.units:
                check_unit_id(u.id)  # an id that is no unit id is refused before anything is staged
            staging = self.paths.units / INGEST_STAGING
            shutil.rmtree(staging, ignore_errors=True)  # a crashed ingest's leftovers: none recorded
            staging.mkdir(parents=True)
            for u in dag.units:
                for rel, data in files.get(u.id, {}).items():
                    with open(staging / self._ingest_staged_name(u.id, rel), "wb") as fh:
                        fh.write(data)
            sync_filesystem(staging)
            fault_point("register:after_copy")
            with self._tx() as c:
                for u in dag.units:
                    c.execute(
                        "INSERT INTO units VALUES (?,?,?,?,?,?,?,?,?)",
                        (u.id, u.order, u.kind, u.label, u.title, u.module, dag.layers[u.id],
                         json.dumps(u.statements), str(u.provenance)),
                    )
                for e in dag.edges:
                    c.execute(
                        "INSERT OR IGNORE INTO unit_deps VALUES (?,?,?,?,?)",
                        (e.unit, e.depends_on, e.origin, int(e.in_proof), e.evidence),
                    )
                for u in dag.units:
                    self._insert_artifacts(c, u.id, None, files.get(u.id, {}), ())
                for k, v in meta.items():
                    c.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", (k, v))
                c.execute("DELETE FROM meta WHERE key = 'ingest_started'")  # ``begin_ingest``: it ended
                self._event(c, "ingested", None, None, {"units": len(dag.units), "edges": len(dag.edges)})
            fault_point("register:after_commit")
            for u in dag.units:
                unit_dir = self.paths.units / u.id
                try:  # a folder made here is a real folder inside units/: nothing to resolve
                    unit_dir.mkdir()
                except FileExistsError:  # one that was there (a symbolic link?) is checked
                    unit_dir = self._unit_dir(u.id)
                for rel in sorted(files.get(u.id, {})):
                    dest = unit_dir / rel
                    if len(Path(rel).parts) > 1:
                        dest.parent.mkdir(parents=True, exist_ok=True)
                    os.replace(staging / self._ingest_staged_name(u.id, rel), dest)
            shutil.rmtree(staging, ignore_errors=True)
            self._forget_dirs()

    def accept_source(self, units: Mapping[str, Mapping[str, Any]], files: Mapping[str, Mapping[str, bytes]],
                      restart: list[str], meta: Mapping[str, str], reason: str) -> list[int]:
        """Accept a change of the source in place (``fyan.orchestrator.accept`` plans it): in one
        transaction, update the ``units`` rows in ``units`` (id → ``order``, ``kind``, ``label``,
        ``title``, ``statements``, ``provenance``; the unit set and its edges are the recorded
        ones), record the new intake files in ``files`` (unit → relative path → bytes:
        ``problem.tex``, ``source_proof.tex``) as current artifacts, deactivate the frozen
        statements of every unit in ``restart`` and record a restart marker for each (a run of
        the first stage, status ``interrupted``, failure kind ``restart``, ``reason``:
        ``fyan.state.lifecycle`` then starts the unit over), and replace the ``meta`` rows given
        (``source_sha256``, ``catalogue``). Event ``source_accepted``. Returns the markers' run
        ids. Refused (``TransitionError``) while an attempt of a unit in ``restart`` runs, or for
        an id that is not a unit."""
        with self._lock:
            known = {r["id"] for r in self._conn.execute("SELECT id FROM units")}
            strangers = sorted((set(units) | set(files) | set(restart)) - known)
            if strangers:
                raise TransitionError(f"{self.paths.root}: not units of the project: {', '.join(strangers)}")
            busy = sorted(r["unit"] for r in self._conn.execute(
                "SELECT unit FROM stage_runs WHERE status = ?", (RunStatus.RUNNING.value,)) if r["unit"] in restart)
            if busy:
                raise TransitionError(f"{self.paths.root}: an attempt of {', '.join(busy)} is running",
                                      hint="stop the run first (`fyan daemon stop`, or Ctrl-C in its terminal)")
            for uid, fs in files.items():
                self._stage_files(uid, "accept", fs)
            ids: list[int] = []
            with self._tx() as c:
                for uid, row in units.items():
                    c.execute("UPDATE units SET ord = ?, kind = ?, label = ?, title = ?, statements = ?, provenance = ? "
                              "WHERE id = ?", (row["order"], row["kind"], row["label"], row["title"],
                                               json.dumps(row["statements"]), str(row["provenance"]), uid))
                for uid, fs in files.items():
                    self._insert_artifacts(c, uid, None, fs, ())
                now = time.time()
                for uid in restart:
                    c.execute("UPDATE freezes SET active = 0 WHERE unit = ?", (uid,))
                    cur = c.execute(
                        "INSERT INTO stage_runs (unit, stage, attempt, status, started_at, finished_at, reason, "
                        "failure_kind, attempt_dir) VALUES (?,?,?,?,?,?,?,?,?)",  # a marker: no attempt folder
                        (uid, list(Stage)[0].value, 0, RunStatus.INTERRUPTED.value, now, now, reason,
                         FailureKind.RESTART.value, ""))
                    ids.append(int(cur.lastrowid))
                for k, v in meta.items():
                    c.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", (k, v))
                self._event(c, "source_accepted", None, None,
                            {"changed": sorted(files), "restarted": list(restart), "runs": ids})
            for uid, fs in files.items():
                self._publish(uid, "accept", fs)
            self.tidy()
        return ids

    # -- transitions -----------------------------------------------------------------------
    def begin(self, unit_id: str, stage: Stage, attempts_per_stage: int, *, create_dir: bool = True) -> StageRun:
        """Start an attempt of ``stage`` for ``unit_id``; returns the running ``StageRun``.

        With ``create_dir`` False the caller creates the attempt folder (``run.attempt_dir``)
        before its agent writes there. Raises ``TransitionError`` naming the rule when the
        transition is illegal.
        """
        with self._finishing(), self._tx() as c:
            self._legal(c, unit_id, stage, attempts_per_stage, manual=False)
            run = self._open_run(c, unit_id, stage, "stage_started", {})
        if create_dir:
            (self.paths.root / run.attempt_dir).mkdir(parents=True, exist_ok=True)
        return run

    def _legal(self, c: sqlite3.Connection, unit_id: str, stage: Stage, attempts_per_stage: int, *, manual: bool) -> None:
        if c.execute("SELECT 1 FROM units WHERE id = ?", (unit_id,)).fetchone() is None:
            raise TransitionError(f"unknown unit {unit_id!r}")
        deps = [d for (d,) in c.execute("SELECT DISTINCT depends_on FROM unit_deps WHERE unit = ?", (unit_id,))]
        states = self._progress_many(c, [unit_id, *deps], attempts_per_stage)
        own = states[unit_id]
        if own.running is not None:
            raise TransitionError(f"{unit_id}: {own.running.stage.value} is already running (run {own.running.id})")
        if manual and own.adopted:
            raise TransitionError(f"{unit_id}: complete by adoption; its proof lives in the adopted Lake package",
                                  hint="edit it there, then run `fyan adopt` again")
        if manual:
            if stage is not Stage.PROVE:
                raise TransitionError(f"{unit_id}: only the proof (prove stage) can be edited by hand, not {stage.value}")
            if not (own.complete or own.next_stage in (Stage.PROVE, Stage.GATE)):
                raise TransitionError(
                    f"{unit_id}: a hand-edited proof is taken only once the statement is frozen "
                    f"(the next stage is {own.next_stage.value if own.next_stage else 'none'})"
                )
        else:
            if own.complete:
                raise TransitionError(f"{unit_id}: already complete")
            if own.blocked_reason is not None:
                raise TransitionError(f"{unit_id}: blocked: {own.blocked_reason}")
        pending = [d for d in deps if not states[d].complete]
        if pending:
            raise TransitionError(
                f"{unit_id}: cannot start {stage.value}: dependencies not complete: {', '.join(sorted(pending))}"
            )
        if not manual and own.next_stage is not stage:
            raise TransitionError(
                f"{unit_id}: cannot start {stage.value}: the next stage is "
                f"{own.next_stage.value if own.next_stage else 'none'}"
            )

    def _progress_many(self, c: sqlite3.Connection, units: list[str], attempts_per_stage: int) -> dict:
        """``lifecycle.progress`` of each of ``units``, from the store (two queries)."""
        marks = ",".join("?" * len(units))
        by_unit: dict[str, list[StageRun]] = {u: [] for u in units}
        for r in c.execute(f"SELECT * FROM stage_runs WHERE unit IN ({marks}) ORDER BY id", units):
            by_unit[r["unit"]].append(run_from_row(r))
        resets = dict(c.execute(
            "SELECT unit, MAX(CAST(json_extract(data, '$.after_run') AS INTEGER)) FROM events WHERE kind = 'guidance' "
            f"AND unit IN ({marks}) AND json_extract(data, '$.source') = 'human' GROUP BY unit", units
        ).fetchall())
        start = c.execute("SELECT value FROM meta WHERE key = 'session_started'").fetchone()
        session = float(start[0]) if start else 0.0
        row = c.execute("SELECT value FROM meta WHERE key = 'session_scoped'").fetchone()
        scoped = json.loads(row[0]) if row else {}
        adopted = {r[0] for r in c.execute(
            f"SELECT unit FROM adoptions WHERE outcome = 'adopted' AND unit IN ({marks})", units)}
        return {u: progress(by_unit[u], attempts_per_stage, max(session, float(scoped.get(u, 0.0))),
                            int(resets.get(u) or 0), u in adopted) for u in units}

    def _open_run(self, c: sqlite3.Connection, unit_id: str, stage: Stage, event: str, data: dict) -> StageRun:
        attempt = 1 + c.execute(
            "SELECT COUNT(*) FROM stage_runs WHERE unit = ? AND stage = ?", (unit_id, stage.value)
        ).fetchone()[0]
        now = time.time()
        cur = c.execute(
            "INSERT INTO stage_runs (unit, stage, attempt, status, started_at, attempt_dir) VALUES (?,?,?,?,?,?)",
            (unit_id, stage.value, attempt, RunStatus.RUNNING.value, now, ""),
        )
        run_id = cur.lastrowid
        attempt_dir = f".fyan/attempts/{unit_id}/{run_id:06d}-{stage.value}"
        c.execute("UPDATE stage_runs SET attempt_dir = ? WHERE id = ?", (attempt_dir, run_id))
        self._event(c, event, unit_id, run_id, {"stage": stage.value, "attempt": attempt, **data})
        return StageRun(
            id=run_id, unit=unit_id, stage=stage, attempt=attempt, status=RunStatus.RUNNING,
            started_at=now, attempt_dir=attempt_dir,
        )

    # -- adoption ----------------------------------------------------------------------------
    def record_adoptions(self, decisions: list[AdoptionSpec], *, evidence: Mapping[str, Any] | None = None) -> int:
        """Record adoption decisions (``fyan.adopt``) in one transaction; returns how many.

        Each ``AdoptionSpec`` replaces the unit's earlier decision. For outcome ``adopted`` the
        unit becomes complete by adoption (``lifecycle``) and its declarations are frozen
        (``freezes`` rows with ``run_id`` 0: frozen at adoption, no stage run); for
        ``candidate`` the existing declaration is frozen as the candidate statement
        (role ``candidate``), for ``pipeline`` any freeze of an earlier adoption is retired.
        ``units/<unit>/adoption.json`` (the decision and the inspector's evidence) is published
        like every artifact (staged, committed with its hash, renamed). ``evidence``: facts
        common to every decision (the inspector's report path and SHA-256, the package).

        Raises ``TransitionError`` when a unit is unknown or has a stage attempt running.
        """
        common = dict(evidence or {})
        files = {d.unit: {"adoption.json": (json.dumps({**d.model_dump(mode="json"), "inspection": common},
                                                       indent=2, sort_keys=True) + "\n").encode()}
                 for d in decisions}
        with self._lock:
            for d in decisions:
                self._stage_files(d.unit, "adopt", files[d.unit])
            with self._finishing(), self._tx() as c:
                now = time.time()
                for d in decisions:
                    if c.execute("SELECT 1 FROM units WHERE id = ?", (d.unit,)).fetchone() is None:
                        raise TransitionError(f"unknown unit {d.unit!r}")
                    if c.execute("SELECT 1 FROM stage_runs WHERE unit = ? AND status = 'running'",
                                 (d.unit,)).fetchone():
                        raise TransitionError(f"{d.unit}: a stage attempt is running; adopt when it ended",
                                              hint="stop the run (Ctrl-C or `fyan daemon stop`), then adopt again")
                    c.execute("UPDATE freezes SET active = 0 WHERE unit = ? AND run_id = 0", (d.unit,))
                    c.execute("INSERT OR REPLACE INTO adoptions VALUES (?,?,?,?,?,?)",
                              (d.unit, d.outcome, d.package, d.reason,
                               json.dumps({**common, "decls": d.decls}, sort_keys=True), now))
                    role = {"adopted": "root", "candidate": "candidate"}.get(d.outcome)
                    if role:
                        for f in d.freezes:
                            c.execute(
                                "INSERT INTO freezes (unit, run_id, decl, role, normalized_signature, signature_hash, "
                                "type_hash, bound_inputs, created_at) VALUES (?,?,?,?,?,?,?,?,?)",
                                (d.unit, 0, f.decl, role, f.normalized_signature, f.signature_hash, f.type_hash,
                                 json.dumps(f.bound_inputs, sort_keys=True), now))
                    self._insert_artifacts(c, d.unit, None, files[d.unit], ("adoption.json",))
                    self._event(c, "adopted", d.unit, None, {"outcome": d.outcome, "reason": d.reason})
            for d in decisions:
                self._publish(d.unit, "adopt", files[d.unit])
            self.tidy()
        return len(decisions)

    def record_manual_attempt(
        self, unit_id: str, files: Mapping[str, bytes], attempts_per_stage: int, *, note: str = "hand edit"
    ) -> tuple[StageRun | None, str]:
        """Take a hand-edited proof (``files``: ``{"Basic.lean": bytes}``) into the state.

        The edit is an attempt of the ``prove`` stage by a person: the prove stage's check runs on
        it first (in a scratch folder); if it refuses, nothing but a ``manual_edit_refused``
        event is recorded and ``(None, reason)`` is returned — the state stays as it was.
        Otherwise a prove run is opened (event ``manual_attempt``) and finished like any attempt,
        which publishes the file with its hash; the unit's next stage is then the gate
        (``lifecycle``). Allowed once the statement is frozen (next stage prove or gate, or
        complete), also for a unit blocked over its budget. Raises ``TransitionError`` when the
        unit is running, its dependencies are not complete, or it is not that far yet.
        """
        if set(files) != set(stage_spec(Stage.PROVE).outputs):
            raise TransitionError(f"{unit_id}: a hand edit must give exactly {', '.join(stage_spec(Stage.PROVE).outputs)}")
        with self._tx() as c:
            self._legal(c, unit_id, Stage.PROVE, attempts_per_stage, manual=True)
        unit = self.store.unit(unit_id)
        assert unit is not None
        scratch = self.paths.attempts / unit_id / f"manual-{time.time_ns()}"
        for rel, data in files.items():
            (scratch / rel).parent.mkdir(parents=True, exist_ok=True)
            (scratch / rel).write_bytes(data)
        provisional = StageRun(id=0, unit=unit_id, stage=Stage.PROVE, attempt=0, status=RunStatus.RUNNING,
                               started_at=time.time(), attempt_dir=self.paths.rel(scratch))
        outcome = self._check(provisional, unit, scratch)
        digest = {rel: sha256_bytes(data) for rel, data in files.items()}
        if not outcome.passed:
            self.event("manual_edit_refused", unit_id, {"reason": outcome.reason, "sha256": digest, "note": note})
            shutil.rmtree(scratch, ignore_errors=True)
            return None, outcome.reason
        with self._tx() as c:
            self._legal(c, unit_id, Stage.PROVE, attempts_per_stage, manual=True)
            run = self._open_run(c, unit_id, Stage.PROVE, "manual_attempt", {"sha256": digest, "note": note})
        target = self.paths.root / run.attempt_dir
        target.parent.mkdir(parents=True, exist_ok=True)
        os.replace(scratch, target)
        done = self.finish(run)
        with self._lock:
            self._sync_lean_package()  # a re-opened unit leaves the Lean package until its gate passes
        return done, done.reason or ""

    def interrupt(self, run_ids: list[int], reason: str) -> int:
        """Record running attempts ``run_ids`` as interrupted (a stop, not a failure); returns
        how many were still running."""
        n = 0
        with self._tx() as c:
            for run_id in run_ids:
                row = c.execute("SELECT unit, stage, status FROM stage_runs WHERE id = ?", (run_id,)).fetchone()
                if row is None or row["status"] != RunStatus.RUNNING.value:
                    continue
                c.execute("UPDATE stage_runs SET status = ?, finished_at = ?, reason = ? WHERE id = ?",
                          (RunStatus.INTERRUPTED.value, time.time(), reason, run_id))
                self._event(c, "stage_interrupted", row["unit"], run_id, {"stage": row["stage"], "reason": reason})
                n += 1
        return n

    def interrupt_by_provider(self, run: StageRun, provider: str, reason: str, outage: dict | None = None) -> StageRun:
        """Close the running attempt ``run`` as *interrupted* because its model provider was
        unavailable (an outage, ``ProviderUnavailable``): not a failure — no attempt budget is
        used and no check runs; the unit runs the same stage again once the provider answers
        (an outage says nothing about the proof). Records a ``stage_interrupted`` event with ``by = "provider"``, the provider
        and the outage (``Outage.as_dict``). Raises ``TransitionError`` when ``run`` is not
        running any more or the run is stopping."""
        data = {"stage": run.stage.value, "reason": reason, "by": "provider", "provider": provider,
                "outage": outage or {}}
        now = self._interrupt_one("stage_runs", run.id, run.unit, reason, "stage_interrupted", data, run.id)
        return run.model_copy(update=dict(status=RunStatus.INTERRUPTED, finished_at=now, reason=reason))

    def interrupt_post(self, run: PostRun, reason: str) -> PostRun:
        """Close a running post-completion task as interrupted (its provider was unavailable);
        it runs again later. Raises ``TransitionError`` when it is not running."""
        now = self._interrupt_one("post_runs", run.id, run.unit, reason, "post_interrupted",
                                  {"task": run.task, "post_run": run.id, "reason": reason}, None)
        return run.model_copy(update=dict(status=RunStatus.INTERRUPTED, finished_at=now, reason=reason))

    def _interrupt_one(self, table: str, run_id: int, unit: str, reason: str, event: str, data: dict,
                       event_run: int | None) -> float:
        """Mark the running row ``run_id`` of ``table`` (stage_runs | post_runs) interrupted, with
        its event, in one transaction counted as an attempt's write; returns the time (POSIX s)."""
        with self._finishing(), self._tx() as c:
            row = c.execute(f"SELECT status FROM {table} WHERE id = ?", (run_id,)).fetchone()
            if row is None or row["status"] != RunStatus.RUNNING.value:
                raise TransitionError(f"run {run_id} of {unit} is not running (status {row and row['status']})")
            now = time.time()
            c.execute(f"UPDATE {table} SET status = ?, finished_at = ?, reason = ? WHERE id = ?",
                      (RunStatus.INTERRUPTED.value, now, reason, run_id))
            self._event(c, event, unit, event_run, data)
        return now

    @contextmanager
    def _finishing(self) -> Iterator[None]:
        """Count an attempt's write (opening it; or staging, commit, publishing) as in progress;
        refused once ``stop_writes`` was called."""
        with self._writes:
            if self._stopping:
                raise TransitionError("the run is stopping: no attempt is opened or recorded any more")
            self._active += 1
        try:
            yield
        finally:
            with self._writes:
                self._active -= 1
                self._writes.notify_all()

    @contextmanager
    def stop_writes(self) -> Iterator[None]:
        """Stop cleanly: wait for the attempt writes in progress (each a whole transition:
        staging, commit, publishing) to finish, refuse every later ``finish`` (it raises
        ``TransitionError``), and run the block with no other thread writing."""
        with self._writes:
            self._stopping = True
            while self._active:
                self._writes.wait()
        with self._lock:
            yield

    def start_session(self, units: list[str] | None = None) -> float:
        """Mark the start of a run session (see ``lifecycle``: environment failures of earlier
        sessions are retried) — for every unit, or only for ``units`` (a restricted run: the
        others keep their session). Returns the session start, POSIX seconds."""
        now = time.time()
        token = uuid.uuid4().hex
        with self._tx() as c:
            if units is None:
                c.execute("INSERT OR REPLACE INTO meta VALUES ('session_started', ?)", (repr(now),))
                c.execute("DELETE FROM meta WHERE key = 'session_scoped'")
            else:
                row = c.execute("SELECT value FROM meta WHERE key = 'session_scoped'").fetchone()
                scoped = json.loads(row[0]) if row else {}
                scoped.update({u: now for u in units})
                c.execute("INSERT OR REPLACE INTO meta VALUES ('session_scoped', ?)", (json.dumps(scoped, sort_keys=True),))
            c.execute("INSERT OR REPLACE INTO meta VALUES ('head_token', ?)", (token,))
            self._event(c, "session_started", None, None,
                        {"pid": os.getpid(), "head": token, **({"units": len(units)} if units is not None else {})})
        self.head_token = token
        return now

    def check_fence(self, run: StageRun, head: str | None, run_id: int) -> None:
        """Refuse the result of an attempt this head does not expect (attempt ids
        are fencing tokens): handed out under another session's token (a previous head's,
        after a restart), for another run than ``run``, or for a run that is not running any
        more (interrupted, or already closed). Raises ``TransitionError`` naming which."""
        if run_id != run.id:
            raise TransitionError(f"result of run {run_id} handed in for run {run.id} of {run.unit}: refused")
        if head is not None and self.head_token is not None and head != self.head_token:
            raise TransitionError(f"result of run {run.id} of {run.unit} comes from another head (session "
                                  f"{head[:8]}…, this one is {self.head_token[:8]}…): refused")
        with self._lock:
            row = self._conn.execute("SELECT status FROM stage_runs WHERE id = ?", (run.id,)).fetchone()
        if row is None or row["status"] != RunStatus.RUNNING.value:
            raise TransitionError(f"result of run {run.id} of {run.unit}, which is not running "
                                  f"(status {row and row['status']}): refused")

    def finish(
        self,
        run: StageRun,
        *,
        exit_status: int = 0,
        agent_error: str | None = None,
        failure_kind: FailureKind = FailureKind.AGENT,
        fence: str | None = None,
        evidence: Mapping[str, Any] | None = None,
        facts: Mapping[str, Any] | None = None,
    ) -> StageRun:
        """Close ``run``: decide its outcome from the attempt folder and publish.

        With ``agent_error`` (the agent or provider failed) the attempt fails with that reason
        and no check runs. Otherwise the stage's check decides (with ``evidence``, see
        ``CheckContext``); missing declared outputs fail the attempt. ``fence`` is the session
        token the attempt was handed out under (``check_fence``). ``facts``: counts Fyan's own code
        took from the attempt folder (e.g. ``refutations``), added to the attempt's event for
        ``fyan status``; they decide nothing. Returns the updated
        ``StageRun``. Raises ``TransitionError`` if the run is not running any more or the fence
        is another session's.
        """
        if fence is not None:
            self.check_fence(run, fence, run.id)
        attempt_dir = self.paths.root / run.attempt_dir
        unit = self.store.unit(run.unit)
        assert unit is not None
        if agent_error is not None:
            outcome = CheckOutcome(passed=False, reason=agent_error, failure_kind=failure_kind)
        elif exit_status != 0:
            outcome = CheckOutcome(passed=False, reason=f"agent exited with status {exit_status}")
        else:
            outcome = self._check(run, unit, attempt_dir, evidence)
        if facts:  # what Fyan's own code counted in the attempt folder (shown by status; decides nothing)
            outcome.event_data = {**outcome.event_data, **facts}
        files: dict[str, bytes] = {}
        if outcome.passed:
            for rel in stage_spec(run.stage).outputs:
                files[rel] = safefile.read_bytes(attempt_dir / rel)
            for rel in stage_spec(run.stage).extra_outputs:
                if safefile.is_regular(attempt_dir / rel):
                    files[rel] = safefile.read_bytes(attempt_dir / rel)
        files.update(outcome.derived)
        tag = f"run-{run.id}"
        with self._finishing():  # staging, commit and publishing form one write (``stop_writes``)
            return self._commit_finish(run, outcome, files, tag, exit_status)

    def _commit_finish(
        self, run: StageRun, outcome: CheckOutcome, files: dict[str, bytes], tag: str, exit_status: int
    ) -> StageRun:
        self._stage_files(run.unit, tag, files)
        fault_point("finish:after_copy")
        status = RunStatus.SUCCEEDED if outcome.passed else RunStatus.FAILED
        with self._tx() as c:
            row = c.execute("SELECT status FROM stage_runs WHERE id = ?", (run.id,)).fetchone()
            if row is None or row["status"] != RunStatus.RUNNING.value:
                self._unstage(run.unit, tag, files)
                raise TransitionError(f"run {run.id} of {run.unit} is not running (status {row and row['status']})")
            self._insert_artifacts(c, run.unit, run.id, files, outcome.frozen_outputs if outcome.passed else ())
            if outcome.passed and outcome.freezes:
                c.execute("UPDATE freezes SET active = 0 WHERE unit = ?", (run.unit,))
                for f in outcome.freezes:
                    c.execute(
                        "INSERT INTO freezes (unit, run_id, decl, role, normalized_signature, signature_hash, "
                        "type_hash, bound_inputs, created_at) VALUES (?,?,?,?,?,?,?,?,?)",
                        (run.unit, run.id, f.decl, f.role, f.normalized_signature, f.signature_hash,
                         f.type_hash, json.dumps(f.bound_inputs, sort_keys=True), time.time()),
                    )
            rewind = None if outcome.passed else outcome.rewind_to
            if rewind is not None and list(Stage).index(rewind) <= list(Stage).index(Stage.PLAN) \
                    and outcome.failure_kind is not FailureKind.REPLAN:  # a re-plan keeps the roots frozen
                c.execute("UPDATE freezes SET active = 0 WHERE unit = ?", (run.unit,))
            now = time.time()
            c.execute(
                "UPDATE stage_runs SET status = ?, finished_at = ?, exit_status = ?, reason = ?, "
                "failure_kind = ?, rewind_to = ? WHERE id = ?",
                (status.value, now, exit_status, outcome.reason,
                 None if outcome.passed else outcome.failure_kind.value,
                 rewind.value if rewind else None, run.id),
            )
            self._event(
                c, "stage_finished", run.unit, run.id,
                {"stage": run.stage.value, "status": status.value, "reason": outcome.reason,
                 "rewind_to": rewind.value if rewind else None, **outcome.event_data},
            )
        fault_point("finish:after_commit")
        self._publish(run.unit, tag, files)
        if run.stage is Stage.GATE and outcome.passed:
            from fyan.lakepackage.package import add_unit_module

            unit = self.store.unit(run.unit)
            assert unit is not None
            with self._sync_lock:  # two gates passing at once would append to the root module together
                add_unit_module(self.project, unit)
        return run.model_copy(
            update=dict(
                status=status, finished_at=now, exit_status=exit_status, reason=outcome.reason,
                failure_kind=None if outcome.passed else outcome.failure_kind, rewind_to=rewind,
            )
        )

    def _check(self, run: StageRun, unit: UnitRecord, attempt_dir: Path,
               evidence: Mapping[str, Any] | None = None) -> CheckOutcome:
        missing = [rel for rel in stage_spec(run.stage).outputs if not (attempt_dir / rel).is_file()]
        if missing:
            return CheckOutcome(passed=False, reason=f"attempt left no {', '.join(missing)}")
        special = [rel for rel in stage_spec(run.stage).outputs if not safefile.is_regular(attempt_dir / rel)]
        if special:  # a link (even to a regular file) is not read: it could point at another unit's or Fyan's files
            return CheckOutcome(passed=False, reason=f"attempt left {', '.join(special)} as something other than a "
                                                     "regular file (a link, FIFO or device is never read)")
        check = self.checks.get(run.stage)
        if check is None:
            return CheckOutcome(passed=False, reason=f"no deterministic check is configured for {run.stage.value}")
        try:
            return check(CheckContext(self.project, self.store, unit, run, attempt_dir, evidence or {}))
        except Exception as e:  # fail closed: a crashing check never passes
            return CheckOutcome(passed=False, reason=f"{run.stage.value} check failed with {type(e).__name__}: {e}")

    def reopen(self, unit_id: str, reason: str, attempts_per_stage: int, evidence: Mapping[str, Any] | None = None
               ) -> StageRun:
        """Reopen a unit complete by Fyan's gate whose completion no longer reproduces (``fyan
        upgrade``: the gate re-run on another Mathlib tag and toolchain failed): a failed gate
        run is recorded after its last success, with ``reason``, rewinding to the prove stage,
        so the unit leaves the project's package and is proved again; its frozen statement and
        every earlier artifact stay. Raises ``TransitionError`` for a unit that is not complete,
        is complete by adoption, or has a run in progress."""
        with self._finishing(), self._tx() as c:
            if c.execute("SELECT 1 FROM units WHERE id = ?", (unit_id,)).fetchone() is None:
                raise TransitionError(f"unknown unit {unit_id!r}")
            own = self._progress_many(c, [unit_id], attempts_per_stage)[unit_id]
            if own.running is not None:
                raise TransitionError(f"{unit_id}: {own.running.stage.value} is running (run {own.running.id})")
            if own.adopted or not own.complete:
                raise TransitionError(f"{unit_id}: only a unit complete by Fyan's gate can be reopened")
            run = self._open_run(c, unit_id, Stage.GATE, "stage_started", {"reopen": True})
            now = time.time()
            c.execute("UPDATE stage_runs SET status = ?, finished_at = ?, exit_status = ?, reason = ?, "
                      "failure_kind = ?, rewind_to = ? WHERE id = ?",
                      (RunStatus.FAILED.value, now, 0, reason, FailureKind.CHECK.value, Stage.PROVE.value, run.id))
            self._event(c, "unit_reopened", unit_id, run.id, {"reason": reason, **(evidence or {})})
        return run.model_copy(update=dict(status=RunStatus.FAILED, finished_at=now, reason=reason,
                                          failure_kind=FailureKind.CHECK, rewind_to=Stage.PROVE))

    def record_lean_peak(self, unit: str, kind: str, peak_mb: int) -> None:
        """Record that a Lean process of ``kind`` (``build``, ``inspector``, ``kernel_replay``…)
        for ``unit`` peaked at ``peak_mb`` MiB of resident memory; the largest is kept
        (``fyan.sandbox.admission`` charges it to the next such process)."""
        with self._tx() as c:
            c.execute(
                "INSERT INTO lean_peaks (unit, kind, peak_mb, updated_at) VALUES (?,?,?,?) ON CONFLICT (unit, kind) "
                "DO UPDATE SET peak_mb = MAX(peak_mb, excluded.peak_mb), updated_at = excluded.updated_at",
                (unit, kind, int(peak_mb), time.time()),
            )

    def record_model_call(
        self, run: StageRun | None, *, stage: str, provider: str, model: str, request_key: str,
        tokens_in: int, tokens_out: int, cost: float, latency_s: float, cache_hit: bool, replay: bool,
        unit: str | None = None,
    ) -> None:
        """Persist one model call (tokens, cost in USD, latency in seconds). ``unit`` names the
        unit of a call made outside a stage attempt (Specifier, post-completion tasks, a critic
        review; ``run`` None)."""
        with self._tx() as c:
            c.execute(
                "INSERT INTO model_calls (run_id, unit, stage, provider, model, request_key, tokens_in, "
                "tokens_out, cost, latency_s, cache_hit, replay, ts) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)",
                (run.id if run else None, run.unit if run else unit, stage, provider, model, request_key,
                 tokens_in, tokens_out, cost, latency_s, int(cache_hit), int(replay), time.time()),
            )

    def record_model_calls(self, run: StageRun, calls: list[Mapping[str, Any]]) -> None:
        """Persist the model calls an attempt made elsewhere (``fyan.executor``: a worker returns
        them with its result), in one transaction; each mapping has ``record_model_call``'s
        keyword arguments."""
        if not calls:
            return
        now = time.time()
        with self._tx() as c:
            c.executemany(
                "INSERT INTO model_calls (run_id, unit, stage, provider, model, request_key, tokens_in, "
                "tokens_out, cost, latency_s, cache_hit, replay, ts) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)",
                [(run.id, k.get("unit") or run.unit, k["stage"], k["provider"], k["model"], k["request_key"],
                  k["tokens_in"], k["tokens_out"], k["cost"], k["latency_s"], int(k["cache_hit"]), int(k["replay"]),
                  k.get("ts") or now) for k in calls],
            )

    # -- recovery --------------------------------------------------------------------------
    def recover(self, *, sync_package: bool = True) -> list[StageRun]:
        """Bring disk and store back into agreement after a crash; call with the run lock held.

        Marks runs left ``running`` as ``interrupted`` (returned, so they can be re-run),
        publishes staged files whose hash the store records as current, deletes other staged
        files, and re-derives the Lean package (unless ``sync_package`` is False: then the
        caller must call ``sync_lean_package`` before any build).
        """
        with self._tx() as c:
            rows = c.execute("SELECT * FROM stage_runs WHERE status = ?", (RunStatus.RUNNING.value,)).fetchall()
            interrupted = [run_from_row(r) for r in rows]
            for r in interrupted:
                c.execute(
                    "UPDATE stage_runs SET status = ?, finished_at = ?, reason = ? WHERE id = ?",
                    (RunStatus.INTERRUPTED.value, time.time(), "interrupted: the process stopped during the attempt", r.id),
                )
                self._event(c, "stage_interrupted", r.unit, r.id, {"stage": r.stage.value})
            # a post-completion task (Curator, Auditor) cut off by the crash is simply run again
            c.execute("UPDATE post_runs SET status = ?, finished_at = ?, reason = ? WHERE status = ?",
                      (RunStatus.INTERRUPTED.value, time.time(), "interrupted: the process stopped during the task",
                       RunStatus.RUNNING.value))
        current: dict[tuple[str, str], str] | None = None
        self._forget_dirs()
        if self.paths.units.is_dir():
            for staging_root in self.paths.units.glob("*/.staging"):
                unit = staging_root.parent.name
                for f in sorted(staging_root.iterdir(), key=lambda p: p.name):
                    parsed = self._parse_staged(f.name) if f.is_file() else None
                    if parsed is not None and current is None:
                        current = {(a.unit, a.kind): a.sha256 for a in self.store.artifacts()}
                    if parsed is not None and current.get((unit, parsed[1])) == sha256_file(f):
                        dest = self.paths.unit(unit) / parsed[1]
                        dest.parent.mkdir(parents=True, exist_ok=True)
                        os.replace(f, dest)
                shutil.rmtree(staging_root, ignore_errors=True)
        ingest_staging = self.paths.units / INGEST_STAGING
        if ingest_staging.is_dir():  # killed between the ingest's commit and its last rename
            current = {(a.unit, a.kind): a.sha256 for a in self.store.artifacts()}
            for f in sorted(ingest_staging.iterdir(), key=lambda p: p.name):
                unit, sep, rel = f.name.partition("+")
                unit, rel = unquote(unit), unquote(rel)
                if sep and f.is_file() and current.get((unit, rel)) == sha256_file(f):
                    dest = self.paths.unit(unit) / rel
                    dest.parent.mkdir(parents=True, exist_ok=True)
                    os.replace(f, dest)
            shutil.rmtree(ingest_staging, ignore_errors=True)
        skills_staging = self.paths.skills / ".staging"
        if skills_staging.is_dir():
            recorded = {a.path: a.sha256 for a in self.store.artifacts() if a.kind.startswith("skill:")}
            for f in sorted(p for p in skills_staging.rglob("*") if p.is_file()):
                rel = "/".join(f.relative_to(skills_staging).parts[1:])
                if recorded.get(f"skills/{rel}") == sha256_file(f):
                    os.replace(f, self.paths.skills / rel)
            shutil.rmtree(skills_staging, ignore_errors=True)
        if sync_package:
            self._sync_lean_package()
        return [r.model_copy(update={"status": RunStatus.INTERRUPTED}) for r in interrupted]

    # -- post-completion tasks (Curator, Auditor) --------------------------------------------
    def begin_post(self, unit_id: str, task: str) -> PostRun:
        """Start ``task`` (a ``PostTaskSpec`` of ``fyan.stages``) for the complete unit ``unit_id``.

        Raises ``TransitionError`` when the unit is not complete, or the task already ran or is
        running for the unit's current completion (its latest successful gate run).
        """
        if task not in post_task_names():
            raise TransitionError(f"unknown post-completion task {task!r}; known: {', '.join(post_task_names())}")
        with self._tx() as c:
            if not self._progress_many(c, [unit_id], 1)[unit_id].complete:
                raise TransitionError(f"{unit_id}: {task} runs only after the completion gate passed")
            gate = c.execute("SELECT MAX(id) FROM stage_runs WHERE unit = ? AND stage = ? AND status = ?",
                             (unit_id, Stage.GATE.value, RunStatus.SUCCEEDED.value)).fetchone()[0]
            done = c.execute("SELECT status FROM post_runs WHERE unit = ? AND task = ? AND gate_run_id = ? AND status IN (?, ?)",
                             (unit_id, task, gate, RunStatus.RUNNING.value, RunStatus.SUCCEEDED.value)).fetchone()
            if done is not None:
                raise TransitionError(f"{unit_id}: {task} is already {done[0]} for this completion")
            now = time.time()
            cur = c.execute("INSERT INTO post_runs (unit, task, gate_run_id, status, started_at, attempt_dir) VALUES (?,?,?,?,?,?)",
                            (unit_id, task, gate, RunStatus.RUNNING.value, now, ""))
            run_id = cur.lastrowid
            attempt_dir = f".fyan/attempts/{unit_id}/post-{run_id:06d}-{task}"
            c.execute("UPDATE post_runs SET attempt_dir = ? WHERE id = ?", (attempt_dir, run_id))
            self._event(c, "post_started", unit_id, None, {"task": task, "post_run": run_id})
        (self.paths.root / attempt_dir).mkdir(parents=True, exist_ok=True)
        return PostRun(id=run_id, unit=unit_id, task=task, gate_run_id=gate, status=RunStatus.RUNNING,
                       started_at=now, attempt_dir=attempt_dir)

    def finish_post(self, run: PostRun, check: PostCheck | None, *, agent_error: str | None = None) -> PostRun:
        """Close a post-completion run: its check decides what is published (crash-safe, like
        ``finish``); a failing or crashing check publishes nothing. Never touches stage state."""
        attempt_dir = self.paths.root / run.attempt_dir
        unit = self.store.unit(run.unit)
        assert unit is not None
        if agent_error is not None:
            outcome = PostOutcome(False, agent_error)
        elif check is None:
            outcome = PostOutcome(False, f"no deterministic check is configured for {run.task}")
        else:
            try:
                outcome = check(PostContext(self.project, self.store, unit, run, attempt_dir))
            except Exception as e:  # fail closed
                outcome = PostOutcome(False, f"{run.task} check failed with {type(e).__name__}: {e}")
        unit_files = outcome.unit_files if outcome.passed else {}
        skill_files = outcome.skill_files if outcome.passed else {}
        tag = f"post-{run.id}"
        self._stage_files(run.unit, tag, unit_files)
        skills_staging = self.paths.skills / ".staging" / tag
        for rel, data in skill_files.items():
            target = skills_staging / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            with open(target, "wb") as fh:
                fh.write(data)
                fh.flush()
                os.fsync(fh.fileno())
        status = RunStatus.SUCCEEDED if outcome.passed else RunStatus.FAILED
        with self._tx() as c:
            row = c.execute("SELECT status FROM post_runs WHERE id = ?", (run.id,)).fetchone()
            if row is None or row["status"] != RunStatus.RUNNING.value:
                raise TransitionError(f"post run {run.id} of {run.unit} is not running")
            self._insert_artifacts(c, run.unit, None, unit_files, ())
            now = time.time()
            for rel, data in skill_files.items():
                c.execute(
                    "INSERT INTO artifacts (unit, run_id, kind, path, sha256, frozen, created_at) VALUES (?,?,?,?,?,?,?)",
                    (run.unit, None, f"skill:{rel}", f"skills/{rel}", sha256_bytes(data), 0, now),
                )
            c.execute("UPDATE post_runs SET status = ?, finished_at = ?, reason = ? WHERE id = ?",
                      (status.value, now, outcome.reason, run.id))
            self._event(c, "post_finished", run.unit, None, {"task": run.task, "post_run": run.id,
                                                             "status": status.value, "reason": outcome.reason})
        self._publish(run.unit, tag, unit_files)
        if skills_staging.is_dir():
            for src in sorted(p for p in skills_staging.rglob("*") if p.is_file()):
                dest = self.paths.skills / src.relative_to(skills_staging)
                dest.parent.mkdir(parents=True, exist_ok=True)
                os.replace(src, dest)
            shutil.rmtree(skills_staging, ignore_errors=True)
            try:
                skills_staging.parent.rmdir()  # skills/.staging, when no other task is staged
            except OSError:
                pass
        return run.model_copy(update=dict(status=status, finished_at=now, reason=outcome.reason))

    def _sync_lean_package(self) -> None:
        """Re-derive ``lean/`` from the complete units; serialised, since two gate successes
        finishing at once would otherwise write the same files concurrently."""
        from fyan.lakepackage.package import sync_package

        with self._sync_lock:
            sync_package(self.project, self.store)

    def sync_lean_package(self, complete: list[UnitRecord]) -> None:
        """Make ``lean/`` hold exactly the units in ``complete`` (the caller derived them from
        this store, e.g. the orchestrator's ledger right after ``recover``)."""
        from fyan.lakepackage.package import sync_package

        with self._sync_lock:
            sync_package(self.project, self.store, complete=complete)
