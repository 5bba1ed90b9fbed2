"""TeX intake on the shapes real documents have: malformed math, every
reference form, labels as LaTeX reads them, what is not content, definition markup."""

from __future__ import annotations

import sys

import pytest

from fyan.errors import InputError
from fyan.intake.tex import REFERENCE_FORMS, read_tex
from fyan.specifier.units import build_units, sanitize_id
from tests.conftest import write

KINDS = ["theorem", "lemma", "proposition", "corollary", "claim", "conjecture", "definition"]


# -- malformed math --------------------------------------------------------------------------

@pytest.mark.parametrize("fault, message", [
    ("Let $x>0.", "'$' is never closed"),
    ("Then $$ x = 1 and", "'$$' is never closed"),
    (r"Put \( x = 1.", r"'\(' is never closed"),
    (r"Put \[ x = 1.", r"'\[' is never closed"),
    (r"Let \textbf{x be", "'{' is never closed"),
    (r"Let x} be", "'}' closes no group"),
    (r"Let \) be", r"\) closes no \("),
    (r"\[ a $b$ \]", "$ inside display math"),
])
def test_each_kind_of_malformed_math_is_found_with_its_line(tmp_path, fault, message):
    text = ("\\begin{theorem}\\label{a}\nfirst\n" + fault + "\n\\end{theorem}\n"
            "\\begin{theorem}\\label{b} second $y$. \\end{theorem}\n"
            "\\begin{theorem}\\label{c} third $z$. \\end{theorem}\n")
    path = write(tmp_path / "m.tex", text)
    with pytest.raises(InputError, match=r"malformed math in 1 statement") as e:
        read_tex(path)
    assert "m.tex:3: " in e.value.message and "(in theorem at line 1)" in e.value.message
    assert message in e.value.message
    assert "--tolerant" in e.value.hint
    # tolerant: a warning, and every statement still ends at its own \end
    cat = read_tex(path, tolerant=True)
    assert [s.label for s in cat.statements] == ["a", "b", "c"]
    assert [s.parent for s in cat.statements] == [None, None, None]
    assert cat.statements[0].body.endswith(fault + "\n\\end{theorem}")
    assert {w.code for w in cat.warnings} == {"malformed-math"} and cat.warnings[0].where == "m.tex:3"


def test_a_stray_dollar_does_not_merge_statements_or_make_edges(tmp_path):
    from fyan.specifier.dag import extract_edges

    path = write(tmp_path / "m.tex", "\\begin{theorem}\\label{a} Let $x>0. \\end{theorem}\n"
                 "\\begin{theorem}\\label{b} B $y$. \\end{theorem}\n\\begin{theorem}\\label{c} C. \\end{theorem}\n")
    cat = read_tex(path, tolerant=True)
    units = build_units(cat, KINDS)
    assert [u.id for u in units] == ["a", "b", "c"]
    assert extract_edges(cat, units).edges == []


def test_valid_math_is_not_a_fault(tmp_path):
    path = write(tmp_path / "m.tex", r"""\newcommand{\txt}[1]{\text{#1}}
\begin{theorem}\label{a}
For $x$$y$ and \$5, \verb|$| and
\begin{align}
a &= b \quad \text{if $x > 0$} \\[2pt]
% a comment line: not a paragraph break
c &= \txt{when $y$ is odd}
\end{align}
and \[ \left\{ x \right\} \mbox{for $x$} \] and \( \{1\} \).
\end{theorem}
""")
    cat = read_tex(path)
    assert cat.warnings == [] and [s.label for s in cat.statements] == ["a"]


def test_a_thousand_faulty_statements_give_one_clear_report(tmp_path):
    text = "".join(f"\\begin{{lemma}}\\label{{l{i}}} Let ${{x_{i} > 0. \\end{{lemma}}\n" for i in range(1000))
    path = write(tmp_path / "big.tex", text)
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(200)  # nothing in intake may depend on the input's nesting
    try:
        with pytest.raises(InputError) as e:
            read_tex(path)
        cat = read_tex(path, tolerant=True)
    finally:
        sys.setrecursionlimit(limit)
    assert e.value.message.startswith("malformed math in 1000 statement(s) or proof(s)")
    assert "... and" in e.value.message and e.value.message.count("\n") == 21
    assert len(cat.statements) == 1000 and all(s.parent is None for s in cat.statements)


def test_a_statement_inside_a_statement_outside_a_proof_is_a_warning(tmp_path):
    path = write(tmp_path / "m.tex", "\\begin{theorem}\\label{t} T.\n\\begin{lemma}\\label{l} L.\\end{lemma}\n"
                 "\\end{theorem}\n\\begin{proof} \\begin{claim}\\label{c} C.\\end{claim} \\end{proof}\n")
    cat = read_tex(path)
    assert [(s.label, s.parent) for s in cat.statements] == [("t", None), ("l", 0), ("c", 0)]
    (w,) = cat.warnings
    assert (w.code, w.where) == ("nested-statement", "m.tex:2") and "outside a proof" in w.message


# -- references and labels --------------------------------------------------------------------

FORMS = {  # every form of REFERENCE_FORMS, as a document writes it
    "ref": r"\ref{L}", "Ref": r"\Ref{L}", "pageref": r"\pageref{L}", "eqref": r"\eqref{L}",
    "autoref": r"\autoref{L}", "Autoref": r"\Autoref*{L}", "autopageref": r"\autopageref{L}",
    "nameref": r"\nameref{L}", "Nameref": r"\Nameref{L}", "vref": r"\vref{L}", "Vref": r"\Vref*{L}",
    "fullref": r"\fullref{L}", "subref": r"\subref{L}", "cref": r"\cref{L,M}", "Cref": r"\Cref*{L}",
    "cpageref": r"\cpageref{L}", "Cpageref": r"\Cpageref{L}", "labelcref": r"\labelcref{L}",
    "labelcpageref": r"\labelcpageref{L}", "uses": r"\uses{L}", "namecref": r"\namecref{L}",
    "nameCref": r"\nameCref{L}", "lcnamecref": r"\lcnamecref{L}", "namecrefs": r"\namecrefs{L}",
    "nameCrefs": r"\nameCrefs{L}", "lcnamecrefs": r"\lcnamecrefs{L}", "crefrange": r"\crefrange{L}{M}",
    "Crefrange": r"\Crefrange*{L}{M}", "cpagerefrange": r"\cpagerefrange{L}{M}",
    "Cpagerefrange": r"\Cpagerefrange{L}{M}", "vpageref": r"\vpageref[above][below]{L}",
    "vrefrange": r"\vrefrange[here]{L}{M}", "vpagerefrange": r"\vpagerefrange{L}{M}",
    "hyperref": r"\hyperref[L]{the lemma}", "zcref": r"\zcref[S]{L}", "zcpageref": r"\zcpageref{L}",
    "zref": r"\zref[page]{L}",
}


def test_every_reference_form_is_read_and_an_unknown_label_in_any_is_reported(tmp_path):
    from fyan.errors import DagError
    from fyan.specifier.dag import extract_edges

    assert set(FORMS) == set(REFERENCE_FORMS)  # a new form gets a test
    body = "".join(f"\\begin{{theorem}}\\label{{t-{name}}} By {form}.\\end{{theorem}}\n" for name, form in FORMS.items())
    lemmas = "\\begin{lemma}\\label{L} x\\end{lemma}\n\\begin{lemma}\\label{M} y\\end{lemma}\n"
    cat = read_tex(write(tmp_path / "m.tex", lemmas + body))
    for s in cat.statements[2:]:
        name = s.label[2:]
        assert {r.label for r in s.references} >= {"L"}, name
        assert {r.macro for r in s.references} == {name}, name
    units = build_units(cat, KINDS)
    edges = extract_edges(cat, units).edges
    assert {e.unit for e in edges} == {u.id for u in units[2:]}
    # the same references to labels defined nowhere: every one is reported
    bad = body.replace("{L}", "{nowhere}").replace("[L]", "[nowhere]").replace("{L,M}", "{nowhere}").replace("{M}", "{x}")
    cat = read_tex(write(tmp_path / "n.tex", bad))
    units = build_units(cat, KINDS)
    with pytest.raises(DagError, match=r"reference\(s\) to labels defined nowhere"):
        extract_edges(cat, units)
    warned = {w.message.split(" in ")[1].split(":")[0] for w in extract_edges(cat, units, unknown_references="warn").warnings}
    assert warned == {u.id for u in units}  # every form, each in its own theorem


def test_document_macros_around_hyperref_and_vref_are_references(tmp_path):
    path = write(tmp_path / "m.tex", r"""\newcommand{\lemlink}[1]{\hyperref[#1]{Lemma~\ref*{#1}}}
\NewDocumentCommand{\see}{m}{(see \vref{#1})}
\begin{document}
\begin{lemma}\label{a} A.\end{lemma}
\begin{theorem}\label{t} By \lemlink{a} and \see{a}.\end{theorem}
\end{document}
""")
    cat = read_tex(path)
    assert [(r.label, r.macro) for r in cat.by_label("t").references] == [("a", "lemlink"), ("a", "see")]


def test_labels_are_read_as_latex_reads_them(tmp_path):
    from fyan.errors import DagError
    from fyan.specifier.dag import extract_edges

    path = write(tmp_path / "m.tex", "\\begin{lemma}\n  \\label{Foo.bar,\n    Foo.baz}\nA.\\end{lemma}\n"
                 "\\begin{lemma}\\label{x%\n   y} B.\\end{lemma}\n"
                 "\\begin{theorem}\\label{t} By \\ref{Foo.bar, Foo.baz} and \\ref{xy}.\\end{theorem}\n"
                 "\\begin{theorem}\\label{u}\\uses{Foo.bar} U.\\end{theorem}\n")
    cat = read_tex(path)
    assert [s.label for s in cat.statements] == ["Foo.bar, Foo.baz", "xy", "t", "u"]
    units = build_units(cat, KINDS)
    assert units[0].id == "foo-bar-foo-baz"
    with pytest.raises(DagError, match=r"m\.tex:8: \\uses\{Foo\.bar\} in u: unknown label \(the label "
                       r"'Foo\.bar, Foo\.baz' at m\.tex:2 has a comma in it"):
        extract_edges(cat, units)
    edges = extract_edges(cat, units, unknown_references="warn").edges
    assert {(e.unit, e.depends_on) for e in edges} == {("t", "foo-bar-foo-baz"), ("t", "xy")}
    # no line of problem.tex's provenance block is broken by the label's line break
    from fyan.specifier.problem import provenance_block

    block = provenance_block(units[0], cat, [], "source/")
    assert "% label: Foo.bar, Foo.baz" in block.split("\n")


@pytest.mark.parametrize("label, uid", [("thm:été", "thm-ete"), ("lem:Erdős–Straus", "lem-erdos-straus"),
                                         ("def:Schrödinger", "def-schrodinger"), ("thm:Gödel 1", "thm-godel-1")])
def test_unit_ids_transliterate_non_ascii_letters(label, uid):
    assert sanitize_id(label) == uid


# -- what is not content ------------------------------------------------------------------------

def test_preamble_and_macro_bodies_are_not_content(tmp_path):
    path = write(tmp_path / "m.tex", r"""\documentclass{amsart}
\newtheorem{theorem}{Theorem}
\newenvironment{bigthm}{\begin{theorem}}{\end{theorem}}
\newenvironment{pf}{\begin{proof}}{\end{proof}}
\renewenvironment{remark}{\begin{lemma}}{\end{lemma}}
\newcommand{\statement}{\begin{lemma} phantom \end{lemma}}
\def\another#1{\begin{corollary}#1\end{corollary}}
\begin{document}
\begin{bigthm}\label{main} The main result.\end{bigthm}
\begin{pf} By hand. \end{pf}
\end{document}
""")
    cat = read_tex(path)
    assert [(s.kind, s.env, s.label, s.provenance.line_start) for s in cat.statements] == [
        ("theorem", "bigthm", "main", 9)]
    assert cat.statements[0].proof is not None and "By hand" in cat.statements[0].proof.body
    assert cat.warnings == []  # no "proof with no statement"
    assert any(m.startswith("\\newenvironment{bigthm}") for m in cat.macros)


def test_switched_off_blocks_are_skipped(tmp_path):
    path = write(tmp_path / "m.tex", r"""\newif\ifdraft
\newif\ifshow \showtrue
\excludecomment{draftonly}
\newenvironment{hide}{\comment}{\endcomment}
\begin{document}
\iffalse \begin{lemma}\label{a} no $\iff$ \end{lemma} \else \begin{lemma}\label{b} yes \end{lemma} \fi
\if{false} \begin{lemma}\label{c} no \end{lemma} \fi
\if0 \begin{lemma}\label{d} no \end{lemma} \fi
\ifnum0=1 \begin{lemma}\label{e} no \end{lemma} \fi
\iftrue \begin{lemma}\label{f} yes \end{lemma} \else \begin{lemma}\label{g} no \end{lemma} \fi
\ifdraft \begin{lemma}\label{h} no \end{lemma} \fi
\ifshow \begin{lemma}\label{i} yes \end{lemma} \fi
\begin{draftonly} \begin{lemma}\label{j} no \end{lemma} \end{draftonly}
\begin{hide} \begin{lemma}\label{k} no \end{lemma} \end{hide}
\ifplastex \begin{lemma}\label{l} kept: unknown switch \end{lemma} \fi
\end{document}
""")
    cat = read_tex(path)
    assert [s.label for s in cat.statements] == ["b", "f", "i", "l"]


def test_missing_files_that_latex_generates_are_warnings(tmp_path):
    path = write(tmp_path / "m.tex", "\\input{paper.out}\n\\input{paper.bbl}\n\\begin{lemma}\\label{a} x\\end{lemma}\n"
                 "\\input{paper.toc}\n")
    cat = read_tex(path)
    assert [s.label for s in cat.statements] == ["a"]
    assert [(w.code, w.where) for w in cat.warnings] == [
        ("generated-input", "m.tex:1"), ("generated-input", "m.tex:2"), ("generated-input", "m.tex:4")]
    with pytest.raises(InputError, match=r"m2\.tex:1: included file 'paper\.tex2' not found"):
        read_tex(write(tmp_path / "m2.tex", "\\input{paper.tex2}\n"))


# -- definition markup ------------------------------------------------------------------------

def test_terms_come_from_definition_markup_in_a_defining_phrase(tmp_path):
    path = write(tmp_path / "m.tex", r"""\newcommand{\vocab}[1]{\textbf{#1}}
\def\dfn#1{{\em #1}}
\begin{definition} A group is {\it abelian} if $ab=ba$. We call {\em nilpotent} a group with a central series.
A {\bf solvable group} is one with a subnormal series. \end{definition}
\begin{definition} We say a ring is \vocab{Artinian} if it satisfies the descending chain condition,
and \dfn{Noetherian} if it satisfies the ascending one. \end{definition}
\begin{definition} There is \emph{the} unique map; it is \emph{not} injective, and the sum is \emph{finite} modulo $N$.
Let \textit{Sets} be the category of sets. A \emph{Calder\'on--Zygmund operator} is bounded. \end{definition}
""")
    a, b, c = read_tex(path).statements
    assert a.defined_terms == ["abelian", "nilpotent", "solvable group"]
    assert b.defined_terms == ["Artinian", "Noetherian"]  # names keep their case
    # "the", "not", "finite": emphasis only; a capitalised name keeps its case; accents folded
    assert c.defined_terms == ["Sets", "Calderon-Zygmund operator"]
