"""Run the audit's deterministic core over hand-written (or replayed) evidence records for a
labelled dataset of statement pairs, and compare grades with the labels.

Input: a JSON-lines dataset with ``name``, ``informal_stmt``, ``candidate_formal``,
``is_faithful`` and ``q2_faithfulness`` (the ProofNet# faithfulness pairs of the shared
corpus), and a JSON file ``{"records": [{"name", "source", "rows", "transfer", ...}]}``. Each
record's source tree is checked against the informal statement (literal quotations), the
candidate tree is parsed from the Lean text, and the record is validated and graded exactly as
in a unit's audit. "Faithful" by the audit means grade ≥ ``threshold``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from fyan.audit.decide import source_table
from fyan.audit.grading import grade_record
from fyan.audit.record import AuditResult, EvidenceRecord, SourceExtraction
from fyan.audit.source import extraction_errors
from fyan.audit.slots import SlotTable
from fyan.audit.statement import LeanSide, lean_side
from fyan.audit.validator import AuditContext
from fyan.lean.declarations import scan


@dataclass
class EvalRow:
    name: str
    label: str  # the dataset's q2_faithfulness
    label_faithful: bool
    result: AuditResult
    source_errors: list[str]
    disagree: str | None

    @property
    def audit_faithful(self) -> bool:
        return self.result.valid and self.result.grade is not None and self.result.grade >= self.result.threshold

    @property
    def agrees(self) -> bool:
        return not self.source_errors and self.result.valid and self.audit_faithful == self.label_faithful


@dataclass
class Pair:
    """A labelled audit case: the source slots, the candidate side, the evidence record and the
    context it is graded in (``label``: the dataset's word; ``label_faithful``: faithful or not)."""

    name: str
    label: str
    label_faithful: bool
    src: SlotTable
    side: LeanSide
    record: EvidenceRecord
    ctx: AuditContext
    source_errors: list[str]
    disagree: str | None = None

    def grade(self) -> AuditResult:
        return grade_record(self.record, self.src, self.side.slots, self.ctx)


def proofnet_pairs(dataset: Path, records: Path, threshold: int = 2) -> list[Pair]:
    """The hand-written records of ``records`` over the pairs of ``dataset`` (module docstring)."""
    rows = {r["name"]: r for r in map(json.loads, dataset.read_text(encoding="utf-8").splitlines()) if r}
    out = []
    for rec in json.loads(records.read_text(encoding="utf-8"))["records"]:
        data = rows[rec["name"]]
        extraction = SourceExtraction.model_validate({"statement": rec["source"], "terms": rec.get("terms", [])})
        problems = extraction_errors(extraction, data["informal_stmt"])
        src = source_table(extraction)
        theorems = [d for d in scan(data["candidate_formal"]) if d.kind == "theorem"]
        side = lean_side(data["candidate_formal"], "", [theorems[-1].name])
        record = EvidenceRecord.model_validate({"root": side.root, "rows": rec["rows"], "transfer": rec.get("transfer")})
        ctx = AuditContext(root=side.root, threshold=threshold, checked_defs=side.checked_defs,
                           definitions=side.definitions)
        out.append(Pair(rec["name"], data["q2_faithfulness"], bool(data["is_faithful"]), src, side, record, ctx,
                        problems, rec.get("disagree")))
    return out


def example_pairs(project: Path, threshold: int = 2) -> list[Pair]:
    """The authored audit records of a replayed example project (``replay/authored/<unit>/``:
    ``audit_source.json``, ``plan.json``, ``audit.json``), each labelled faithful: the author
    wrote the statement from the document. A unit's upstream signatures are the other units'
    definitions (the example's units use the definitions they depend on and no others)."""
    base = project / "replay" / "authored"
    units = sorted(p for p in base.iterdir() if (p / "audit.json").is_file() and (p / "plan.json").is_file())
    plans = {u.name: json.loads((u / "plan.json").read_text(encoding="utf-8")) for u in units}
    defs = {name: plan["lean"] for name, plan in plans.items()
            if any(d.kind in ("def", "abbrev") for d in scan(plan["lean"]))}
    out = []
    for u in units:
        plan = plans[u.name]
        extraction = SourceExtraction.model_validate_json((u / "audit_source.json").read_text(encoding="utf-8"))
        upstream = [lean for name, lean in defs.items() if name != u.name]
        side = lean_side(plan["lean"], "", plan["lemma_dag"]["roots"], upstream)
        record = EvidenceRecord.model_validate_json((u / "audit.json").read_text(encoding="utf-8"))
        ctx = AuditContext(root=side.root, threshold=threshold, checked_defs=side.checked_defs,
                           definitions=side.definitions)
        out.append(Pair(f"example:{u.name}", "faithful", True, source_table(extraction), side, record, ctx, []))
    return out


def evaluate_pairs(pairs: list[Pair]) -> list[EvalRow]:
    return [EvalRow(p.name, p.label, p.label_faithful, p.grade(), p.source_errors, p.disagree) for p in pairs]


def evaluate(dataset: Path, records: Path, threshold: int = 2) -> list[EvalRow]:
    return evaluate_pairs(proofnet_pairs(dataset, records, threshold))
