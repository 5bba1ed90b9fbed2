"""Deterministic validation and grading of an evidence record (no model involved).

Checks (each failure is a precise error; any error rejects the record, fail closed):

* the record names the audited root;
* every source quotation occurs literally in ``problem.tex`` (whitespace-insensitive), every
  candidate fragment in the root's Lean header (comments removed): evidence must be quoted,
  not paraphrased;
* there is at least one ``goal`` row;
* ``trivial_equivalent`` names at least one conversion, all from ``CONVERSIONS``;
* every relation other than ``same`` carries an argument that is not placeholder text;
* a row pairs something: it has a source quotation or a candidate fragment.

Grade = minimum of the rows' relation grades (``RELATION_GRADE``), starting at 3. Routing:
grade ≥ threshold → freeze; below → repair (back to the Planner with the rows' repairs);
an invalid record → reject.
"""

from __future__ import annotations

from fyan.audit.record import CONVERSIONS, PLACEHOLDERS, RELATION_GRADE, AuditResult, EvidenceRecord, ItemGrade


def _norm(text: str) -> str:
    return " ".join(text.split())


def validate_record(record: EvidenceRecord, *, problem_text: str, lean_header: str, root: str, threshold: int) -> AuditResult:
    """Validate ``record`` against the statement text and the Lean header; grade and route."""
    errors: list[str] = []
    problem = _norm(problem_text)
    header = _norm(lean_header)
    if _norm(record.root) != _norm(root) and not root.endswith("." + _norm(record.root)):
        errors.append(f"record audits {record.root!r}, the root is {root!r}")
    if not any(r.role == "goal" for r in record.rows):
        errors.append("no goal row: the conclusion was not compared")
    items: list[ItemGrade] = []
    repairs: list[str] = []
    for i, row in enumerate(record.rows, start=1):
        if not row.source and not row.candidate:
            errors.append(f"row {i}: pairs nothing (no source quotation, no candidate fragment)")
        for q in row.source:
            if not _norm(q) or _norm(q) not in problem:
                errors.append(f"row {i}: source quotation not found in problem.tex: {q!r}")
        for frag in row.candidate:
            if not _norm(frag) or _norm(frag) not in header:
                errors.append(f"row {i}: candidate fragment not found in the Lean statement: {frag!r}")
        if row.relation == "trivial_equivalent":
            if not row.conversions:
                errors.append(f"row {i}: trivial_equivalent must name its conversions")
            bad = [c for c in row.conversions if c not in CONVERSIONS]
            if bad:
                errors.append(f"row {i}: conversions not in the closed list: {bad}")
        if row.relation != "same":
            arg = _norm(row.argument).lower()
            if len(arg) < 12 or arg.strip(" .") in PLACEHOLDERS:
                errors.append(f"row {i}: {row.relation} needs a concrete argument, got {row.argument!r}")
        grade = RELATION_GRADE[row.relation]
        items.append(ItemGrade(row=i, role=row.role, relation=row.relation, grade=grade, note=row.argument))
        if grade < 3 and row.repair:
            repairs.append(f"row {i} ({row.role}): {row.repair}")
    if errors:
        return AuditResult(valid=False, errors=errors, threshold=threshold, items=items, routing="reject", root=root)
    grade = min([3] + [it.grade for it in items])
    if grade >= threshold:
        routing = "freeze"
    else:
        routing = "repair"
        if not repairs:
            repairs = [f"row {it.row} ({it.role}): {it.relation}: {it.note}" for it in items if it.grade < threshold]
    return AuditResult(valid=True, grade=grade, threshold=threshold, items=items, routing=routing, repairs=repairs, root=root)
