"""``fyan audit <project> <unit>``: the unit's evidence record as code graded it.

Reads ``units/<unit>/audit/result.json`` (the gateway's verdict) and ``record.json``, the
unit's active freezes, and checks staleness (``fyan.audit.unit.staleness``). Nothing is
recomputed by a model; nothing is written.
"""

from __future__ import annotations

from io import StringIO
from typing import Any

from fyan.audit.decide import RECORD, RESULT
from fyan.audit.record import AuditResult, EvidenceRecord
from fyan.audit.unit import staleness
from fyan.project import Project
from fyan.state.models import UnitRecord
from fyan.state.store import Store


def audit_report(project: Project, store: Store, unit: UnitRecord) -> tuple[bool, dict[str, Any], str]:
    """(certified and current, JSON payload, text). ``certified``: the audit froze the
    statement (grade ≥ threshold, or a bridge) and no frozen input changed since."""
    folder = project.paths.unit(unit.id)
    path = folder / RESULT
    if not path.is_file():
        missing = {"unit": unit.id, "audited": False, "reason": "no audit result yet"}
        return False, missing, f"{unit.id}: not audited yet (no units/{unit.id}/{RESULT})"
    result = AuditResult.model_validate_json(path.read_text(encoding="utf-8"))
    record = None
    if (folder / RECORD).is_file():
        try:
            record = EvidenceRecord.model_validate_json((folder / RECORD).read_text(encoding="utf-8"))
        except ValueError:
            record = None
    freezes = store.freezes(unit.id)
    stale = staleness(project, store, unit, freezes) if freezes else []
    certified = result.valid and result.routing in ("freeze", "bridge") and bool(freezes) and not stale
    status = ("stale" if stale else "certified") if result.routing in ("freeze", "bridge") and freezes else (
        "not certified")
    payload: dict[str, Any] = {
        "unit": unit.id, "audited": True, "status": status, "grade": result.grade, "threshold": result.threshold,
        "routing": result.routing, "valid": result.valid, "errors": result.errors, "root": result.root,
        "items": [it.model_dump() for it in result.items], "repairs": result.repairs,
        "slots": [s.model_dump() for s in result.slots],
        "transfer": result.transfer.model_dump() if result.transfer else None,
        "bridge": ({"name": result.bridge.name, "lean": result.bridge.lean, "grade": result.bridge.result.grade,
                    "routing": result.bridge.result.routing} if result.bridge else None),
        "frozen": [{"decl": f.decl, "role": f.role, "signature": f.normalized_signature} for f in freezes],
        "stale": stale, "reused_from": result.reused_from,
        "summary": record.summary if record else "",
    }
    return certified, payload, _text(unit.id, result, payload)


def _text(unit_id: str, result: AuditResult, payload: dict[str, Any]) -> str:
    from rich.table import Table

    from fyan.terminal import console as literal_console
    from fyan.terminal import terminal_width

    texts = {s.id: s.text for s in result.slots}
    buf = StringIO()
    # slot texts quote the document (``x ∈ [0, 1]``): printed literally, never as markup
    console = literal_console(buf, terminal_width(110, 150), force_terminal=False)
    console.print(f"Semantic audit of {unit_id}: root {result.root}")
    if result.slots:
        st = Table(title="slots (cut by code)")
        for col in ("slot", "kind", "polarity", "text"):
            st.add_column(col, overflow="fold")
        for s in result.slots:
            st.add_row(s.id, s.kind, s.polarity, s.text + ("  ⚠ " + "; ".join(s.findings) if s.findings else ""))
        console.print(st)
    if result.items:
        t = Table(title="evidence record, as graded")
        for col in ("row", "slots", "relation", "polarity", "grade", "evidence"):
            t.add_column(col, overflow="fold")
        for it in result.items:
            slots = " ~ ".join(
                ", ".join(f"{x} `{texts.get(x, '?')}`" for x in side) or "(omitted)" for side in (it.source, it.candidate)
            ) if it.row is not None else "transfer"
            evidence = "; ".join(x for x in (it.evidence, it.note) if x)
            mark = "" if it.admissible else " (inadmissible)"
            t.add_row(str(it.row or "-"), slots, it.relation + mark, it.polarity or "-", str(it.grade), evidence)
        console.print(t)
    if not result.valid:
        console.print("record REJECTED by the validator:")
        for e in result.errors:
            console.print(f"  - {e}")
    grade = "-" if result.grade is None else str(result.grade)
    console.print(f"grade {grade} (threshold {result.threshold}); routing: {result.routing}; status: {payload['status']}")
    if result.transfer is not None:
        console.print(f"transfer: {'composed' if result.transfer.ok else 'REFUSED'} ({len(result.transfer.recipes)} step(s))"
                      + "".join(f"\n  - {r}" for r in result.transfer.refusals))
    if result.bridge is not None:
        console.print(f"bridge obligation {result.bridge.name} (S0 audit grade {result.bridge.result.grade}, "
                      f"{result.bridge.result.routing}):\n  {result.bridge.lean}")
    for r in result.repairs:
        console.print(f"  repair: {r}")
    for f in payload["frozen"]:
        console.print(f"  frozen ({f['role']}): {f['signature']}")
    for s in payload["stale"]:
        console.print(f"  STALE: {s}")
    if result.reused_from:
        console.print(f"  (verdict of attempt {result.reused_from} on the same inputs: a valid record is not resampled)")
    return buf.getvalue().rstrip()
