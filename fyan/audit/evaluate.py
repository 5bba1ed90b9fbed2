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
from fyan.audit.statement import lean_side
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


def evaluate(dataset: Path, records: Path, threshold: int = 2) -> list[EvalRow]:
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
        out.append(EvalRow(rec["name"], data["q2_faithfulness"], bool(data["is_faithful"]),
                           grade_record(record, src, side.slots, ctx), problems, rec.get("disagree")))
    return out
