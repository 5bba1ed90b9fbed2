"""Grade the hand-written evidence records of ``tests/data/proofnet_audit_records.json`` with
the audit's validator, grading and transfer checker, and compare with the dataset's labels.

    python scripts/audit_proofnet_eval.py [path/to/faithfulness_pairs_proofnet-sharp.jsonl]

Prints one line per record (label, grade, agreement) and the totals.
"""

from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from fyan.audit.evaluate import evaluate  # noqa: E402

#: the dataset as copied into the repository (origin and licence: tests/fixtures/README.md)
DEFAULT = ROOT / "tests" / "fixtures" / "corpus" / "datasets" / "proofnet_verified" / "faithfulness_pairs_proofnet-sharp.jsonl"


def main(dataset: Path) -> int:
    if not dataset.is_file():
        raise SystemExit(f"{dataset}: no such file (the default is {DEFAULT.relative_to(ROOT)})")
    rows = evaluate(dataset, ROOT / "tests" / "data" / "proofnet_audit_records.json")
    print(f"{'name':<34} {'label':<13} {'grade':>5}  {'audit':<12} agrees")
    for r in rows:
        grade = "-" if r.result.grade is None else str(r.result.grade)
        verdict = "invalid" if not r.result.valid else ("faithful" if r.audit_faithful else "not faithful")
        print(f"{r.name:<34} {r.label:<13} {grade:>5}  {verdict:<12} {'yes' if r.agrees else 'NO'}")
    grades = Counter((r.label_faithful, r.result.grade) for r in rows)
    agree = sum(r.agrees for r in rows)
    print(f"\n{len(rows)} records (written by hand), {sum(r.result.valid for r in rows)} valid; "
          f"agreement with the labels (faithful <=> grade >= 2): {agree}/{len(rows)}")
    for faithful in (True, False):
        dist = ", ".join(f"grade {g}: {n}" for (f, g), n in sorted(grades.items(), key=lambda x: str(x)) if f == faithful)
        print(f"  labelled {'faithful' if faithful else 'not faithful'}: {dist}")
    for r in rows:
        if not r.agrees:
            print(f"  disagreement {r.name}: {r.disagree or r.result.errors or r.source_errors}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(Path(sys.argv[1]) if len(sys.argv) > 1 else DEFAULT))
