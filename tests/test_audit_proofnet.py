"""The audit's validator, grading and transfer checker over real statement pairs: rows of the
ProofNet# faithfulness dataset (tests/fixtures/corpus) with evidence records written by hand
(``tests/data/proofnet_audit_records.json``; the writer had seen the labels, see its ``about``).
``scripts/audit_proofnet_eval.py`` prints the same comparison as a table."""

from __future__ import annotations

from collections import Counter

from fyan.audit.evaluate import evaluate
from tests.conftest import ROOT, corpus

RECORDS = ROOT / "tests" / "data" / "proofnet_audit_records.json"


def test_hand_written_records_for_proofnet_pairs_validate_and_grades_match_the_labels():
    rows = evaluate(corpus("datasets/proofnet_verified/faithfulness_pairs_proofnet-sharp.jsonl"), RECORDS)
    assert len(rows) >= 20
    assert Counter(r.label_faithful for r in rows) == {True: 13, False: 11}
    for r in rows:
        assert r.source_errors == [], (r.name, r.source_errors)  # every quotation is literal
        assert r.result.valid, (r.name, r.result.errors)
        if r.disagree:
            assert not r.agrees, f"{r.name} is documented as a disagreement but agrees"
        else:
            assert r.agrees, (r.name, r.label, r.result.grade, [it.note for it in r.result.items if it.grade < 2])
    # the grades spread over the scale: one-way changes at the right polarity are 1, wrong ones 0
    grades = Counter(r.result.grade for r in rows if not r.label_faithful)
    assert grades[0] >= 4 and grades[1] >= 2
    # two labels rest on implicit premises; two faithful records rest on conversions code cannot
    # check, which never raise a grade
    assert sum(r.agrees for r in rows) == len(rows) - 4
