"""What adoption would decide for PFR's blueprint if its Lake package were built.

Reads ``tests/fixtures/corpus/blueprints/pfr.content.flat.tex`` (PFR's ``content.tex`` with its chapters
inlined; or the file given) with
``fyan init`` into a scratch project (no model, no toolchain), then counts, per theorem unit,
the outcome ``fyan.adopt.decide.outcome_from_marks`` gives from the blueprint's marks alone:
``\\lean`` with ``\\leanok`` on the proof (or on a proof-less statement) → adopted,
``\\lean`` with ``\\leanok`` on the statement only → candidate, otherwise → pipeline. This is an
*estimate*: a real adoption decides from the compiled environment only (a ``\\leanok`` that lies
is not adopted). Prints the counts, and the marks they come from.

    .venv/bin/python scripts/pfr_adoption_counts.py [content.tex]
"""

from __future__ import annotations

import contextlib
import io
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from fyan.adopt.decide import Outcome, outcome_from_marks  # noqa: E402
from fyan.adopt.marks import unit_marks  # noqa: E402
from fyan.cli import main  # noqa: E402
from fyan.intake.catalogue import Catalogue  # noqa: E402
from fyan.project import Project  # noqa: E402
from fyan.state.store import Store  # noqa: E402

#: PFR's blueprint content (its chapters inlined: the corpus keeps the chapters, not content.tex)
DEFAULT = ROOT / "tests/fixtures/corpus/blueprints/pfr.content.flat.tex"


def main_(source: Path) -> int:
    with tempfile.TemporaryDirectory(prefix="pfr-adoption-") as tmp:
        start = time.monotonic()
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            code = main(["init", str(Path(tmp) / "pfr"), "--source", str(source), "--json"])
        if code != 0:
            print(f"fyan init failed on {source} (exit {code})", file=sys.stderr)
            return code
        project = Project.open(Path(tmp) / "pfr")
        store = Store(project.paths.db)
        catalogue = Catalogue.model_validate_json(store.meta("catalogue"))
        marks = unit_marks(store.units(), catalogue)
        store.close()
        elapsed = time.monotonic() - start
    outcomes = Counter(outcome_from_marks(m).value for m in marks.values())
    stmts = catalogue.statements
    print(f"source: {source.relative_to(ROOT) if source.is_relative_to(ROOT) else source}")
    print(f"statements: {len(stmts)}; theorem units: {len(marks)}")
    print(f"\\lean names: {sum(len(s.lean_names) for s in stmts)}; \\leanok marks: "
          f"{sum(s.leanok for s in stmts) + sum(bool(s.proof and s.proof.leanok) for s in stmts)} "
          f"({sum(s.leanok for s in stmts)} on statements, {sum(bool(s.proof and s.proof.leanok) for s in stmts)} "
          f"on proofs); \\mathlibok: {sum(s.mathlibok for s in stmts)}")
    print(f"units with a \\lean name: {sum(bool(m.lean_names) for m in marks.values())}; "
          f"\\leanok without \\lean (cannot be adopted): "
          f"{sum((m.leanok_statement or m.leanok_proof) and not m.lean_names for m in marks.values())}")
    print("adoption outcome from the marks alone (if the package were built and the marks true):")
    for o in Outcome:
        print(f"  {o.value:<10} {outcomes.get(o.value, 0)}")
    print(f"(init + counting: {elapsed:.1f} s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main_(Path(sys.argv[1]) if len(sys.argv) > 1 else DEFAULT))
