"""Grading and routing of a validated evidence record. Pure code.

Per row (an *item*):

* the row's polarity is the join of its slots' polarities (all equal → that one, else mixed); an
  object grouped with formulas about it counts at the polarity of its quantified formula;
* an omission row is graded as the change its ⊤/⊥ replacement makes (``omission_direction``);
  an ordinary object without counterpart (it has no replacement) grades 0; an omission
  justified by a checked removal conversion grades 2; an omitted ⊤/⊥ itself grades 3;
* a relation is admissible only in the right direction for the polarity: positive needs
  candidate ⇒ source (``mutated_stronger``), negative needs source ⇒ candidate
  (``mutated_weaker``), mixed needs both (neither one-way relation). An inadmissible relation
  grades 0; otherwise the relation's grade (``RELATION_GRADE``);
* a slot with a code finding (an escaped variable, a claim assumed as a hypothesis, an unfrozen
  local definition, a vacuous claim or premise) makes its row grade 0;
* a ``same`` or ``trivial_equivalent`` row whose items do not sit in the same place of the two
  trees (``fyan.audit.structure``) grades 0 (``same``: a form error at validation);
* a ``trivial_equivalent`` row grades 2 only when code verifies its conversions
  (``validator.conversion_problem``; ``record.CHECKED_CONVERSIONS``); a conversion code cannot
  check (``inequality_flip`` claimed where the texts do not flip, ``coercion_insertion``, ...) is
  the judge's word alone and grades the row 0, so a record resting on one stays below every
  threshold.

When an item grades 1 the transfer checker runs on the record's transfer evidence; a refusal is
one more item, graded 0. Grade = min over all items, starting at 3.

Routing: grade ≥ threshold → ``freeze``; otherwise ``repair`` with localized repairs (the row's
``repair`` text, or one written by code naming the slot). ``bridge_eligible``: grade 1 ≤ g <
threshold and ``policy == "bridge"`` (the caller audits S0 and upgrades the routing).
"""

from __future__ import annotations

from fyan.audit.formula import Polarity, join
from fyan.audit.record import RELATION_GRADE, AuditResult, EvidenceRecord, EvidenceRow, ItemGrade, SlotView
from fyan.audit.slots import Slot, SlotTable
from fyan.audit.structure import structure_problems
from fyan.audit.transfer import check_record_transfer
from fyan.audit.validator import (AuditContext, conversion_problem, is_omission, omission_direction, rename_maps,
                                  validate)

ADMISSIBLE: dict[str, tuple[str, ...]] = {
    "mutated_stronger": ("positive",),
    "mutated_weaker": ("negative",),
}


def _evidence(row: EvidenceRow) -> str:
    parts = []
    if row.conversions:
        parts.append("conversions: " + ", ".join(row.conversions))
    if row.unfolds:
        parts.append("unfolds: " + ", ".join(row.unfolds))
    if row.argument:
        parts.append(row.argument)
    if row.difference:
        parts.append("difference: " + row.difference)
    if row.affected:
        parts.append("affects: " + ", ".join(row.affected))
    return "; ".join(parts)


def grade_row(i: int, row: EvidenceRow, src: SlotTable, cand: SlotTable,
              rename: dict[str, str] | None = None, checked_defs: frozenset[str] = frozenset(),
              definitions: dict | None = None, structure: str | None = None) -> ItemGrade:
    slots: list[Slot] = [s for s in (*(src.get(x) for x in row.source), *(cand.get(x) for x in row.candidate)) if s]
    # objects grouped with formulas about them stand for the quantified formula: its own polarity
    with_leaves = any(s.kind != "object" for s in slots)
    pol: Polarity = join([s.position or s.polarity if (s.kind == "object" and with_leaves) else s.polarity
                          for s in slots])
    kinds = sorted({s.kind for s in slots})
    kind = "omission" if is_omission(row) else (kinds[0] if len(kinds) == 1 else "+".join(kinds))
    item = ItemGrade(row=i, source=row.source, candidate=row.candidate, kind=kind, relation=row.relation,
                     polarity=pol, grade=RELATION_GRADE[row.relation], evidence=_evidence(row))
    if is_omission(row):
        computed = omission_direction(row, src, cand)
        if row.relation == "trivial_equivalent":
            item.grade = 2
        elif row.relation == "same":
            item.grade = 3
        elif row.relation == "unaligned":
            item.grade = 0
        elif computed is None:
            item.grade = 0
            item.note = "an object without counterpart: there is no object to map it to"
        else:
            item.relation = computed
        missing = "candidate" if not row.candidate else "source"
        replaced = ", ".join(f"{s.id} `{s.text}` → {s.replacement or '(no ⊤/⊥ for an object)'}" for s in slots)
        item.note = (item.note + "; " if item.note else "") + f"omitted on the {missing} side: {replaced}"
    if row.relation == "trivial_equivalent":
        problem = conversion_problem(row.conversions, [s for s in slots if s.id in row.source],
                                     [s for s in slots if s.id in row.candidate], rename or {}, checked_defs,
                                     src=src, cand=cand, unfolds=row.unfolds, definitions=definitions)
        if problem:  # what code cannot verify never raises a grade
            item.grade = 0
            item.note = (item.note + "; " if item.note else "") + f"unverified conversion: {problem}"
        if structure:
            item.grade = 0
            item.note = (item.note + "; " if item.note else "") + f"not in the same place of the statements: {structure}"
    rel = item.relation
    if rel in ADMISSIBLE and pol not in ADMISSIBLE[rel]:
        item.admissible = False
        item.grade = 0
        need = {"positive": "candidate ⇒ source", "negative": "source ⇒ candidate", "mixed": "both directions"}[pol]
        item.note = (item.note + "; " if item.note else "") + (
            f"{rel} is inadmissible at {pol} polarity ({need} is needed): a proof of the candidate does not give "
            f"the source")
    findings = [f"{s.id}: {f}" for s in slots for f in s.findings]
    if findings:
        item.grade = 0
        item.note = (item.note + "; " if item.note else "") + "; ".join(findings)
    return item


def _repair(row: EvidenceRow, item: ItemGrade, src: SlotTable, cand: SlotTable) -> str:
    if row.repair and row.repair.strip():
        text = row.repair.strip()
    elif is_omission(row) and row.source:
        text = "restore " + ", ".join(f"{s.kind} `{s.text}`" for s in (src.get(x) for x in row.source) if s)
    elif is_omission(row):
        text = "remove " + ", ".join(f"{s.kind} `{s.text}`" for s in (cand.get(x) for x in row.candidate) if s) + \
               " (the source does not have it)"
    else:
        text = f"{item.relation}: {row.difference or row.argument}"
    slots = ", ".join(row.source + row.candidate)
    note = f" [{item.note}]" if item.note else ""
    return f"row {item.row} ({slots}): {text}{note}"


def grade_record(record: EvidenceRecord, src: SlotTable, cand: SlotTable, ctx: AuditContext) -> AuditResult:
    """Validate ``record`` and, when valid, grade and route it (module docstring)."""
    errors = validate(record, src, cand, ctx)
    views = [SlotView(id=s.id, kind=s.kind, text=s.text, polarity=s.polarity, quote=s.quote, findings=s.findings)
             for s in src.slots + cand.slots]
    if errors:
        return AuditResult(valid=False, errors=errors, threshold=ctx.threshold, routing="reject", root=ctx.root,
                           slots=views)
    rename = rename_maps(record, src, cand)
    structure = structure_problems(record, src, cand)
    items = [grade_row(i, row, src, cand, rename, ctx.checked_defs, ctx.definitions, structure.get(i))
             for i, row in enumerate(record.rows, start=1)]
    transfer = None
    if any(it.grade == 1 for it in items):
        transfer = check_record_transfer(record, src, cand)
        if not transfer.ok:
            items.append(ItemGrade(row=None, kind="transfer", relation="refused", grade=0,
                                   note="; ".join(transfer.refusals)))
    grade = min([3] + [it.grade for it in items])
    repairs: list[str] = []
    if grade < ctx.threshold:
        for it in items:
            if it.grade >= ctx.threshold:
                continue
            if it.row is None:
                repairs.append("transfer evidence refused: " + it.note)
            else:
                repairs.append(_repair(record.rows[it.row - 1], it, src, cand))
    return AuditResult(valid=True, grade=grade, threshold=ctx.threshold, items=items,
                       routing="freeze" if grade >= ctx.threshold else "repair", repairs=repairs, root=ctx.root,
                       transfer=transfer, slots=views)


def bridge_eligible(result: AuditResult, ctx: AuditContext) -> bool:
    """A valid record graded 1 ≤ g < threshold under ``grade1_policy = "bridge"``."""
    return result.valid and result.grade is not None and 1 <= result.grade < ctx.threshold and ctx.policy == "bridge"
