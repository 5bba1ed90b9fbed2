"""Code and tests state reasons, not tracker numbers: no file of ``fyan/``, ``tests/``,
``scripts/`` or ``lake-template/`` names an issue by number or cites a design document the
repository does not have, and no page of ``docs/`` names an issue by number.

A clone has no issue tracker and no design document outside ``docs/``: a comment that says
"see issue 23" or "DESIGN.md §2" points nowhere. The reason belongs in the comment itself, and the
design of record is ``docs/design.md`` (cited by that path, which is allowed). The documents under
``tests/fixtures/corpus/`` are third-party texts kept verbatim and are not checked.
"""

from __future__ import annotations

import re
from pathlib import Path

from tests.conftest import ROOT

#: "issue 23", "Issue 11, finding 3", "issues 12 and 18", "issue #7" (any case)
TRACKER = re.compile(r"\bissues?\s+#?\d+\b", re.I)
#: a design document by a bare name; ``docs/design.md`` (the repository's own) is allowed
OUTSIDE_DESIGN = re.compile(r"(?<![\w/.-])design\.md\b", re.I)
SKIPPED = (ROOT / "tests" / "fixtures" / "corpus",
           ROOT / "tests" / "test_code_comments.py")  # this file spells the patterns out


def references(text: str) -> list[str]:
    return [m.group(0) for pattern in (TRACKER, OUTSIDE_DESIGN) for m in pattern.finditer(text)]


def checked_files(tops: tuple[str, ...] = ("fyan", "tests", "scripts", "lake-template")) -> list[Path]:
    files = []
    for top in (ROOT / name for name in tops):
        for path in sorted(top.rglob("*")):
            if not path.is_file() or "__pycache__" in path.parts or any(path.is_relative_to(s) for s in SKIPPED):
                continue
            files.append(path)
    return files


def test_no_file_cites_an_issue_number_or_an_outside_design_document():
    found = []
    for path in checked_files():
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue  # a binary fixture (a PDF, an image)
        for m in (*TRACKER.finditer(text), *OUTSIDE_DESIGN.finditer(text)):  # also across a line break
            line = text.count("\n", 0, m.start()) + 1
            found.append(f"{path.relative_to(ROOT)}:{line}: {' '.join(m.group(0).split())}")
    assert found == [], "state the reason instead:\n" + "\n".join(found)


def test_no_documentation_page_cites_an_issue_number():
    """The site's pages link ``design.md`` (the repository's own), so only issue numbers are
    checked there."""
    found = [f"{page.relative_to(ROOT)}: {' '.join(m.group(0).split())}"
             for page in [ROOT / "README.md", *checked_files(("docs",))] if page.suffix == ".md"
             for m in TRACKER.finditer(page.read_text(encoding="utf-8"))]
    assert found == []


def test_the_check_finds_every_spelling():
    """The patterns can fail: each spelling a comment used is found, the allowed ones are not."""
    cited = ["(issue 28)", "Issue 23, part 9", "issues 12 and 18", "ISSUE #7", "see DESIGN.md §2",
             "(design.md)", "issue\n15"]
    assert all(references(text) for text in cited), [t for t in cited if not references(t)]
    allowed = ["docs/design.md, trust boundaries", "an issue with 3 parts", "tissue 4", "issue-23.4",
               "README.md", "the design"]
    assert [t for t in allowed if references(t)] == []
    assert len(checked_files()) > 300 and ROOT / "fyan" / "cli.py" in checked_files()
