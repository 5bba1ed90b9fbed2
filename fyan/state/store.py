"""The state store, read side: SQLite (stdlib ``sqlite3``, WAL) at ``.fyan/state.db``.

Everything here opens the database **read-only** (``mode=ro``): a write through a ``Store``
fails inside SQLite. The schema is created and every row is written by
``fyan.state.gateway.Gateway``, the only writer. Keeping all reads behind
this small class is what lets a server database replace SQLite later.
"""

from __future__ import annotations

import json
import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from fyan.errors import ProjectError
from fyan.state.lifecycle import unit_views
from fyan.state.models import (
    AdoptionRecord,
    ArtifactRecord,
    DependencyRecord,
    EventRecord,
    FreezeRecord,
    ModelCallRecord,
    PostRun,
    Stage,
    StageRun,
    UnitRecord,
    UnitView,
)

SCHEMA_VERSION = 1

SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS units (
    id TEXT PRIMARY KEY, ord INTEGER NOT NULL, kind TEXT NOT NULL, label TEXT, title TEXT,
    module TEXT NOT NULL UNIQUE, layer INTEGER NOT NULL, statements TEXT NOT NULL,
    provenance TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS unit_deps (
    unit TEXT NOT NULL REFERENCES units(id), depends_on TEXT NOT NULL REFERENCES units(id),
    origin TEXT NOT NULL, in_proof INTEGER NOT NULL, evidence TEXT NOT NULL,
    PRIMARY KEY (unit, depends_on, origin)
);
CREATE TABLE IF NOT EXISTS stage_runs (
    id INTEGER PRIMARY KEY, unit TEXT NOT NULL REFERENCES units(id), stage TEXT NOT NULL,
    attempt INTEGER NOT NULL, status TEXT NOT NULL, started_at REAL NOT NULL,
    finished_at REAL, exit_status INTEGER, reason TEXT, failure_kind TEXT, rewind_to TEXT,
    attempt_dir TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS stage_runs_unit ON stage_runs(unit, id);
CREATE TABLE IF NOT EXISTS artifacts (
    id INTEGER PRIMARY KEY, unit TEXT NOT NULL REFERENCES units(id), run_id INTEGER,
    kind TEXT NOT NULL, path TEXT NOT NULL, sha256 TEXT NOT NULL, frozen INTEGER NOT NULL,
    created_at REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS artifacts_unit ON artifacts(unit, kind, id);
CREATE TABLE IF NOT EXISTS freezes (
    id INTEGER PRIMARY KEY, unit TEXT NOT NULL REFERENCES units(id), run_id INTEGER NOT NULL,
    decl TEXT NOT NULL, role TEXT NOT NULL, normalized_signature TEXT NOT NULL,
    signature_hash TEXT NOT NULL, type_hash TEXT, bound_inputs TEXT NOT NULL,
    created_at REAL NOT NULL, active INTEGER NOT NULL DEFAULT 1
);
CREATE TABLE IF NOT EXISTS events (
    id INTEGER PRIMARY KEY, ts REAL NOT NULL, kind TEXT NOT NULL, unit TEXT, run_id INTEGER,
    data TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS events_kind ON events(kind, unit);
CREATE INDEX IF NOT EXISTS events_unit ON events(unit, id);
CREATE TABLE IF NOT EXISTS model_calls (
    id INTEGER PRIMARY KEY, run_id INTEGER, unit TEXT, stage TEXT NOT NULL,
    provider TEXT NOT NULL, model TEXT NOT NULL, request_key TEXT NOT NULL,
    tokens_in INTEGER NOT NULL, tokens_out INTEGER NOT NULL, cost REAL NOT NULL,
    latency_s REAL NOT NULL, cache_hit INTEGER NOT NULL, replay INTEGER NOT NULL, ts REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS adoptions (
    unit TEXT PRIMARY KEY REFERENCES units(id), outcome TEXT NOT NULL, package TEXT NOT NULL,
    reason TEXT NOT NULL, evidence TEXT NOT NULL, created_at REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS lean_peaks (
    unit TEXT NOT NULL, kind TEXT NOT NULL, peak_mb INTEGER NOT NULL, updated_at REAL NOT NULL,
    PRIMARY KEY (unit, kind)
);
CREATE TABLE IF NOT EXISTS post_runs (
    id INTEGER PRIMARY KEY, unit TEXT NOT NULL REFERENCES units(id), task TEXT NOT NULL,
    gate_run_id INTEGER NOT NULL, status TEXT NOT NULL, started_at REAL NOT NULL,
    finished_at REAL, reason TEXT, attempt_dir TEXT NOT NULL
);
"""


#: a writer restarts the write-ahead log after this many commits (see ``immediate_transaction``)
CHECKPOINT_EVERY = 500
_commits: dict[int, int] = {}


@contextmanager
def immediate_transaction(conn: sqlite3.Connection, lock: Any) -> Iterator[sqlite3.Connection]:
    """``BEGIN IMMEDIATE`` … ``COMMIT`` on ``conn`` (``ROLLBACK`` on any exception), holding
    ``lock`` (the writer's lock over its one connection). For the state's writers only: the
    gateway (the project's store) and ``fyan.state.replica`` (a worker's copy).

    Every ``CHECKPOINT_EVERY`` commits the writer checkpoints the write-ahead log and restarts
    it (``PRAGMA wal_checkpoint(RESTART)``, waiting for the readers of the moment): with readers
    always busy, SQLite's automatic passive checkpoints never get to reset the log, which then
    grows without bound and makes every read and write slower as the project grows (dispatch
    cost must stay flat in the project's size)."""
    with lock:
        conn.execute("BEGIN IMMEDIATE")
        try:
            yield conn
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        conn.execute("COMMIT")
        n = _commits.get(id(conn), 0) + 1
        _commits[id(conn)] = n
        if n % CHECKPOINT_EVERY == 0:
            conn.execute("PRAGMA wal_checkpoint(RESTART)")


def open_readonly(db: Path) -> sqlite3.Connection:
    """A read-only connection to ``db`` (raises ``sqlite3.OperationalError`` on any write)."""
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True, check_same_thread=False, timeout=30)
    conn.row_factory = sqlite3.Row
    return conn


def run_from_row(row: sqlite3.Row) -> StageRun:
    """The ``StageRun`` of a ``stage_runs`` row. Raises ``ProjectError`` for a stage no installed
    stage module declares (a store written with a stage added by a package that is not
    installed here): its lifecycle cannot be read without that stage."""
    try:
        return StageRun(**dict(row))
    except ValidationError:
        if row["stage"] not in {s.value for s in Stage}:
            raise ProjectError(
                f"the state store records stage {row['stage']!r}, which no installed stage module declares "
                f"(known: {', '.join(s.value for s in Stage)})",
                hint="install the package that adds it (its fyan.stages entry point), or use the Fyan that wrote "
                     "the project") from None
        raise


class Store:
    """Read-only view of a project's state database."""

    def __init__(self, db: Path) -> None:
        self.db = db
        self._local = threading.local()

    @property
    def exists(self) -> bool:
        return self.db.is_file()

    def _conn(self) -> sqlite3.Connection:
        conn = getattr(self._local, "conn", None)
        if conn is None:
            if not self.db.is_file():
                raise ProjectError(
                    f"{self.db}: the project has no state yet", hint="run `fyan run <project>` first"
                )
            conn = open_readonly(self.db)
            self._local.conn = conn
        return conn

    def _rows(self, sql: str, args: tuple[Any, ...] = ()) -> list[sqlite3.Row]:
        return self._conn().execute(sql, args).fetchall()

    def close(self) -> None:
        conn = getattr(self._local, "conn", None)
        if conn is not None:
            conn.close()
            self._local.conn = None

    # -- reads -----------------------------------------------------------------------------
    def meta(self, key: str) -> str | None:
        rows = self._rows("SELECT value FROM meta WHERE key = ?", (key,))
        return rows[0]["value"] if rows else None

    def has_units(self) -> bool:
        """Whether any unit is recorded (one indexed row read, not the units' records)."""
        return bool(self._rows("SELECT 1 FROM units LIMIT 1"))

    def units(self) -> list[UnitRecord]:
        rows = self._rows("SELECT * FROM units ORDER BY ord")
        return [
            UnitRecord(
                id=r["id"], order=r["ord"], kind=r["kind"], label=r["label"], title=r["title"],
                module=r["module"], layer=r["layer"], statements=json.loads(r["statements"]),
                provenance=r["provenance"],
            )
            for r in rows
        ]

    def unit(self, unit_id: str) -> UnitRecord | None:
        rows = self._rows("SELECT * FROM units WHERE id = ?", (unit_id,))
        if not rows:
            return None
        r = rows[0]
        return UnitRecord(
            id=r["id"], order=r["ord"], kind=r["kind"], label=r["label"], title=r["title"], module=r["module"],
            layer=r["layer"], statements=json.loads(r["statements"]), provenance=r["provenance"],
        )

    def deps(self, unit: str | None = None) -> list[DependencyRecord]:
        sql = "SELECT * FROM unit_deps" + (" WHERE unit = ?" if unit else "") + " ORDER BY unit, depends_on"
        return [
            DependencyRecord(**{**dict(r), "in_proof": bool(r["in_proof"])})
            for r in self._rows(sql, (unit,) if unit else ())
        ]

    def runs(self, unit: str | None = None) -> list[StageRun]:
        if unit is None:
            return [run_from_row(r) for r in self._rows("SELECT * FROM stage_runs ORDER BY id")]
        return [run_from_row(r) for r in self._rows("SELECT * FROM stage_runs WHERE unit = ? ORDER BY id", (unit,))]

    def run(self, run_id: int) -> StageRun | None:
        rows = self._rows("SELECT * FROM stage_runs WHERE id = ?", (run_id,))
        return run_from_row(rows[0]) if rows else None

    def artifacts(self, unit: str | None = None, *, current: bool = True, kind: str | None = None) -> list[ArtifactRecord]:
        """Artifacts of ``unit`` (all units when None; only of ``kind`` when given); with
        ``current`` only the latest version of each (unit, kind)."""
        conds = (["unit = ?"] if unit else []) + (["kind = ?"] if kind else [])
        where = ("WHERE " + " AND ".join(conds)) if conds else ""
        args: tuple[Any, ...] = tuple(x for x in (unit, kind) if x)
        if current:
            sql = (
                f"SELECT * FROM artifacts WHERE id IN (SELECT MAX(id) FROM artifacts {where} "
                "GROUP BY unit, kind) ORDER BY unit, kind"
            )
        else:
            sql = f"SELECT * FROM artifacts {where} ORDER BY id"
        return [ArtifactRecord(**{**dict(r), "frozen": bool(r["frozen"])}) for r in self._rows(sql, args)]

    def artifact(self, unit: str, kind: str) -> ArtifactRecord | None:
        rows = self._rows(
            "SELECT * FROM artifacts WHERE unit = ? AND kind = ? ORDER BY id DESC LIMIT 1", (unit, kind)
        )
        return ArtifactRecord(**{**dict(rows[0]), "frozen": bool(rows[0]["frozen"])}) if rows else None

    def freezes(self, unit: str, *, active_only: bool = True) -> list[FreezeRecord]:
        sql = "SELECT * FROM freezes WHERE unit = ?" + (" AND active = 1" if active_only else "") + " ORDER BY id"
        return [
            FreezeRecord(**{**dict(r), "bound_inputs": json.loads(r["bound_inputs"]), "active": bool(r["active"])})
            for r in self._rows(sql, (unit,))
        ]

    def events(
        self, unit: str | None = None, *, after_id: int = 0, limit: int = 1000, kind: str | None = None
    ) -> list[EventRecord]:
        sql = ("SELECT * FROM events WHERE id > ?" + (" AND unit = ?" if unit else "") + (" AND kind = ?" if kind else "")
               + " ORDER BY id LIMIT ?")
        args: tuple[Any, ...] = (after_id, *([unit] if unit else []), *([kind] if kind else []), limit)
        return [EventRecord(**{**dict(r), "data": json.loads(r["data"])}) for r in self._rows(sql, args)]

    def refuted_lemmas_by_unit(self) -> dict[str, int]:
        """Unit id → planned lemmas refuted for it: the Formalizer's ``lemma_false`` verdicts
        whose evidence Fyan's check accepted (``fyan.replan.check``; event ``stage_finished`` with
        ``replan.kind``), over the unit's whole history (``fyan status``: ``refuted_lemmas``)."""
        sql = ("SELECT unit, COUNT(*) AS n FROM events WHERE kind = 'stage_finished' "
               "AND json_extract(data, '$.replan.kind') = 'lemma_false' GROUP BY unit")
        return {r["unit"]: int(r["n"]) for r in self._rows(sql)}

    def last_event_id(self) -> int:
        """Id of the newest event (0 when none): every recorded transition adds one, so it
        changes whenever the state does (the dashboard polls it)."""
        rows = self._rows("SELECT MAX(id) AS m FROM events")
        return int(rows[0]["m"] or 0) if rows else 0

    def model_calls(self, unit: str | None = None) -> list[ModelCallRecord]:
        sql = "SELECT * FROM model_calls" + (" WHERE unit = ?" if unit else "") + " ORDER BY id"
        return [
            ModelCallRecord(**{**dict(r), "cache_hit": bool(r["cache_hit"]), "replay": bool(r["replay"])})
            for r in self._rows(sql, (unit,) if unit else ())
        ]

    def post_runs(self, unit: str | None = None) -> list[PostRun]:
        """Post-completion task runs (Curator, Auditor) of ``unit`` (all when None), oldest first.
        Empty for a database written before the table existed (until the gateway opens it)."""
        sql = "SELECT * FROM post_runs" + (" WHERE unit = ?" if unit else "") + " ORDER BY id"
        try:
            return [PostRun(**dict(r)) for r in self._rows(sql, (unit,) if unit else ())]
        except sqlite3.OperationalError:
            return []

    def adoptions(self) -> dict[str, AdoptionRecord]:
        """Unit id -> its adoption decision (``fyan.adopt``); empty when nothing was adopted or
        the database predates the table."""
        try:
            rows = self._rows("SELECT * FROM adoptions ORDER BY unit")
        except sqlite3.OperationalError:
            return {}
        return {r["unit"]: AdoptionRecord(**{**dict(r), "evidence": json.loads(r["evidence"])}) for r in rows}

    def adopted(self) -> set[str]:
        """Ids of the units complete by adoption (outcome ``adopted``)."""
        try:
            return {r["unit"] for r in self._rows("SELECT unit FROM adoptions WHERE outcome = 'adopted'")}
        except sqlite3.OperationalError:
            return set()

    def session_start(self) -> float:
        """When the current run session began (POSIX seconds; 0 before the first run)."""
        value = self.meta("session_started")
        return float(value) if value else 0.0

    def session_scoped(self) -> dict[str, float]:
        """Unit id -> start of a later run session restricted to some units (``fyan run
        --unit``), POSIX seconds; empty after a session that covered every unit."""
        value = self.meta("session_scoped")
        try:
            return {str(k): float(v) for k, v in json.loads(value).items()} if value else {}
        except (ValueError, AttributeError):
            return {}

    def budget_resets(self) -> dict[str, int]:
        """Unit id -> the last run id before the latest human guidance (``lifecycle.progress``'s
        ``reset_after``): failures up to it no longer count against the attempt budget."""
        rows = self._rows(
            "SELECT unit, MAX(CAST(json_extract(data, '$.after_run') AS INTEGER)) AS after FROM events "
            "WHERE kind = 'guidance' AND json_extract(data, '$.source') = 'human' AND unit IS NOT NULL GROUP BY unit"
        )
        return {r["unit"]: int(r["after"] or 0) for r in rows}

    def export_unit(self, unit: str, *, history: bool) -> dict[str, list[dict[str, Any]]]:
        """One unit's rows as plain data, table → rows (column → value), for a worker's copy of
        the state (``fyan.executor.mirror``): its ``units`` row, its dependency edges, its active
        freezes and current artifacts; with ``history`` also its stage runs and its guidance
        events (what a stage attempt of the unit reads), without only what an upstream unit
        must show (its interface)."""
        q = self._rows
        out: dict[str, list[dict[str, Any]]] = {
            "units": [dict(r) for r in q("SELECT * FROM units WHERE id = ?", (unit,))],
            "unit_deps": [dict(r) for r in q("SELECT * FROM unit_deps WHERE unit = ?", (unit,))],
            "freezes": [dict(r) for r in q("SELECT * FROM freezes WHERE unit = ? AND active = 1", (unit,))],
            "artifacts": [dict(r) for r in q(
                "SELECT * FROM artifacts WHERE id IN (SELECT MAX(id) FROM artifacts WHERE unit = ? GROUP BY kind)",
                (unit,))],
        }
        try:  # complete by adoption: a worker must see it to start a dependent's stage
            out["adoptions"] = [dict(r) for r in q("SELECT * FROM adoptions WHERE unit = ?", (unit,))]
        except sqlite3.OperationalError:
            pass
        if history:
            out["stage_runs"] = [dict(r) for r in q("SELECT * FROM stage_runs WHERE unit = ? ORDER BY id", (unit,))]
            out["events"] = [dict(r) for r in q(
                "SELECT * FROM events WHERE unit = ? AND kind IN ('guidance', 'guidance_removed') ORDER BY id", (unit,))]
        return out

    def completion(self, unit: str) -> int | None:
        """Id of ``unit``'s latest successful gate run (its current completion), or None."""
        rows = self._rows("SELECT MAX(id) AS id FROM stage_runs WHERE unit = ? AND stage = 'gate' AND status = 'succeeded'",
                          (unit,))
        return rows[0]["id"] if rows else None

    def adoption_version(self, unit: str) -> int | None:
        """For a unit complete by adoption, a version of its adoption for interface keys
        (``fyan.executor.inputs``): minus the row id of its adoption record (a new adoption gets
        a new one; negative so it never equals a gate run id, and 0 stays "the unit under work");
        None when the unit is not adopted."""
        try:
            rows = self._rows("SELECT rowid FROM adoptions WHERE unit = ? AND outcome = 'adopted'", (unit,))
        except sqlite3.OperationalError:
            return None
        return -int(rows[0][0]) if rows else None

    def lean_peaks(self) -> dict[tuple[str, str], int]:
        """(unit, process kind) → the largest peak resident memory (MiB) recorded for a Lean
        process of that kind for that unit (``fyan.sandbox.admission``)."""
        return {(r["unit"], r["kind"]): r["peak_mb"] for r in self._rows("SELECT unit, kind, peak_mb FROM lean_peaks")}

    def meta_all(self) -> dict[str, str]:
        """Every ``meta`` row (schema version, session start, intake facts)."""
        return {r["key"]: r["value"] for r in self._rows("SELECT key, value FROM meta")}

    def views(self, attempts_per_stage: int) -> dict[str, UnitView]:
        """Every unit with its computed status (see ``fyan.state.lifecycle``)."""
        return unit_views(self.units(), self.deps(), self.runs(), attempts_per_stage, self.session_start(),
                          self.budget_resets(), self.session_scoped(), self.adopted())
