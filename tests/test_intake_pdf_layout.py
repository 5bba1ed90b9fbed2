"""PDF intake read from the page layout, on PDFs the real pdflatex builds from TeX of our own
(tests/pdf_documents.py): headings behind a margin key (showkeys), run together with their
number ("Example1.2"), with a footnote mark in the title; extents that keep their lists and
displays and end at the paragraph after them, a run-in heading, a float, the next column;
uncertain ends flagged; gaps in the numbering reported as possibly missed statements. Every
statement's extent is compared with its TeX source."""

from __future__ import annotations

import pytest

from fyan.intake.pdf import read_pdf
from tests.pdf_documents import AMSTHM, PLAIN, Doc, check, documents
from tests.pdfgen import latex_pdf, needs_pdflatex

pytestmark = needs_pdflatex
DOCS = {d.name: d for d in documents()}


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """Each document typeset once for the module: name -> Catalogue."""
    folder = tmp_path_factory.mktemp("pdf-kinds")
    out = {}
    for doc in DOCS.values():
        if not doc.missing():
            out[doc.name] = read_pdf(latex_pdf(folder / doc.name, doc.tex(), "doc"))
    return out


@pytest.mark.parametrize("name", list(DOCS))
def test_every_statement_is_found_whole_and_alone(built, name):
    if name not in built:
        pytest.skip(f"this TeX installation lacks {', '.join(DOCS[name].missing())}")
    outcome = check(DOCS[name], built[name].statements)
    assert (outcome.missed, outcome.cut, outcome.run_on) == ([], [], [])
    assert len(built[name].statements) == len(DOCS[name].statements)
    assert not [w for w in built[name].warnings if w.code == "numbering-gap"]  # no false gap


def test_a_margin_key_is_not_part_of_the_heading_or_the_text(built):
    cat = built["blueprint-showkeys"]
    assert [s.label for s in cat.statements] == ["Lemma 1.1", "Definition 1.2", "Theorem 1.3", "Lemma 1.4",
                                                 "Theorem 1.5"]
    assert all(s.body.startswith(s.label) and "key:" not in s.body for s in cat.statements)
    assert not [w for w in cat.warnings if w.code == "proof"]


def test_a_heading_run_together_with_its_number(built):
    cat = built["tight-heading-style"]
    examples = [s for s in cat.statements if s.kind == "example"]
    assert [(s.number, s.title) for s in examples] == [("1.2", "Left-absorptive"), ("1.4", None)]


def test_a_footnote_mark_is_not_part_of_a_title(built):
    euclid = built["book"].statements[0]
    assert (euclid.label, euclid.title) == ("Theorem 0.1", "Euclid")  # a book without \\chapter: 0.1


def test_a_list_keeps_its_statement_and_the_end_after_it_is_flagged(built):
    for name in ("blueprint-showkeys", "two-column", "amsart-paper"):
        cat = built[name]
        tame = next(s for s in cat.statements if "tame" in s.body)
        assert "every point" in tame.body and "interlude" not in tame.body
    flagged = [w for w in built["blueprint-showkeys"].warnings if w.code == "pdf-extent"]
    assert len(flagged) == 1 and "Definition 1.2" in flagged[0].message and "list" in flagged[0].message


def test_gaps_in_the_numbering_are_reported_as_possibly_missed_statements(tmp_path):
    doc = Doc("gaps", "article", AMSTHM, [PLAIN[0], PLAIN[1], PLAIN[2]],
              between=["\\addtocounter{theorem}{1}\n\n", "\\addtocounter{theorem}{3}\n\n", ""])
    cat = read_pdf(latex_pdf(tmp_path, doc.tex(), "doc"))
    assert [s.number for s in cat.statements] == ["1.1", "1.3", "1.7"]
    gaps = [w.message for w in cat.warnings if w.code == "numbering-gap"]
    assert len(gaps) == 2
    assert "Lemma 1.3 follows Lemma 1.1 with no statement numbered 1.2" in gaps[0]
    assert "1.4, 1.5, 1.6" in gaps[1]


def test_separate_counters_per_kind_are_no_gap(tmp_path):
    preamble = "\\newtheorem{theorem}{Theorem}\n\\newtheorem{lemma}{Lemma}\n"
    doc = Doc("counters", "article", preamble,
              [PLAIN[0], PLAIN[1], type(PLAIN[0])("theorem", "Every theorem holds here.", "Every theorem", "holds here")])
    cat = read_pdf(latex_pdf(tmp_path, doc.tex(), "doc"))
    assert [s.label for s in cat.statements] == ["Lemma 1", "Lemma 2", "Theorem 1"]
    assert not [w for w in cat.warnings if w.code == "numbering-gap"]
