"""Stale units: the source document changed after the units were made from it.

Fyan never re-runs a unit because its source changed (docs/design.md: a changed input makes a
certification stale, it never silently carries over, and nothing is silently redone). It
*reports*: the current ``source/`` is read again in memory (intake → units → ``problem.tex``,
the same code as ``fyan init``; nothing is written) and each unit's statement and source proof
are compared with what was recorded at intake, ignoring the provenance block (moving a
statement to other lines does not make it stale). A unit is stale when its statement or its
proof in the source changed, or it disappeared; a unit depending on a stale unit is stale
through it. Statements that are new in the source are listed too. When the source no longer
reads (a half-saved edit), every unit is reported as possibly stale, with the error.

The daemon records each new finding as a ``source_changed`` event through the gateway and
holds stale units: no new attempt starts for them until the source is restored (their
completed work stays recorded). ``fyan status`` and the dashboard show the same finding.
"""

from __future__ import annotations

import hashlib

from pydantic import BaseModel, Field

from fyan.errors import FyanError
from fyan.project import Project
from fyan.state.store import Store


class Staleness(BaseModel):
    source_sha256: str = Field(description="Digest of the current source files (same recipe as intake)")
    changed: bool = Field(description="The source differs from what the units were made from")
    stale: dict[str, str] = Field(default_factory=dict, description="unit -> why it is stale")
    new_statements: list[str] = Field(default_factory=list)
    error: str | None = None


def source_digest(project: Project, files: list[str]) -> str:
    digest = hashlib.sha256()
    for rel in files:
        path = project.paths.source / rel
        digest.update(rel.encode() + b"\0" + (path.read_bytes() if path.is_file() else b""))
    return digest.hexdigest()


def _body(text: str) -> str:
    from fyan.gates.stages import provenance_block  # here: the gates' modules load late, off the restart path

    block = provenance_block(text) or ""
    return text.replace(block, "").strip()


def recorded_files(store: Store) -> list[str]:
    """The source files intake read (from the recorded catalogue). Only the ``files`` value is
    decoded: it precedes the statements in the catalogue's JSON (``Catalogue`` field order),
    which can be large."""
    import json

    raw = store.meta("catalogue")
    if not raw:
        return []
    at = raw.find('"files":')
    if at >= 0:
        try:
            files, _ = json.JSONDecoder().raw_decode(raw, raw.index("[", at))
            if isinstance(files, list) and all(isinstance(f, str) for f in files):
                return files
        except ValueError:
            pass
    return list(json.loads(raw).get("files", []))


def check(project: Project, store: Store) -> Staleness:
    """Compare the current source with the recorded units (module docstring)."""
    from fyan.specifier.ingest import plan_ingest

    files = recorded_files(store)
    now = source_digest(project, files)
    if now == store.meta("source_sha256"):
        return Staleness(source_sha256=now, changed=False)
    units = store.units()
    deps = store.deps()
    try:
        dag, unit_files, _, _ = plan_ingest(project)
    except FyanError as e:
        return Staleness(source_sha256=now, changed=True, error=e.message,
                         stale={u.id: f"the source no longer reads: {e.message}" for u in units})
    direct: dict[str, str] = {}
    fresh_ids = {u.id for u in dag.units}
    for u in units:
        if u.id not in fresh_ids:
            direct[u.id] = "its statement is no longer in the source"
            continue
        for name, what in (("problem.tex", "statement"), ("source_proof.tex", "proof in the source")):
            path = project.paths.unit(u.id) / name
            old = _body(path.read_text(encoding="utf-8")) if path.is_file() else ""
            new_bytes = unit_files.get(u.id, {}).get(name)
            new = _body(new_bytes.decode("utf-8")) if new_bytes is not None else ""
            if old != new:
                direct[u.id] = f"its {what} changed in the source"
                break
    stale = dict(direct)
    dependents: dict[str, list[str]] = {}
    for d in deps:
        dependents.setdefault(d.depends_on, []).append(d.unit)
    todo = list(direct)
    while todo:
        u = todo.pop()
        for dep in dependents.get(u, []):
            if dep not in stale:
                stale[dep] = f"it depends on {u}, which is stale"
                todo.append(dep)
    known = {u.id for u in units}
    return Staleness(source_sha256=now, changed=True, stale=stale,
                     new_statements=sorted(fresh_ids - known))
