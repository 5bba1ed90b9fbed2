#!/usr/bin/env python3
"""Missed, cut and run-on statements of PDF intake on documents of each kind it reads.

    python scripts/pdf_extents.py [--keep DIR] [--json]

The documents are the ones of ``tests/pdf_documents.py`` (a blueprint printed with showkeys, an
amsart paper, a book with a footnote in a title and a float, a thmtools document (skipped where
thmtools is not installed) and an amsthm one with a tight heading style ("Example1.2") and a
run-in "Non-examples." block, a two-column article, notes with run-in
headings), typeset with the real ``pdflatex`` and read by ``fyan.intake.pdf.read_pdf``; each
statement's printed text is compared with its TeX source: missed (no statement holds its first
words), cut (its last words are missing), run on (prose after it is inside). Prints one line per
document and the totals; needs ``pdflatex`` (Debian: texlive-latex-recommended). The figures are
printed, never asserted.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from fyan.intake.pdf import read_pdf  # noqa: E402
from tests.pdf_documents import check, documents  # noqa: E402
from tests.pdfgen import latex_pdf  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--keep", type=Path, help="typeset the documents into this folder and keep them")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    if shutil.which("pdflatex") is None:
        raise SystemExit("pdflatex is not installed (Debian: texlive-latex-recommended)")
    folder = args.keep or Path(tempfile.mkdtemp(prefix="fyan-pdf-extents-"))
    results = []
    for doc in documents():
        if doc.missing():
            print(f"{doc.name:20} skipped: this TeX installation lacks {', '.join(doc.missing())}")
            continue
        cat = read_pdf(latex_pdf(folder / doc.name, doc.tex(), "doc"))
        outcome = check(doc, cat.statements)
        results.append({"document": doc.name, "statements": outcome.expected, "found": len(cat.statements),
                        "missed": outcome.missed, "cut": outcome.cut, "run_on": outcome.run_on,
                        "uncertain_warnings": sum(w.code == "pdf-extent" for w in cat.warnings),
                        "gap_warnings": sum(w.code == "numbering-gap" for w in cat.warnings)})
    if not args.keep:
        shutil.rmtree(folder, ignore_errors=True)
    if args.json:
        print(json.dumps(results, indent=2))
        return 0
    for r in results:
        print(f"{r['document']:20} {r['statements']:2} statements: missed {len(r['missed'])}, cut {len(r['cut'])}, "
              f"run on {len(r['run_on'])} (uncertain ends flagged {r['uncertain_warnings']}, numbering gaps "
              f"{r['gap_warnings']})" + "".join(f"\n    {k}: {', '.join(r[k])}" for k in ("missed", "cut", "run_on")
                                                 if r[k]))
    total = sum(r["statements"] for r in results)
    print(f"TOTAL {total} statements: missed {sum(len(r['missed']) for r in results)}, cut "
          f"{sum(len(r['cut']) for r in results)}, run on {sum(len(r['run_on']) for r in results)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
