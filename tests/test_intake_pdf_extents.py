"""PDF statement extents on PDFs that the real pdflatex builds here from TeX written below.

Each statement the PDF reader finds is compared with the same statement cut from the TeX source by
the TeX reader: their words (three letters or more, outside math, hyphens and line breaks
removed) must be equal, so a statement that runs on by one sentence, or has a caption, running
head or footnote spliced in, fails. Tests skip where pdflatex is missing (CI installs Debian's
texlive-latex-recommended).
"""

from __future__ import annotations

import re
import unicodedata
from pathlib import Path

import pytest

from fyan.intake.pdf import read_pdf
from fyan.intake.tex import read_tex
from tests.pdfgen import latex_pdf, needs_pdflatex

pytestmark = needs_pdflatex

PREAMBLE = r"""
\usepackage{amsmath,amsthm}
\newtheorem{theorem}{Theorem}[section]
\newtheorem{lemma}[theorem]{Lemma}
\theoremstyle{definition}
\newtheorem{definition}[theorem]{Definition}
\newtheorem{example}[theorem]{Example}
\newtheorem*{nonexample}{Non-example}
\theoremstyle{remark}
\newtheorem{remark}[theorem]{Remark}
\newcommand\filler{Some running text of the section that fills the page with words and sentences. }
"""


def tex_words(tex: str) -> list[str]:
    """The words of a statement's TeX (as cut by the TeX reader), math and markup left out."""
    text = re.sub(r"\\begin\{(equation|align|gather|multline|figure|table)\*?\}.*?\\end\{\1\*?\}", " ", tex, flags=re.S)
    text = re.sub(r"\\\[.*?\\\]|\$[^$]*\$", " ", text, flags=re.S)
    text = re.sub(r"\\(?:begin|end)\{[^}]*\}|\\label\{[^}]*\}", " ", text)
    text = re.sub(r"\\(?:footnote|caption)\{[^}]*\}", " ", text)
    text = re.sub(r"\\[A-Za-z]+\*?", " ", text.replace("\\\\", "\n"))
    return _words(text.replace("{", "").replace("}", ""))


def _words(text: str) -> list[str]:
    text = unicodedata.normalize("NFKC", text)
    text = re.sub(r"-\s*\n\s*", "", text).replace("-", "")
    return [w.lower() for w in re.findall(r"[A-Za-z]{3,}", text)]


def pdf_words(body: str) -> list[str]:
    """The words of a PDF statement without its printed heading word ("Definition 1.1.")."""
    return _words(re.sub(r"^\S+ (?:[\d.]+)?", "", body))


def build(tmp_path: Path, body: str, cls: str = "amsart", options: str = "", name: str = "doc"):
    tex = rf"\documentclass[{options}]{{{cls}}}" + PREAMBLE + "\\begin{document}\n" + body + "\n\\end{document}\n"
    pdf = latex_pdf(tmp_path, tex, name)
    return read_tex(tmp_path / f"{name}.tex"), read_pdf(pdf)


def assert_same_extents(tex_cat, pdf_cat, kinds=("definition", "theorem", "lemma", "example", "remark")) -> None:
    """Every numbered statement of the TeX is found in the PDF, in order, with the same words (the
    PDF's unnumbered ones, "Remark." set in bold, have no numbered environment in the TeX)."""
    expected = [s for s in tex_cat.statements if s.kind in kinds and s.env != "nonexample"]
    found = [s for s in pdf_cat.statements if s.kind in kinds and s.number]
    assert [s.kind for s in found] == [s.kind for s in expected]
    for t, p in zip(expected, found):
        assert pdf_words(p.body) == tex_words(t.body), f"{p.label}: PDF\n{p.body}\n--- TeX\n{t.body}"


# -- displays ending a statement, then prose ---------------------------------------------------------

DISPLAYS = r"""
\section{Monoids}
Some introductory prose that sets the scene for the statements below and runs on for a while.

\begin{theorem}
Every monoid has exactly one identity element, and
\begin{equation} e = f \end{equation}
\end{theorem}
This is a simple consequence of the definition, and we shall use it often.

\begin{theorem}
For all elements the following two laws hold:
\begin{align} x y &= y x \\ x e &= x \end{align}
\end{theorem}
The second law is the definition of an identity element once more.

\begin{lemma}
For every element $x$ we have
\[ x e = x. \]
\end{lemma}

Lemmas of this kind are proved by unwinding the definitions.

\begin{definition}
A monoid is a semigroup with an identity element $e$ such that
\[ e x = x e = x \]
for every element $x$ of the monoid.
\end{definition}
Monoids are everywhere in mathematics and computer science.

\begin{definition}
The opposite monoid has the product
\begin{equation} a * b = b a \end{equation}
\end{definition}

Opposite monoids appear when actions on the right are turned into actions on the left.
"""


def test_a_display_ending_a_statement_ends_it_before_the_prose_after_it_amsart(tmp_path):
    tex, pdf = build(tmp_path, DISPLAYS)
    assert_same_extents(tex, pdf)
    # the display inside the definition does not end it: the sentence goes on after it
    assert pdf.statements[3].body.endswith("for every element x of the monoid.")


def test_a_display_ending_a_statement_ends_it_before_the_prose_after_it_book(tmp_path):
    tex, pdf = build(tmp_path, DISPLAYS.replace(r"\section", r"\chapter"), cls="book")
    assert_same_extents(tex, pdf)


PARSKIP = r"""
\section{Monoids}
Some introductory prose that sets the scene for the definitions below and runs on for a while
longer than one line of the page.

\begin{definition}
A monoid is a semigroup with an identity element $e$ such that
\[ e x = x e = x \]
for every element $x$ of the monoid.
\end{definition}
Monoids are everywhere in mathematics and computer science.

\begin{definition}
The opposite monoid has the product
\[ a * b = b a. \]
\end{definition}
Opposite monoids appear when actions on the right are turned into actions on the left.

\begin{definition}
A monoid homomorphism is a map $f$ that keeps the identity and the product:
\[ f(x y) = f(x) f(y). \]
\end{definition}
Homomorphisms of monoids compose, and the identity map is one of them.

\begin{definition}
The kernel pair of a homomorphism $f$ is the set of pairs with
\[ f(x) = f(y). \]
Then the kernel pair is a congruence of the monoid.
\end{definition}
Congruences and kernel pairs are two views of the same thing.
"""


def test_a_display_ending_a_definition_in_a_document_without_indents(tmp_path):
    """parskip: no paragraph indent, space between paragraphs; after a display that ends a
    sentence, prose set lower than the display's own spacing starts a paragraph ("Then ..."
    goes on with the statement)."""
    tex = (r"\documentclass{article}" + PREAMBLE + "\\usepackage{parskip}\n\\begin{document}\n" + PARSKIP
           + "\\end{document}\n")
    pdf = read_pdf(latex_pdf(tmp_path, tex, "doc"))
    assert_same_extents(read_tex(tmp_path / "doc.tex"), pdf)
    assert pdf.statements[3].body.endswith("Then the kernel pair is a congruence of the monoid.")


# -- run-in headings start a block of their own -----------------------------------------------------

RUN_IN = r"""
\section{Examples}
Some introductory prose that sets the scene for the examples below and runs on for a while.

\begin{example}
The natural numbers under addition form a monoid.
\end{example}
\paragraph{Non-examples} The odd integers under addition do not form a monoid, since the sum of two odd
integers is even.

\begin{example}
The strings over an alphabet under concatenation form a monoid.
\end{example}
\begin{nonexample}
The strings of odd length under concatenation do not form a monoid.
\end{nonexample}

\begin{example}
The functions from a set to itself under composition form a monoid.
\end{example}
\noindent\textbf{Remark.} The same holds for the bijections, which even form a group.

\begin{definition}
A monoid is commutative if any two of its elements commute.
\end{definition}
\noindent\textit{Exercise.} Show that the monoid of strings is not commutative.

\begin{example}
The integers under multiplication form a commutative monoid.
\end{example}
\noindent Note: this monoid is not a group, since two has no inverse.
"""


@pytest.mark.parametrize("cls", ["amsart", "article"])
def test_run_in_headings_after_an_example_start_a_block_of_their_own(tmp_path, cls):
    tex, pdf = build(tmp_path, RUN_IN, cls=cls)
    assert_same_extents(tex, pdf)
    assert not any("odd" in s.body for s in pdf.statements if s.kind == "example")


# -- floats, page furniture -------------------------------------------------------------------------

FLOAT_PAGE = r"""
\chapter{Semigroups}
\filler\filler\filler\filler\filler\filler\filler\filler\filler\filler

\clearpage
\vspace*{\dimexpr\textheight-9\baselineskip\relax}
\filler

\begin{definition}
A set with an operation is a semigroup if the operation is associative. We call the operation
multiplication and write it by juxtaposition.
\begin{figure}[p]
\centering
\fbox{\parbox[c][0.6\textheight][c]{0.8\textwidth}{\centering A picture of a semigroup drawn as a diagram}}
\caption{The multiplication table of a small semigroup of order three, drawn as a diagram.}
\end{figure}
Whenever two elements are given their product is again an element of the set, and brackets may be
moved freely. A semigroup is commutative if any two of its elements commute with each other, and
the word abelian is used as well for such semigroups. A semigroup with one element is trivial, and
a semigroup in which every element is idempotent is a band. Bands are the semigroups that we shall
meet most often in this chapter, with their products written as juxtaposition.
\end{definition}
The notion of a semigroup is very old and goes back to the early twentieth century.

\begin{theorem}
Every finite semigroup has an idempotent element.
\end{theorem}
\filler\filler\filler
"""


def test_a_float_page_is_never_spliced_into_a_definition(tmp_path):
    tex, pdf = build(tmp_path, FLOAT_PAGE, cls="book")
    d = pdf.statements[0]
    assert d.provenance.page_end == d.provenance.page_start + 2  # the float page lies inside it
    assert_same_extents(tex, pdf)
    assert "Figure" not in d.body and "picture" not in d.body


FLOAT_HERE = r"""
\section{Semigroups}
Some introductory prose that sets the scene for the statements below and runs on for a while.

\begin{definition}
A set with an operation is a semigroup if the operation is associative, and we call the
operation multiplication, writing it by juxtaposition.
\begin{figure}[h]
\centering
\fbox{A picture of a semigroup drawn as a diagram with many arrows}
\caption{The multiplication table of a small semigroup of order three.}
\end{figure}
A semigroup is commutative if any two of its elements commute with each other.
\end{definition}
The notion of a semigroup is very old and goes back to the early twentieth century.

\begin{definition}
A semigroup is a band if every element is idempotent.
\end{definition}
\begin{table}[h]
\centering
\begin{tabular}{ccc} one & two & three \\ four & five & six \end{tabular}
\caption{Numbers written out in words, in two rows of three.}
\end{table}
Bands were studied by many authors in the middle of the last century.

\begin{theorem}
Every band is a semilattice of rectangular bands.
\end{theorem}
\begin{figure}[t]
\centering
\fbox{Another picture, of a band this time}
\caption{A band drawn as a diagram.}
\end{figure}
The proof of this theorem is long and we leave it out.
"""


def test_a_float_inside_or_after_a_statement_is_left_out_of_it(tmp_path):
    tex, pdf = build(tmp_path, FLOAT_HERE)
    assert_same_extents(tex, pdf)
    assert not any(re.search(r"Figure|Table|picture|three|four", s.body) for s in pdf.statements)


FURNITURE = r"""
\title{A short note on semigroups}
\maketitle
\section{Semigroups}
\filler\filler\filler\filler\filler\filler\filler\filler\filler\filler

\clearpage
\vspace*{\dimexpr\textheight-6\baselineskip\relax}
\filler

\begin{definition}
A set with an operation is a semigroup\footnote{The name goes back to the early twentieth century.}
if the operation is associative. We call the operation multiplication and write it by juxtaposition.
Whenever two elements are given their product is again an element of the set, and brackets may be
moved freely. A semigroup is commutative if any two of its elements commute with each other, and
the word abelian is used as well for such semigroups. A semigroup with one element is trivial.
\end{definition}

The notion of a semigroup is very old and goes back to the early twentieth century.
"""


def test_running_heads_page_numbers_and_footnotes_are_left_out_of_a_statement(tmp_path):
    tex, pdf = build(tmp_path, FURNITURE)
    (d,) = pdf.statements
    assert d.provenance.page_start != d.provenance.page_end  # it runs across a page break
    assert_same_extents(tex, pdf)
    assert "SEMIGROUPS" not in d.body and "name goes back" not in d.body


# -- two columns ------------------------------------------------------------------------------------

TWO_COLUMNS = r"""
\section{Semigroups}
\filler\filler\filler\filler\filler\filler\filler\filler

\filler\filler\filler\filler\filler\filler\filler\filler

\filler\filler\filler\filler\filler\filler\filler\filler

\filler\filler\filler\filler\filler\filler\filler\filler

\filler\filler\filler\filler\filler\filler

\begin{definition}
A set with an operation is a semigroup if the operation is associative. We call the operation
multiplication and write it by juxtaposition, and whenever two elements are given their product is
again an element of the set.
\end{definition}
The notion of a semigroup is very old and goes back to the early twentieth century.

\begin{theorem}
Every finite semigroup has an idempotent element, and
\[ e e = e. \]
\end{theorem}
This is a classical result, and it has many proofs in the literature.

\begin{figure}[t]
\centering
\fbox{A small picture}
\caption{A semigroup in one column.}
\end{figure}

\begin{example}
The positive integers under addition form a semigroup without an identity.
\end{example}
\paragraph{Non-examples} The integers under subtraction do not form a semigroup.

\begin{definition}
A semigroup is a monoid if it has an identity element.
\end{definition}
Monoids are everywhere in mathematics and computer science.
\filler\filler\filler
"""


# a definition from the foot of the right column to the next page, where a float spanning both
# columns (figure*) is set at the top
ACROSS_COLUMNS = r"""
\section{Semigroups}
\filler\filler\filler\filler\filler\filler

\newpage
\vspace*{\dimexpr\textheight-5\baselineskip\relax}
\begin{definition}
A set with an operation is a semigroup if the operation is associative.
\begin{figure*}
\centering
\fbox{A wide picture of a semigroup}
\caption{A semigroup drawn across both columns of the page, with all of its elements and products.}
\end{figure*}
We call the operation multiplication and write it by juxtaposition, and whenever two elements are
given their product is again an element of the set, and brackets may be moved freely.
\end{definition}
The notion of a semigroup is very old and goes back to the early twentieth century.
\filler\filler
"""


@pytest.mark.parametrize("cls", ["amsart", "article"])
def test_two_column_pages(tmp_path, cls):
    tex, pdf = build(tmp_path / "across", ACROSS_COLUMNS, cls=cls, options="twocolumn")
    assert_same_extents(tex, pdf)
    d = pdf.statements[0]
    assert d.provenance.page_end == d.provenance.page_start + 1
    assert "Figure" not in d.body and "wide picture" not in d.body
    tex, pdf = build(tmp_path / "columns", TWO_COLUMNS, cls=cls, options="twocolumn")
    assert_same_extents(tex, pdf)


# -- references and defined terms ---------------------------------------------------------------------

REFERENCES = r"""
\section{Semigroups}
Some introductory prose that sets the scene for the statements below and runs on for a while.

\begin{definition}
A set with an associative operation is a \textbf{semi-}\\\textbf{group}, and an operation that
gives one product for every pair is a \textbf{well-}\\\textbf{defined} operation; a semigroup
contained in another is a \textbf{sub-}\\\textbf{semigroup}.
\end{definition}
Every well-defined associative operation gives a semigroup; semigroups are everywhere.

\begin{lemma}
Every semigroup of order one is commutative.
\end{lemma}

\begin{theorem}
By lemma 1.2, every semigroup of order one is a monoid.
\end{theorem}

\begin{theorem}
A semigroup is trivial, by theorem 1.3 and Lemma 1.2, when it has one element.
\end{theorem}

\begin{remark}
Theorems 1.3 and 1.4 are used in definition 1.1's examples, as is lemma 1.2.
\end{remark}
"""


def test_lower_case_references_and_hyphenated_defined_terms(tmp_path):
    tex, pdf = build(tmp_path, REFERENCES)
    assert_same_extents(tex, pdf)
    d, lemma, t1, t2, remark = pdf.statements
    assert d.defined_terms == ["semigroup", "well-defined", "subsemigroup"]
    assert [r.label for r in t1.references] == ["Lemma 1.2"]
    assert [r.label for r in t2.references] == ["Theorem 1.3", "Lemma 1.2"]
    assert [r.label for r in remark.references] == ["Theorem 1.3", "Theorem 1.4", "Definition 1.1", "Lemma 1.2"]


# -- a statement much longer than the document's usual -------------------------------------------------

def test_a_statement_much_longer_than_the_documents_usual_has_a_warning(tmp_path):
    short = "\n".join(rf"\begin{{lemma}} Every semigroup of order {n} is finite. \end{{lemma}}" for n in range(2, 7))
    long = r"\begin{definition}" + "A semigroup is large if it has many elements. " * 60 + r"\end{definition}"
    tex, pdf = build(tmp_path, r"\section{Long}" + "\n" + short + "\n\n" + long + "\n\nProse after it.\n")
    assert_same_extents(tex, pdf)
    warnings = [w for w in pdf.warnings if w.code == "pdf-extent"]
    assert len(warnings) == 1
    assert "Definition 1.6" in warnings[0].message and "usually take 1" in warnings[0].message
