"""Grade the labelled evidence records of the suite with the audit's validator, grading and
transfer checker, and compare with the labels:

* ``tests/data/proofnet_audit_records.json``: records written by hand for pairs of the ProofNet#
  faithfulness dataset (labels: the dataset's);
* the authored audit records of the shipped example ``projects/taste-number-theory`` (each
  labelled faithful: the statements were written from the document).

    python scripts/audit_proofnet_eval.py [path/to/faithfulness_pairs_proofnet-sharp.jsonl]

Prints one line per record (label, grade, agreement), the totals per set and overall, and the
false refusals (faithful by the label, below the threshold by the audit) and false acceptances.
"""

from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from fyan.audit.evaluate import evaluate, evaluate_pairs, example_pairs  # noqa: E402

#: the dataset as copied into the repository (origin and licence: tests/fixtures/README.md)
DEFAULT = ROOT / "tests" / "fixtures" / "corpus" / "datasets" / "proofnet_verified" / "faithfulness_pairs_proofnet-sharp.jsonl"
EXAMPLE = ROOT / "projects" / "taste-number-theory"


def report(title: str, rows) -> tuple[int, int, int, int]:
    print(f"\n== {title}")
    print(f"{'name':<44} {'label':<13} {'grade':>5}  {'audit':<12} agrees")
    for r in rows:
        grade = "-" if r.result.grade is None else str(r.result.grade)
        verdict = "invalid" if not r.result.valid else ("faithful" if r.audit_faithful else "not faithful")
        print(f"{r.name:<44} {r.label:<13} {grade:>5}  {verdict:<12} {'yes' if r.agrees else 'NO'}")
    grades = Counter((r.label_faithful, r.result.grade) for r in rows)
    agree = sum(r.agrees for r in rows)
    refusals = sum(r.label_faithful and not r.audit_faithful for r in rows)
    acceptances = sum(not r.label_faithful and r.audit_faithful for r in rows)
    print(f"{len(rows)} records, {sum(r.result.valid for r in rows)} valid; agreement with the labels "
          f"(faithful <=> grade >= 2): {agree}/{len(rows)}; false refusals {refusals}, false acceptances {acceptances}")
    for faithful in (True, False):
        dist = ", ".join(f"grade {g}: {n}" for (f, g), n in sorted(grades.items(), key=lambda x: str(x)) if f == faithful)
        if dist:
            print(f"  labelled {'faithful' if faithful else 'not faithful'}: {dist}")
    for r in rows:
        if not r.agrees:
            print(f"  disagreement {r.name}: {r.disagree or r.result.errors or r.source_errors or [it.note for it in r.result.items if it.grade < 2]}")
    return agree, len(rows), refusals, acceptances


def main(dataset: Path) -> int:
    if not dataset.is_file():
        raise SystemExit(f"{dataset}: no such file (the default is {DEFAULT.relative_to(ROOT)})")
    totals = [report("ProofNet# pairs, records written by hand",
                     evaluate(dataset, ROOT / "tests" / "data" / "proofnet_audit_records.json"))]
    if EXAMPLE.is_dir():
        totals.append(report(f"example project {EXAMPLE.name}, authored records", evaluate_pairs(example_pairs(EXAMPLE))))
    agree, n, refusals, acceptances = (sum(t[i] for t in totals) for i in range(4))
    print(f"\noverall agreement {agree}/{n}; false refusals {refusals}; false acceptances {acceptances}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(Path(sys.argv[1]) if len(sys.argv) > 1 else DEFAULT))
