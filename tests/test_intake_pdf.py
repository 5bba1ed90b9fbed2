"""PDF intake: the paired corpus PDFs against their TeX, generated PDFs, and bad PDFs.

Bad and synthetic PDFs are generated here (``tests/pdfgen.py``, pypdf for encryption): no
binary fixture is committed.
"""

from __future__ import annotations

import io
import re
import unicodedata
from collections import defaultdict
from pathlib import Path

import pypdf
import pytest

from fyan.errors import InputError
from fyan.intake import read_source
from fyan.intake.pdf import read_pdf_pages
from fyan.intake.tex import read_tex
from fyan.specifier.dag import extract_edges, validate
from fyan.specifier.units import build_units
from tests.conftest import corpus
from tests.pdfgen import blank_pdf, make_pdf, text_page, write_pdf

KINDS = ["theorem", "lemma", "proposition", "corollary", "claim", "conjecture", "definition"]


def words(tex: str, n: int = 8) -> list[str]:
    """The first ``n`` words of a statement's text outside math, TeX markup removed (to find
    the statement in the PDF's text layer)."""
    text = re.sub(r"\\begin\{[^}]*\}(\[[^\]]*\])?|\\end\{[^}]*\}|\\label\{[^}]*\}", " ", tex)
    text = re.sub(r"\$[^$]*\$", " ", text)
    text = re.sub(r"\\[A-Za-z]+\*?", " ", text)
    return re.findall(r"[A-Za-z]+", text)[:n]


def appears_in_order(needles: list[str], text: str) -> bool:
    hay = iter(re.findall(r"[A-Za-z]+", unicodedata.normalize("NFKC", text)))
    return all(any(w == h for h in hay) for w in needles)


@pytest.fixture(scope="module")
def ernst():
    """The 150-page book, read once for this module: (catalogue, page texts)."""
    return read_pdf_pages(corpus("pdf/ernst_IntroToProof_MAAPressVersion.pdf"))


def test_paired_sums_of_three_squares_pdf_against_its_tex():
    pdf, pages = read_pdf_pages(corpus("pdf/sums_three_squares_print.pdf"))
    tex = read_tex(corpus("notes/sums_three_squares/content.tex"))
    # every numbered statement of the TeX is found, in order, with its kind
    assert [s.kind for s in pdf.statements] == [s.kind for s in tex.statements] == ["theorem"]
    (stmt,) = pdf.statements
    assert stmt.label == "Theorem 1" and stmt.number == "1"
    # the right page: the statement starts on page 3, where its text is
    p = stmt.provenance
    assert (p.page_start, p.page_end) == (3, 3)
    assert pages[2][p.char_start : p.char_end] == stmt.body
    assert stmt.body.startswith("Theorem 1. If m is a positive integer not of the form 4a(8n + 7)")
    assert appears_in_order(words(tex.statements[0].body), pages[2])
    # its proof runs from page 3 to the end of page 5 (the References heading of page 6 ends it)
    proof = stmt.proof.provenance
    assert (proof.page_start, proof.page_end) == (3, 5)
    assert stmt.proof.body.startswith("Proof. We make use of an elegant method")
    assert stmt.proof.body.endswith("and thus for all square free m.")


def test_paired_ernst_chapter_two_against_the_taste_of_number_theory_tex(ernst):
    """The book's section 2.1 is TasteNumberTheory.tex: its 15 theorem-like environments share
    one counter, so they are printed as 2.1 ... 2.15, in the same order and kinds."""
    pdf, pages = ernst
    tex = read_tex(corpus("notes/ernst_ibl_intro_to_proof/TasteNumberTheory.tex"))
    printed = {s.number: s for s in pdf.statements if s.number}
    expected_kinds = [s.kind for s in tex.statements]
    assert len(expected_kinds) == 15
    found = [printed[f"2.{k}"] for k in range(1, 16)]
    assert [s.kind for s in found] == expected_kinds
    for t, p in zip(tex.statements, found):
        page = pages[p.provenance.page_start - 1]
        assert appears_in_order(words(t.body), page), (t.label, p.label, p.provenance)
    assert found[1].body == "Theorem 2.2. If n is an even integer, then n2 is an even integer."
    assert found[2].body == "Theorem 2.3. The sum of two consecutive integers is odd."  # not the prose after it
    assert found[14].body == "Theorem 2.15. If n∈ Z such that n is odd, then 8 divides n2 − 1."  # not the epigraph
    # the same dependency edges: the definitions' bold terms in the PDF, \\textbf in the TeX
    tex_units = build_units(tex, KINDS)
    tex_edges = extract_edges(tex, tex_units).edges
    tex_number = {u.id: f"2.{u.statements[0] + 1}" for u in tex_units}  # 2.1 ... 2.15 in order
    pdf_units = build_units(pdf, KINDS)
    pdf_edges = extract_edges(pdf, pdf_units).edges
    pdf_number = {u.id: pdf.statements[u.statements[0]].number for u in pdf_units}
    section = {f"2.{k}" for k in range(1, 16)}
    assert len(tex_edges) == 10
    assert {(tex_number[e.unit], tex_number[e.depends_on]) for e in tex_edges} == {
        (pdf_number[e.unit], pdf_number[e.depends_on]) for e in pdf_edges if pdf_number[e.unit] in section}


def test_every_numbered_statement_of_the_book_is_found(ernst):
    """The book numbers every theorem-like environment with one counter per chapter: the
    numbers found must be 1..n in every chapter (a gap is a missed heading)."""
    pdf, _ = ernst
    numbers = defaultdict(set)
    for s in pdf.statements:
        if s.number and re.fullmatch(r"\d+\.\d+", s.number):
            chapter, k = s.number.split(".")
            numbers[chapter].add(int(k))
    assert sorted(numbers, key=int) == [str(c) for c in range(2, 10)]
    for chapter, found in numbers.items():
        assert found == set(range(1, max(found) + 1)), f"chapter {chapter}: missing {set(range(1, max(found) + 1)) - found}"
    assert sum(len(v) for v in numbers.values()) == 596  # and one unnumbered "Claim."
    # custom environments are catalogued with their printed name; only unit kinds become units
    kinds = {s.kind for s in pdf.statements}
    assert {"skeleton proof", "problem", "theorem", "definition"} <= kinds
    units = build_units(pdf, KINDS)
    edges = extract_edges(pdf, units).edges
    dag = validate(pdf, units, edges, KINDS)
    assert len(units) == sum(s.kind in KINDS for s in pdf.statements)
    assert any(e.evidence.startswith("ernst_IntroToProof_MAAPressVersion.pdf:p") for e in dag.edges)


def test_generated_pdf_headings_paragraphs_proofs_and_references(tmp_path):
    path = write_pdf(tmp_path / "notes.pdf", [
        text_page([
            "Some introduction text here.",
            [("B", "Definition 1.1."), ("R", " An integer n is "), ("B", "even"), ("R", " if n = 2k.")],
            "",
            "After the definition, prose follows.",
            ("Theorem 1.2 (Squares).", " If n is even, then n^2 is even, by Definition 1.1."),
            ("Proof.", " Write n = 2k by Definition 1.1 and Lemma 9.9."),
            "Then n^2 = 2(2k^2). QED",
            "",
            "Theorem 1.2 shows something: a sentence, not a heading.",
            "1",
        ]),
        text_page([
            ("Lemma 1.3.", " For all n, Theorems 1.2 and Definition 1.1"),
            "apply, and",
            "Corollary 1.4 is cited but does not exist.",
            "",
            "Prose again.",
            "2",
        ]),
    ])
    cat = read_source(path)
    assert cat.format == "pdf"
    assert [(s.label, s.kind, s.title) for s in cat.statements] == [
        ("Definition 1.1", "definition", None), ("Theorem 1.2", "theorem", "Squares"), ("Lemma 1.3", "lemma", None)]
    d, t, lemma = cat.statements
    assert d.body == "Definition 1.1. An integer n is even if n = 2k."  # ends at the paragraph gap
    assert d.defined_terms == ["even"]  # set in the headings' bold font
    assert t.proof.body == "Proof. Write n = 2k by Definition 1.1 and Lemma 9.9.\nThen n^2 = 2(2k^2). QED"
    assert lemma.body.endswith("Corollary 1.4 is cited but does not exist.") and "2" not in lemma.body.split("\n")
    assert [(r.label, r.in_proof, r.page) for r in t.references] == [("Definition 1.1", False, 1), ("Definition 1.1", True, 1)]
    assert {r.label for r in lemma.references} == {"Theorem 1.2", "Definition 1.1"}
    assert "notes.pdf: page 1: 'Lemma 9.9' matches no statement of the document; no edge" in [str(w) for w in cat.warnings]
    units = build_units(cat, KINDS)
    assert [u.id for u in units] == ["definition-1-1", "theorem-1-2", "lemma-1-3"]
    assert str(units[2].provenance) == "notes.pdf:p2"


def test_pdf_without_a_text_layer(tmp_path):
    with pytest.raises(InputError, match=r"scan\.pdf: the PDF has no text layer \(2 page\(s\)") as e:
        read_source(blank_pdf(tmp_path / "scan.pdf"))
    assert "ocrmypdf" in e.value.hint


def _encrypted(path: Path, user: str, algorithm: str) -> Path:
    reader = pypdf.PdfReader(io.BytesIO(make_pdf([text_page([("Theorem 1.", " True.")])])))
    writer = pypdf.PdfWriter(clone_from=reader)
    writer.encrypt(user_password=user, owner_password="owner", algorithm=algorithm)
    with path.open("wb") as f:
        writer.write(f)
    return path


def test_encrypted_pdf_needs_a_password(tmp_path):
    with pytest.raises(InputError, match=r"locked\.pdf: encrypted PDF; it needs a password") as e:
        read_source(_encrypted(tmp_path / "locked.pdf", "secret", "RC4-128"))
    assert "qpdf --decrypt" in e.value.hint


def test_pdf_encrypted_with_an_empty_user_password_is_read_with_a_warning(tmp_path):
    cat = read_source(_encrypted(tmp_path / "perm.pdf", "", "AES-256"))
    assert [s.label for s in cat.statements] == ["Theorem 1"]
    assert "perm.pdf: encrypted PDF opened with an empty user password" in [str(w) for w in cat.warnings]


def test_truncated_and_fake_pdfs(tmp_path):
    good = make_pdf([text_page([("Theorem 1.", " True.")])] * 3)
    cut = tmp_path / "cut.pdf"
    cut.write_bytes(good[: len(good) // 3])
    with pytest.raises(InputError, match=r"cut\.pdf: (cannot read the PDF|page \d+: cannot extract|the PDF has no text)"):
        read_source(cut)
    fake = tmp_path / "fake.pdf"
    fake.write_bytes(b"\x89PNG\r\n\x1a\n not a pdf at all")
    with pytest.raises(InputError, match=r"fake\.pdf: not a PDF \(no %PDF- header\)"):
        read_source(fake)


# -- statement extents from the layout: generated pages with known geometry --------

def prose(x: float, y: float, text: str) -> tuple:
    """A line of body text as a typesetter writes it: several runs in the body font."""
    half = len(text) // 2
    return (x, y, [("R", text[:half]), ("R", text[half:])])


BODY = [prose(72, 740 - 14 * i, "Some running text of the paper, set in the body font.") for i in range(3)]


def read_lines(tmp_path, *pages):
    return read_source(write_pdf(tmp_path / "paper.pdf", list(pages)))


def test_an_italic_theorem_runs_through_its_display_and_ends_at_body_text(tmp_path):
    page = BODY + [
        (72, 690, [("B", "Theorem 1.1."), ("I", " Let f be a continuous function and define")]),
        (220, 666, [("I", "F(x) = f(x) + 1.")]),  # a display, with space above and below
        (72, 642, [("I", "Then F is continuous and bounded.")]),  # the same sentence goes on
        prose(86, 618, "We shall use this theorem in the proof of the main result."),
        prose(72, 604, "More running text follows here, still in the body font."),
    ]
    cat = read_lines(tmp_path, page)
    (thm,) = cat.statements
    assert thm.body.endswith("F(x) = f(x) + 1.\nThen F is continuous and bounded.")
    assert "We shall use" not in thm.body
    assert not [w for w in cat.warnings if w.code == "pdf-extent"]  # a change of font is a certain end


def test_a_definition_in_body_font_goes_on_after_its_display_and_ends_at_an_indent(tmp_path):
    page = BODY + [
        (72, 690, [("B", "Definition 2.1."), ("R", " For a function g we define")]),
        (220, 666, [("R", "G(x) = g(x)^2.")]),
        (72, 642, [("R", "Then g is called square-bounded if G is bounded.")]),
        prose(86, 628, "Square-bounded functions appear throughout this section."),
    ]
    (d,) = read_lines(tmp_path, page).statements
    assert d.body.endswith("G(x) = g(x)^2.\nThen g is called square-bounded if G is bounded.")
    assert "throughout" not in d.body


def test_a_run_in_numbered_heading_ends_the_statement_before_it(tmp_path):
    page = BODY + [
        (72, 690, [("B", "Definition 2.1."), ("R", " A function g is tame if it is bounded.")]),
        (72, 676, [("B", "2.2.2. Preliminary definitions."), ("R", " In this section we fix notation")]),
        prose(72, 662, "for the rest of the paper and recall standard facts."),
        prose(72, 648, "Nothing here belongs to the definition before the heading."),
    ]
    (d,) = read_lines(tmp_path, page).statements
    assert d.body == "Definition 2.1. A function g is tame if it is bounded."


def test_a_two_column_page_has_a_margin_per_column(tmp_path):
    left = [prose(50, 740 - 14 * i, "Left column running text, body font.") for i in range(5)]
    left += [(50, 670, [("B", "Definition 3.1."), ("R", " A set S is sparse if")])]
    right = [(320, 740, [("R", "it meets every interval in at most one point.")])]  # the definition goes on
    right += [prose(334, 726, "Sparse sets are rare in what follows, and")]  # indented: a new paragraph
    right += [prose(320, 712 - 14 * i, "right column running text, body font.") for i in range(4)]
    (d,) = read_lines(tmp_path, left + right).statements
    assert d.body == "Definition 3.1. A set S is sparse if\nit meets every interval in at most one point."


def test_a_statement_across_a_page_break_keeps_its_second_paragraph(tmp_path):
    one = BODY + [
        (72, 100, [("B", "Theorem 4.1."), ("I", " Every tame function is bounded on compact sets.")]),
        (300, 40, [("R", "1")]),
    ]
    two = [
        (86, 740, [("I", "Moreover, the bound depends only on the set.")]),  # the theorem's own second paragraph
        prose(86, 712, "The proof takes the rest of this page and uses compactness."),
        prose(72, 698, "More running text in the body font on the second page."),
        prose(72, 684, "And another line of running text in the body font."),
        prose(72, 670, "A third line of running text in the body font here."),
        prose(72, 656, "A fourth line of running text in the body font here."),
        (300, 40, [("R", "2")]),
    ]
    (thm,) = read_lines(tmp_path, one, two).statements
    assert thm.body.endswith("compact sets.\nMoreover, the bound depends only on the set.")
    assert (thm.provenance.page_start, thm.provenance.page_end) == (1, 2)


def test_an_end_at_a_gap_alone_is_uncertain_and_says_which_page(tmp_path):
    page = BODY + [
        (72, 690, [("B", "Definition 5.1."), ("R", " A number is round if it is even.")]),
        prose(72, 662, "After a gap, unindented text in the same font follows here."),
    ]
    cat = read_lines(tmp_path, page)
    assert cat.statements[0].body == "Definition 5.1. A number is round if it is even."
    (w,) = [w for w in cat.warnings if w.code == "pdf-extent"]
    assert w.where == "paper.pdf: page 1" and "Definition 5.1" in w.message and "vertical gap" in w.message


def test_no_caption_or_epigraph_of_the_book_is_spliced_into_a_statement(ernst):
    """The book's figures (captions "Figure 7.1: ...") and chapter epigraphs (small prose set in
    at a page's foot or top) are no statement's text."""
    pdf, _ = ernst
    captions = [s.label for s in pdf.statements if re.search(r"(?m)^Figure \d+\.\d+:", s.body)]
    assert captions == []
    by_label = {s.label: s for s in pdf.statements}
    assert by_label["Problem 4.34"].body.endswith("Fibonacci numbers.")  # not "Nothing that's worth ..."
    assert by_label["Problem 8.25"].body.endswith("Prove your claim.")  # not "Don't let anyone rob you ..."
    assert by_label["Problem 4.8"].body.endswith("covering for the case involving n = 2.")
