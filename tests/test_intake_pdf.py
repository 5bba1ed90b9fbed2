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
