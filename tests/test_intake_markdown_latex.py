"""Markdown as people write it: LaTeX environments inside Markdown, plain-text
statement headings, mixed files, and tolerant recovery of malformed environments.

The documents in ``tests/fixtures/markdown/`` are short notes written for these tests in the
style of a formalization benchmark's informal sources (one or a few statements with their
definitions and proofs, math for MathJax/KaTeX); the small ones are inline."""

from __future__ import annotations

import shutil

import pytest

from fyan.errors import InputError
from fyan.intake import read_source
from fyan.intake.numbered import line_heading
from fyan.intake.tex import read_tex
from fyan.intake.texscan import Fault, TexStructureError, recover_environments, scan_environments
from fyan.specifier.dag import extract_edges, validate
from fyan.specifier.units import build_units
from tests.conftest import FIXTURES, write

KINDS = ["theorem", "lemma", "proposition", "corollary", "claim", "conjecture", "definition"]
MD = FIXTURES / "markdown"


def shape(cat):
    """(kind, label, title, statement lines, proof lines) of every statement."""
    return [(s.kind, s.label, s.title, (s.provenance.line_start, s.provenance.line_end),
             (s.proof.provenance.line_start, s.proof.provenance.line_end) if s.proof else None)
            for s in cat.statements]


def edges(cat):
    units = build_units(cat, KINDS)
    dag = validate(cat, units, extract_edges(cat, units).edges, KINDS)
    return {(e.unit, e.depends_on, e.in_proof) for e in dag.edges if e.origin not in ("term", "title")}


def as_text(cat, suffix: str):
    """Every statement as data, with the file name's suffix left out (for .md/.tex comparisons)."""
    out = []
    for s in cat.statements:
        d = s.model_dump()
        d.pop("section")  # a Markdown heading ("# Title") heads a section in Markdown only
        d["provenance"]["file"] = d["provenance"]["file"].removesuffix(suffix)
        if d["proof"]:
            d["proof"]["provenance"]["file"] = d["proof"]["provenance"]["file"].removesuffix(suffix)
        for r in d["references"]:
            r["file"] = r["file"].removesuffix(suffix)
        out.append(d)
    return out


# -- LaTeX environments inside Markdown ------------------------------------------------------

def test_environments_in_markdown_with_math_and_lists_are_statements():
    cat = read_source(MD / "euclid_primes.md")
    assert cat.format == "markdown"
    assert shape(cat) == [
        ("definition", "def:prime", "Prime number", (5, 8), None),
        ("lemma", "lem:factor", "Prime factor", (10, 12), (14, 18)),
        ("theorem", "thm:euclid", "Euclid", (20, 22), (24, 35)),
    ]
    d, lemma, thm = cat.statements
    assert d.body.startswith("\\begin{definition}[Prime number]") and d.body.endswith("\\end{definition}")
    assert d.defined_terms == ["prime"]  # \emph in a defining phrase, as in a TeX file
    # math and lists verbatim, inside the proof
    assert "\\[\n  N = n! + 1 .\n\\]" in thm.proof.body
    assert "\\begin{enumerate}\n  \\item if $p \\le n$, then $p \\mid n!$;" in thm.proof.body
    assert [(r.label, r.macro, r.in_proof, r.line) for r in thm.references] == [("lem:factor", "ref", True, 29)]
    assert "infinitely-many-primes" in cat.labels  # the title heading's slug
    assert edges(cat) == {("lem-factor", "def-prime", True), ("thm-euclid", "lem-factor", True)}


def test_display_math_in_an_environment_and_an_unlabelled_theorem():
    cat = read_source(MD / "sum_of_odds.md")
    assert shape(cat) == [("theorem", None, None, (5, 8), (10, 15))]
    assert "$$\\sum_{k=0}^{n-1} (2k+1) = n^2 .$$" in cat.statements[0].body
    assert [u.id for u in build_units(cat, KINDS)] == ["theorem-1"]


@pytest.mark.parametrize("name", ["euclid_primes.md", "sum_of_odds.md"])
def test_a_markdown_file_and_the_same_text_as_tex_give_the_same_statements(tmp_path, name):
    md = shutil.copy(MD / name, tmp_path / "doc.md")
    tex = shutil.copy(MD / name, tmp_path / "doc.tex")
    from_md, from_tex = read_source(md), read_source(tex)
    assert from_tex.format == "tex" and from_md.format == "markdown"
    assert as_text(from_md, ".md") == as_text(from_tex, ".tex")
    assert edges(from_md) == edges(from_tex)


def test_the_same_reading_with_declared_theorems_comments_and_displays(tmp_path):
    text = r"""\newtheorem{thm}{Theorem}
\newtheorem{defi}[thm]{Definition}

\begin{defi}\label{d:tame}
A map is \emph{tame} if it is bounded. % a LaTeX comment: \end{defi} here is not read
\end{defi}

\begin{thm}[Main]\label{t:main}
Every tame map satisfies
\begin{equation}\label{eq:bound}
  |f(x)| \le C .
\end{equation}
\end{thm}

\begin{proof}
By \eqref{eq:bound} and Definition~\ref{d:tame}.
\end{proof}
"""
    md, tex = write(tmp_path / "n.md", text), write(tmp_path / "n.tex", text)
    from_md = read_source(md)
    assert [(s.kind, s.env, s.label) for s in from_md.statements] == [("definition", "defi", "d:tame"),
                                                                      ("theorem", "thm", "t:main")]
    assert as_text(from_md, ".md") == as_text(read_source(tex), ".tex")
    assert from_md.labels["eq:bound"].statement_index == 1 and from_md.displays[0].labels == ["eq:bound"]
    assert from_md.theorem_envs == {"thm": "theorem", "defi": "definition"}


def test_environments_in_code_blocks_spans_and_comments_are_not_statements():
    cat = read_source(MD / "latex_in_code.md")  # strict: the unclosed \begin in code is no fault
    assert shape(cat) == [("lemma", "lem:gauss", None, (19, 21), (23, 29))]
    proof = cat.statements[0].proof.body
    assert "this indented paragraph is inside the proof" in proof and proof.endswith("\\end{proof}")
    assert "lem:example" not in cat.labels and cat.warnings == []


def test_an_indented_block_inside_an_environment_is_content_not_code(tmp_path):
    path = write(tmp_path / "m.md", "\\begin{lemma}\n  First line.\n\n    \\begin{enumerate}\n    \\item one\n\n"
                 "    \\item two \\label{it:two}\n    \\end{enumerate}\n\\end{lemma}\n")
    (lemma,) = read_source(path).statements
    assert (lemma.provenance.line_start, lemma.provenance.line_end) == (1, 9)
    assert "it:two" in lemma.labels  # the label in the indented part belongs to the lemma


# -- plain-text headings ---------------------------------------------------------------------

def test_plain_headings_with_names_give_labels_and_proof_parenthesis_opens_a_proof():
    cat = read_source(MD / "coeff_zero_of_lt.md")
    assert shape(cat) == [
        ("definition", "natDegree", "natDegree", (1, 3), None),
        ("lemma", "coeff_zero_of_lt", "coeff_zero_of_lt", (5, 7), (9, 11)),
    ]
    lemma = cat.statements[1]
    assert lemma.body.startswith("Lemma (coeff_zero_of_lt)\nLet $p \\in R[X]$")
    assert lemma.proof.body.startswith("Proof)\nIf the coefficient")
    assert [u.id for u in build_units(cat, KINDS)] == ["natdegree", "coeff-zero-of-lt"]
    assert edges(cat) == {("coeff-zero-of-lt", "natdegree", True)}  # "Definition (natDegree)" in the proof


def test_plain_headings_numbered_with_a_blank_line_a_display_and_a_closing_remark():
    cat = read_source(MD / "krull_dimension.md")
    assert shape(cat) == [
        ("definition", "krullDim", "krullDim", (1, 6), None),
        ("theorem", "Theorem 2.1", None, (8, 9), (11, 13)),
        ("remark", None, None, (15, 15), None),
    ]
    d, thm, _ = cat.statements
    assert "$$\\mathfrak p_0 \\subsetneq" in d.body and d.defined_terms == ["krull dimension"]
    assert thm.number == "2.1" and thm.proof.body.endswith("∎")
    assert edges(cat) == {("theorem-2-1", "krulldim", True)}


@pytest.mark.parametrize("text, expected", [
    ("Theorem 2.1\nFor all $n$, $n + 0 = n$.\n", ("theorem", "Theorem 2.1", "2.1", None, ["Theorem 2.1"])),
    ("Lemma (foo_bar)\nFor all $n$, $n + 0 = n$.\n", ("lemma", "foo_bar", None, "foo_bar", ["foo_bar"])),
    ("Lemma 3 (Nat.add_zero)\nFor all $n$.\n", ("lemma", "Nat.add_zero", "3", "Nat.add_zero",
                                                 ["Nat.add_zero", "Lemma 3"])),
    ("Theorem 4 (Cauchy–Schwarz inequality).\nFor all $u, v$.\n",
     ("theorem", "Theorem 4", "4", "Cauchy–Schwarz inequality", ["Theorem 4"])),
    ("Theorem (Fundamental theorem of arithmetic)\nEvery $n \\ge 2$ factors into primes.\n",
     ("theorem", "Fundamental theorem of arithmetic", None, "Fundamental theorem of arithmetic",
      ["Fundamental theorem of arithmetic"])),
    ("Claim.\nThe map is injective.\n", ("claim", None, None, None, [])),
    ("Lemma 5. Let $x > 0$. Then $x^2 > 0$.\n", ("lemma", "Lemma 5", "5", None, ["Lemma 5"])),
    ("Definition\nA group is abelian if $ab = ba$.\n", ("definition", None, None, None, [])),
    ("LEMMA 6: Every finite group is finitely generated.\n", ("lemma", "Lemma 6", "6", None, ["Lemma 6"])),
    # an emphasised heading alone in its paragraph takes the paragraph under it (was an empty statement)
    ("**Theorem 8.**\n\nA paragraph under the heading.\n", ("theorem", "Theorem 8", "8", None, ["Theorem 8"])),
    # emphasised and Markdown headings are named by their printed number, as before (only plain-text headings changed)
    ("**Lemma 7** (foo).\nText.\n", ("lemma", "Lemma 7", "7", "foo", ["Lemma 7"])),
    ("**Lemma** (foo).\nText.\n", ("lemma", None, None, "foo", [])),
    ("## Lemma (bar)\n\nFor all $n$.\n", ("lemma", None, None, "bar", ["lemma-bar"])),
])
def test_plain_heading_shapes(tmp_path, text, expected):
    (s,) = read_source(write(tmp_path / "m.md", text)).statements
    assert (s.kind, s.label, s.number, s.title, s.labels) == expected
    assert s.body == text.rstrip("\n")


@pytest.mark.parametrize("text", [
    "Theorem 2.2 states that every prime is odd or two.\n",
    "Lemma (foo) is used below.\n",
    "Theorems are proved results.\n",
    "Proof of concept: nothing here.\n\n**Lemma 1.** A real one.\n",
    "Example 3 shows why.\n",
])
def test_sentences_that_start_with_a_statement_word_are_not_headings(tmp_path, text):
    cat = read_source(write(tmp_path / "m.md", text))
    assert [s.label for s in cat.statements] == (["Lemma 1"] if "Lemma 1" in text else [])
    assert all(s.proof is None for s in cat.statements)


@pytest.mark.parametrize("proof", ["Proof)", "Proof.", "Proof:", "Proof", "*Proof.*", "**Proof.**",
                                   "Proof of Lemma (first).", "Proof of Lemma 1.", "## Proof"])
def test_every_proof_line_opens_the_proof_of_the_statement_it_names_or_the_one_before(tmp_path, proof):
    text = f"Lemma 1 (first)\nA.\n\nLemma 2 (second)\nB.\n\n{proof}\nIt follows. ∎\n\nAfter the proof.\n"
    first, second = read_source(write(tmp_path / "m.md", text)).statements
    named = "first" in proof or "Lemma 1" in proof
    target, other = (first, second) if named else (second, first)
    assert target.proof is not None and other.proof is None
    assert target.proof.body == f"{proof}\nIt follows. ∎"
    assert (target.proof.provenance.line_start, target.proof.provenance.line_end) == (7, 8)


def test_statement_extents_lists_lowercase_italics_and_prose(tmp_path):
    text = """Lemma 1
*Let $G$ be a finite group.*

*Then every element of $G$ has finite order.*

A prose paragraph: not the lemma.

Theorem 2
Let $n \\ge 1$ and let

- $a \\le b$,
- $b \\le c$;

\\begin{align}
  a &\\le c
\\end{align}

where $a, b, c$ are integers.

Some prose again.
"""
    cat = read_source(write(tmp_path / "m.md", text))
    assert [(s.label, s.provenance.line_start, s.provenance.line_end) for s in cat.statements] == [
        ("Lemma 1", 1, 4), ("Theorem 2", 8, 18)]


def test_a_display_environment_with_a_blank_line_inside_stays_in_its_statement(tmp_path):
    text = "**Theorem 1.** We have\n\\begin{align*}\n  a &= b \\\\\n\n  c &= d\n\\end{align*}\n\nProse.\n"
    (thm,) = read_source(write(tmp_path / "m.md", text)).statements
    assert thm.body.endswith("\\end{align*}")


def test_a_section_named_like_a_statement_is_not_one(tmp_path):
    text = """## Theorem

\\begin{theorem}\\label{t}
Every bounded monotone sequence converges.
\\end{theorem}

## Proof

\\begin{proof}
Take the supremum.
\\end{proof}

## Lemma 2

## Definition (Cauchy)

A sequence is Cauchy if its terms get arbitrarily close.
"""
    cat = read_source(write(tmp_path / "m.md", text))
    assert shape(cat) == [("theorem", "t", None, (3, 5), (9, 11)), ("definition", None, "Cauchy", (15, 17), None)]
    assert cat.labels["lemma-2"].statement_index is None  # an empty heading is a section


def test_a_heading_proof_runs_to_the_next_heading_of_its_level(tmp_path):
    text = "## Theorem 1\n\nEvery $n$ is $n$.\n\n## Proof\n\nObvious.\n\n### Details\n\nReflexivity.\n\n## Notes\n\nProse.\n"
    (thm,) = read_source(write(tmp_path / "m.md", text)).statements
    assert (thm.provenance.line_start, thm.provenance.line_end) == (1, 3)
    assert (thm.proof.provenance.line_start, thm.proof.provenance.line_end) == (5, 11)


def test_a_name_given_twice_labels_only_its_first_statement(tmp_path):
    text = "Lemma (foo)\nA.\n\nLemma (foo)\nB.\n"
    cat = read_source(write(tmp_path / "m.md", text))
    assert [s.label for s in cat.statements] == ["foo", None]
    assert [(w.code, w.where) for w in cat.warnings] == [("printed-twice", "m.md:4")]
    assert [u.id for u in build_units(cat, KINDS)] == ["foo", "lemma-2"]


# -- mixed files -----------------------------------------------------------------------------

def test_mixed_emphasis_headings_environments_and_plain_headings_in_one_order():
    cat = read_source(MD / "parity_mixed.md")
    assert shape(cat) == [
        ("definition", "def-even", "Even", (3, 3), None),
        ("definition", "Definition 2", None, (5, 5), None),
        ("lemma", "lem:square", None, (7, 9), (11, 11)),  # *Proof.* after an environment: its proof
        ("theorem", "even_add_even", "even_add_even", (13, 14), (16, 17)),
        ("corollary", None, None, (19, 21), (23, 25)),  # \begin{proof} after it: its own
    ]
    assert [s.index for s in cat.statements] == [0, 1, 2, 3, 4]
    cor = cat.statements[4]
    # \ref and a printed reference inside the LaTeX proof, a link in the plain statement
    assert {(r.label, r.macro) for r in cor.references} == {("lem:square", "ref"), ("Theorem 3", "text")}
    assert [(r.label, r.macro) for r in cat.statements[3].references] == [("def-even", "link")]
    assert edges(cat) == {("lem-square", "def-even", True), ("even-add-even", "def-even", False),
                          ("corollary-1", "lem-square", True), ("corollary-1", "even-add-even", True)}


def test_a_tex_reference_in_a_markdown_statement_and_a_label_in_its_display(tmp_path):
    text = "**Lemma 1.** We have\n$$\\begin{equation}\\label{eq:one} x = 1 \\end{equation}$$\n\n" \
           "**Theorem 2.** By \\eqref{eq:one} and \\ref{nowhere}.\n"
    cat = read_source(write(tmp_path / "m.md", text))
    assert cat.labels["eq:one"].statement_index == 0
    assert [(r.label, r.macro) for r in cat.statements[1].references] == [("eq:one", "eqref"), ("nowhere", "ref")]


# -- malformed environments: strict and tolerant ---------------------------------------------

@pytest.mark.parametrize("suffix", [".md", ".tex"])
def test_a_proof_closed_by_end_definition(tmp_path, suffix):
    path = shutil.copy(MD / "bezout_proof_closed_by_definition.md", tmp_path / f"bezout{suffix}")
    with pytest.raises(InputError) as e:
        read_source(path)
    assert e.value.message == f"bezout{suffix}:17: \\end{{definition}} closes \\begin{{proof}} opened at line 12"
    assert "--tolerant" in e.value.hint and "[intake] tolerant" in e.value.hint
    cat = read_source(path, tolerant=True)
    assert shape(cat) == [("definition", "def:gcd", None, (3, 6), None),
                          ("theorem", "thm:bezout", "Bézout", (8, 10), (12, 17)),
                          ("corollary", "cor:coprime", None, (19, 21), (23, 25))]
    assert [(w.code, w.where, w.message) for w in cat.warnings] == [(
        "malformed-environment", f"bezout{suffix}:17",
        "\\end{definition} closes \\begin{proof} opened at line 12; read as its \\end{proof}")]
    assert edges(cat) == {("thm-bezout", "def-gcd", True), ("cor-coprime", "thm-bezout", True)}


@pytest.mark.parametrize("suffix", [".md", ".tex"])
def test_a_proof_never_closed_ends_at_the_next_statement(tmp_path, suffix):
    path = shutil.copy(MD / "wilson_proof_never_closed.md", tmp_path / f"wilson{suffix}")
    with pytest.raises(InputError) as e:
        read_source(path)
    assert e.value.message == f"wilson{suffix}:6: \\begin{{proof}} is never closed"
    cat = read_source(path, tolerant=True)
    assert shape(cat) == [("lemma", "lem:inverse", None, (1, 4), (6, 7)),
                          ("theorem", "thm:wilson", "Wilson", (9, 11), (13, 16))]
    lemma, thm = cat.statements
    assert lemma.proof.body.endswith("hence bijective.") and thm.parent is None
    assert [str(w) for w in cat.warnings] == [
        f"wilson{suffix}:6: \\begin{{proof}} is never closed; read up to line 7, before the statement, proof or "
        "heading at line 9"]
    assert edges(cat) == {("thm-wilson", "lem-inverse", True)}


def test_a_markdown_statement_heading_ends_an_environment_never_closed(tmp_path):
    text = "\\begin{lemma}\\label{a}\nA.\n\\end{lemma}\n\n\\begin{proof}\nCompute.\n\n" \
           "**Theorem 2.** By \\ref{a}.\n\nTheorem 3\nMore.\n"
    cat = read_source(write(tmp_path / "m.md", text), tolerant=True)
    assert shape(cat) == [("lemma", "a", None, (1, 3), (5, 6)), ("theorem", "Theorem 2", None, (8, 8), None),
                          ("theorem", "Theorem 3", None, (10, 11), None)]
    assert [(r.label, r.in_proof) for r in cat.statements[1].references] == [("a", False)]


def test_every_fault_is_listed_in_strict_mode_and_warned_in_tolerant_mode(tmp_path):
    text = ("\\begin{lemma}\\label{a} A. \\end{theorem}\n"  # misnamed
            "\\end{proof}\n"  # closes nothing
            "\\begin{theorem}\\label{b} B.\n\\begin{enumerate}\\item x\n\\end{theorem}\n"  # enumerate not closed
            "\\begin{lemma}\\label{c} C.\n")  # never closed
    path = write(tmp_path / "m.md", text)
    with pytest.raises(InputError) as e:
        read_source(path)
    assert e.value.message.splitlines() == [
        "malformed environments, 4 fault(s):",
        "  m.md:1: \\end{theorem} closes \\begin{lemma} opened at line 1",
        "  m.md:2: \\end{proof} without a matching \\begin{proof}",
        "  m.md:4: \\begin{enumerate} is never closed (\\end{theorem} at line 5 comes first)",
        "  m.md:6: \\begin{lemma} is never closed",
    ]
    cat = read_source(path, tolerant=True)
    assert [s.label for s in cat.statements] == ["a", "b", "c"]
    assert [w.where for w in cat.warnings] == ["m.md:1", "m.md:2", "m.md:4", "m.md:6"]
    assert {w.code for w in cat.warnings} == {"malformed-environment"}
    assert cat.statements[2].body == "\\begin{lemma}\\label{c} C."


# -- the shared environment scanner ----------------------------------------------------------

def _statements(name: str) -> bool:
    return name in ("lemma", "theorem", "proof", "claim")


@pytest.mark.parametrize("text, pairs, messages", [
    # misnamed \end: closes the open environment
    (r"\begin{proof} P \end{definition}", [("proof", None, "\\end{definition}")],
     ["\\end{definition} closes \\begin{proof} opened at line 1"]),
    # never closed: up to the next statement at its own level; what follows is no longer inside it
    ("\\begin{proof} P\n\\begin{lemma} L \\end{lemma}\n\\begin{proof} Q \\end{proof}",
     [("proof", None, "P"), ("lemma", None, "\\end{lemma}"), ("proof", None, "\\end{proof}")],
     ["\\begin{proof} is never closed"]),
    # a statement inside a closed list of the unclosed proof is not its boundary
    ("\\begin{proof} P \\begin{itemize}\\item \\begin{claim} C \\end{claim}\\end{itemize} R\n"
     "\\begin{lemma} L \\end{lemma}",
     [("proof", None, "R"), ("itemize", 0, "\\end{itemize}"), ("claim", 1, "\\end{claim}"),
      ("lemma", None, "\\end{lemma}")], ["\\begin{proof} is never closed"]),
    # a list never closed ends at the \end of the statement around it
    (r"\begin{theorem} T \begin{enumerate} \item x \end{theorem}",
     [("theorem", None, "\\end{theorem}"), ("enumerate", 0, "x")],
     ["\\begin{enumerate} is never closed (\\end{theorem} at line 1 comes first)"]),
    # an \end with nothing open is ignored
    (r"\end{proof} \begin{lemma} L \end{lemma}", [("lemma", None, "\\end{lemma}")],
     ["\\end{proof} without a matching \\begin{proof}"]),
])
def test_recover_environments_shapes(text, pairs, messages):
    spans, faults = recover_environments(text, starts_statement=_statements)
    assert [(s.name, s.parent, text[: s.end].rstrip()[-len(end):]) for s, (_, _, end) in zip(spans, pairs)] == pairs
    assert [f.message for f in faults] == messages and all(isinstance(f, Fault) and f.recovery for f in faults)
    for i, s in enumerate(spans):  # the tree is consistent: children inside their parent, listed by it
        if s.parent is not None:
            parent = spans[s.parent]
            assert parent.begin < s.begin and s.end <= parent.end and i in parent.children
    with pytest.raises(TexStructureError):  # the strict scanner still stops at the first fault
        scan_environments(text)


def test_extra_boundaries_end_an_environment_never_closed():
    text = "\\begin{proof} P\nQ\n## next heading\nR"
    spans, _ = recover_environments(text, starts_statement=_statements, boundaries=[text.index("##")])
    assert text[spans[0].begin : spans[0].end] == "\\begin{proof} P\nQ"


# -- one heading rule set: PDF and plain text ------------------------------------------------

def test_the_pdf_reader_uses_the_same_heading_rules(tmp_path):
    from tests.pdfgen import text_page, write_pdf

    pdf = write_pdf(tmp_path / "n.pdf", [text_page([
        [("B", "Lemma (coeff_zero_of_lt)")],
        "Let p have degree less than n. Then its coefficient of X^n is zero.",
        "",
        [("B", "Proof)")],
        " By the definition of the degree. QED",
        "",
        [("B", "Theorem 2.1")],
        "Every field has Krull dimension zero.",
    ])])
    cat = read_source(pdf)
    assert [(s.kind, s.title, s.number) for s in cat.statements] == [("lemma", "coeff_zero_of_lt", None),
                                                                    ("theorem", None, "2.1")]
    assert cat.statements[0].proof is not None and cat.statements[0].proof.body.startswith("Proof)")
    for line in ("Lemma (coeff_zero_of_lt)", "Proof)", "Theorem 2.1"):  # the rule the PDF reader applied
        assert line_heading(line) is not None


# -- plain-text headings in TeX files without environments -----------------------------------

def test_tex_file_without_environments_is_read_for_plain_headings(tmp_path):
    path = write(tmp_path / "n.tex", r"""\documentclass{article}
\begin{document}
\section{Degrees}

\noindent\textbf{Definition 1.} The degree $\deg p$ of a polynomial is the largest $i$ with $a_i \neq 0$.
\label{def:deg}

Lemma (coeff_zero_of_lt) % the Lean name
Let $\deg p < n$. Then $a_n = 0$ by Definition~\ref{def:deg}.

Proof. Immediate. \qed

Some closing prose.
\end{document}
""")
    cat = read_tex(path)
    assert shape(cat) == [("definition", "def:deg", None, (5, 6), None),
                          ("lemma", "coeff_zero_of_lt", "coeff_zero_of_lt", (8, 9), (11, 11))]
    assert [(r.label, r.macro) for r in cat.statements[1].references] == [("def:deg", "ref")]
    assert edges(cat) == {("coeff-zero-of-lt", "def-deg", False)}


def test_the_same_plain_text_as_md_and_as_tex_gives_the_same_statements(tmp_path):
    md = shutil.copy(MD / "coeff_zero_of_lt.md", tmp_path / "c.md")
    tex = shutil.copy(MD / "coeff_zero_of_lt.md", tmp_path / "c.tex")
    assert as_text(read_source(md), ".md") == as_text(read_source(tex), ".tex")
    # no TeX command at all: still a document when it has statement headings
    plain = write(tmp_path / "p.tex", "Theorem 2.1\nFor all n, n + 0 = n.\n\nProof. Induction.\n")
    assert shape(read_source(plain)) == [("theorem", "Theorem 2.1", None, (1, 2), (4, 4))]
    with pytest.raises(InputError, match="does not look like a TeX document"):
        read_source(write(tmp_path / "w.tex", "just words\n"))


def test_tex_files_with_environments_ignore_plain_headings(tmp_path):
    path = write(tmp_path / "n.tex", "Lemma 1. Not read: the file has environments.\n\n"
                 "\\begin{theorem}\\label{t} T. \\end{theorem}\n")
    assert [s.label for s in read_tex(path).statements] == ["t"]


def test_a_printed_reference_in_an_environment_matching_nothing_is_no_warning(tmp_path):
    text = "\\begin{theorem}\\label{t}\nAs in Theorem 3 of the survey.\n\\end{theorem}\n"
    md, tex = write(tmp_path / "s.md", text), write(tmp_path / "s.tex", text)
    assert read_source(md).warnings == read_source(tex).warnings == []
    # in a Markdown statement it is one (the author printed that number)
    assert [w.code for w in read_source(write(tmp_path / "p.md", "**Lemma 1.** As in Theorem 3.\n")).warnings] == [
        "printed-reference"]


def test_latex_in_markdown_does_not_follow_input(tmp_path):
    path = write(tmp_path / "m.md", "\\input{preamble}\n\n\\begin{lemma}\\label{a} A. \\end{lemma}\n")
    cat = read_source(path)
    assert cat.files == ["m.md"] and [s.label for s in cat.statements] == ["a"]


def test_a_tex_proof_never_closed_ends_at_the_next_section(tmp_path):
    path = write(tmp_path / "m.tex", "\\begin{lemma}\\label{a} A. \\end{lemma}\n\\begin{proof}\nP.\n"
                 "\\section{Next}\nProse about \\ref{a}.\n\\begin{theorem}\\label{b} B. \\end{theorem}\n")
    cat = read_tex(path, tolerant=True)
    assert shape(cat) == [("lemma", "a", None, (1, 1), (2, 3)), ("theorem", "b", None, (6, 6), None)]
    assert cat.statements[0].references == []  # the prose after the section is not the proof's


# -- fyan init / ingest ----------------------------------------------------------------------

def test_init_from_markdown_with_environments_and_the_tolerant_option(tmp_path, capsys):
    import json

    from fyan.cli import main
    from fyan.project import Project
    from fyan.specifier.ingest import plan_ingest

    good = shutil.copy(MD / "euclid_primes.md", tmp_path / "euclid.md")
    assert main(["init", str(tmp_path / "p"), "--source", str(good), "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert (result["format"], result["units"]) == ("markdown", 3)
    problem = (tmp_path / "p" / "units" / "thm-euclid" / "problem.tex").read_text()
    assert "% source: source/euclid.md, lines 20-22" in problem
    assert "% depends on: lem-factor (ref, proof; euclid.md:29 \\ref{lem:factor})" in problem
    assert problem.endswith("\\begin{theorem}[Euclid]\\label{thm:euclid}\nFor every $n \\in \\mathbb N$ there is a "
                            "prime $p$ with $p > n$.\n\\end{theorem}\n")

    bad = shutil.copy(MD / "bezout_proof_closed_by_definition.md", tmp_path / "bezout.md")
    assert main(["init", str(tmp_path / "q"), "--source", str(bad)]) == 4
    err = capsys.readouterr().err
    assert "bezout.md:17: \\end{definition} closes \\begin{proof} opened at line 12" in err and "--tolerant" in err
    assert not (tmp_path / "q").exists()
    assert main(["init", str(tmp_path / "q"), "--source", str(bad), "--tolerant"]) == 0
    err = capsys.readouterr().err
    assert "warning: bezout.md:17: \\end{definition} closes \\begin{proof} opened at line 12; read as its " \
           "\\end{proof}" in err
    config = tmp_path / "q" / "fyan.toml"
    assert "tolerant = true" in config.read_text()
    # the same key decides when the project's source is ingested again
    report = plan_ingest(Project.open(tmp_path / "q"))[3]
    assert report.units == 3 and [w.code for w in report.warnings if w.code == "malformed-environment"] == [
        "malformed-environment"]
    config.write_text(config.read_text().replace("tolerant = true", "tolerant = false"))
    with pytest.raises(InputError, match=r"bezout\.md:17: \\end\{definition\} closes \\begin\{proof\}"):
        plan_ingest(Project.open(tmp_path / "q"))


def test_blueprint_export_of_mixed_markdown_and_plain_tex_round_trips(tmp_path, capsys):
    from fyan.cli import main
    from tests.test_blueprint import round_trip

    tex = write(tmp_path / "plain.tex", "\\documentclass{article}\n\\begin{document}\n"
                "Definition (natDegree)\nThe degree of $p$ is the largest $i$ with $a_i \\neq 0$.\n\n"
                "Lemma (coeff_zero_of_lt)\nIf $\\deg p < n$ then $a_n = 0$.\n\nProof) By Definition (natDegree).\n"
                "\\end{document}\n")
    for name, source in (("mixed", MD / "parity_mixed.md"), ("plain", tex)):
        assert main(["init", str(tmp_path / name), "--source", str(source)]) == 0
        assert main(["export", "blueprint", str(tmp_path / name)]) == 0
        capsys.readouterr()
        before, after, _ = round_trip(tmp_path / name)
        assert after == before
    content = (tmp_path / "mixed" / "blueprint" / "src" / "content.tex").read_text()
    assert "\\begin{lemma}\n  \\label{lem:square}\n" in content and content.count("\\begin{lemma}") == 1
    assert "Theorem 3 (even_add_even)" not in content and "If $m$ and $n$ are even (\\ref{def-even})" in content
    plain = (tmp_path / "plain" / "blueprint" / "src" / "content.tex").read_text()
    assert "Lemma (coeff_zero_of_lt)" not in plain and "If $\\deg p < n$ then $a_n = 0$." in plain
    assert "Proof)" not in plain


def test_percent_is_a_comment_inside_an_environment_and_a_character_outside(tmp_path):
    text = ("\\begin{lemma}\\label{a}\nA. % a LaTeX comment: \\ref{hidden} is not read\n\\end{lemma}\n\n"
            "**Lemma 2.** True for 50% of primes, by \\ref{a}.\n\n"
            "Lemma (c)\nHolds 100% of the time; see \\eqref{a}.\n")
    cat = read_source(write(tmp_path / "m.md", text))
    assert [(s.label, [r.label for r in s.references]) for s in cat.statements] == [
        ("a", []), ("Lemma 2", ["a"]), ("c", ["a"])]
