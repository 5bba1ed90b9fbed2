"""Builders for semantic-audit tests: source trees as a model would write them, records as a
judge would write them, and one call that runs the real validator, grading and transfer checker."""

from __future__ import annotations

from dataclasses import dataclass

from fyan.audit.decide import source_table
from fyan.audit.grading import grade_record
from fyan.audit.record import AuditResult, EvidenceRecord, SourceExtraction
from fyan.audit.slots import SlotTable
from fyan.audit.statement import LeanSide, lean_side
from fyan.audit.validator import AuditContext


def F(v, dom, body, quote="", binder="explicit"):
    return {"op": "forall", "var": v, "domain": dom, "quote": quote or v, "binder": binder, "args": [body]}


def E(v, dom, body, quote=""):
    return {"op": "exists", "var": v, "domain": dom, "quote": quote or v, "args": [body]}


def A(text, quote=""):
    return {"op": "atom", "text": text, "quote": quote or text}


def D(name, text, quote=""):
    return {"op": "def", "name": name, "text": text, "quote": quote or name}


def IMP(a, b):
    return {"op": "implies", "args": [a, b]}


def AND(*a):
    return {"op": "and", "args": list(a)}


def OR(*a):
    return {"op": "or", "args": list(a)}


def NOT(a):
    return {"op": "not", "args": [a]}


def IFF(a, b):
    return {"op": "iff", "args": [a, b]}


TRUE = {"op": "true"}
FALSE = {"op": "false"}


def row(s, c, rel="same", **kw):
    return {"source": list(s), "candidate": list(c), "relation": rel, **kw}


@dataclass
class Audited:
    result: AuditResult
    src: SlotTable
    cand: SlotTable
    side: LeanSide

    def item(self, row_no: int):
        return next(it for it in self.result.items if it.row == row_no)


def sides(source: dict, lean: str, root: str | None = None, upstream: list[str] | None = None):
    ex = SourceExtraction.model_validate({"statement": source, "terms": []})
    src = source_table(ex)
    name = root or lean.split()[1]
    side = lean_side(lean, "", [name], upstream or [])
    return src, side


def audit(source: dict, lean: str, rows: list[dict], *, transfer=None, threshold=2, policy="repair",
          upstream: list[str] | None = None, root: str | None = None) -> Audited:
    src, side = sides(source, lean, root, upstream)
    record = EvidenceRecord.model_validate({"root": side.root, "rows": rows, "transfer": transfer})
    ctx = AuditContext(root=side.root, threshold=threshold, checked_defs=side.checked_defs, policy=policy,
                       definitions=side.definitions)
    return Audited(grade_record(record, src, side.slots, ctx), src, side.slots, side)
