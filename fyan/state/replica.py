"""A node's copy of part of a project's state (``fyan.executor.mirror``), and its only writer.

Where a task runs, the stage agents and the completion gate read the state through an ordinary
read-only ``Store``; the rows they need (the unit's own, its upstream units' interfaces) are put
into a separate SQLite database with the same schema by this module. It is a cache: nothing in
it is ever read by the head, and a crash costs a refetch. The project's own store stays written
by the gateway alone: ``Replica`` refuses a database that belongs to a project
(one whose folder holds a ``fyan.toml``), so it cannot be pointed at the truth by mistake.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from fyan.state.store import SCHEMA, immediate_transaction

#: tables holding one unit's rows, and the column naming the unit
UNIT_TABLES = {"units": "id", "unit_deps": "unit", "freezes": "unit", "artifacts": "unit", "stage_runs": "unit",
               "events": "unit", "adoptions": "unit"}



class ReplicaError(Exception):
    """The replica cannot be written (or is a project's own store)."""


class Replica:
    """Writer of the replica database at ``db`` (``<copy>/.fyan/state.db``). One connection per
    replica and process, kept open (closing the last connection of a WAL database checkpoints
    it); writes of this process's threads are serialised, other processes wait on SQLite's own
    lock."""

    def __init__(self, db: Path) -> None:
        if (db.parent.parent / "fyan.toml").exists():
            raise ReplicaError(f"{db} is a project's own state store: only its gateway writes it")
        self.db = db
        db.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        #: unit -> table -> the rows this writer last put (a table whose rows did not change is
        #: not rewritten)
        self._last: dict[str, dict[str, list[dict[str, Any]]]] = {}
        self._meta: dict[str, str] | None = None
        self._conn = sqlite3.connect(self.db, isolation_level=None, timeout=60, check_same_thread=False)
        self._conn.execute("PRAGMA journal_mode=WAL")
        self._conn.execute("PRAGMA synchronous=OFF")  # a cache: a crash costs a refetch, never the truth
        with self._tx() as c:
            for statement in SCHEMA.split(";"):
                if statement.strip():
                    c.execute(statement)
            c.execute("CREATE TABLE IF NOT EXISTS replica_units (unit TEXT PRIMARY KEY, version INTEGER NOT NULL)")
            c.execute("CREATE INDEX IF NOT EXISTS replica_freezes_unit ON freezes(unit)")

    def close(self) -> None:
        self._conn.close()

    def _tx(self):  # -> context manager of sqlite3.Connection
        return immediate_transaction(self._conn, self._lock)

    def forget(self, unit: str) -> None:
        """Another writer (process) may have changed ``unit``'s rows: rewrite them all next time."""
        with self._lock:
            self._last.pop(unit, None)
            self._meta = None

    def version(self, unit: str) -> int | None:
        """The version of ``unit`` in the replica (0: the rows of a task's own unit), or None."""
        with self._lock:
            row = self._conn.execute("SELECT version FROM replica_units WHERE unit = ?", (unit,)).fetchone()
        return None if row is None else row[0]

    def put_unit(self, unit: str, rows: Mapping[str, list[dict[str, Any]]], version: int,
                 meta: Mapping[str, str] | None = None) -> None:
        """Replace every row of ``unit`` by ``rows`` (table → rows) and record ``version``, in
        one transaction; with ``meta``, replace the ``meta`` table too. Raises
        ``ReplicaError`` for a table that holds no unit rows."""
        unknown = sorted(set(rows) - set(UNIT_TABLES))
        if unknown:
            raise ReplicaError(f"unknown table(s) {unknown} in a unit's rows")
        last = self._last.get(unit, {})
        changed = {t: list(rows.get(t, [])) for t in UNIT_TABLES if last.get(t) != list(rows.get(t, []))}
        with self._tx() as c:
            for table, items in changed.items():
                c.execute(f"DELETE FROM {table} WHERE {UNIT_TABLES[table]} = ?", (unit,))
                if not items:
                    continue
                cols = list(items[0])
                if not all(col.isidentifier() for col in cols):
                    raise ReplicaError(f"bad column name in {table}: {cols}")
                c.executemany(f"INSERT OR REPLACE INTO {table} ({', '.join(cols)}) VALUES ({', '.join('?' * len(cols))})",
                              [[row[k] for k in cols] for row in items])
            c.execute("INSERT OR REPLACE INTO replica_units VALUES (?, ?)", (unit, version))
            new_meta = dict(meta) if meta is not None and dict(meta) != self._meta else None
            if new_meta is not None:
                c.execute("DELETE FROM meta")
                c.executemany("INSERT INTO meta VALUES (?, ?)", list(new_meta.items()))
        self._last[unit] = {**last, **changed}  # only once committed
        if new_meta is not None:
            self._meta = new_meta
