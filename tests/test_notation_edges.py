"""Notation edges and redundant keyed edges (measured with scripts/dag_quality.py).

Small documents of our own, one per rule: a symbol a definition introduces makes an edge from
the later statements that use it (macro, "we write", ``:=``, best match, definition in force);
generic symbols make none; a notation edge that would close a cycle is a mention; a term,
title or notation edge the graph already implies is a mention naming the path (rule 5)."""

from __future__ import annotations

import json
import sys

from fyan.intake.tex import read_tex
from fyan.specifier.dag import extract_edges, validate
from fyan.specifier.notation import Macros, definition_notation, statement_uses
from fyan.specifier.units import build_units
from tests.conftest import ROOT, write

KINDS = ["theorem", "lemma", "proposition", "corollary", "claim", "conjecture", "definition"]


def edges_of(path, **kw):
    cat = read_tex(path)
    units = build_units(cat, KINDS)
    return cat, units, extract_edges(cat, units, **kw)


def keyed(found, origins=("term", "title", "notation")):
    return {(e.unit, e.depends_on, e.origin) for e in found.edges if e.origin in origins}


def symbols(body: str, macros: str = "") -> list[tuple[str, bool]]:
    m = Macros.from_definitions([macros]) if macros else Macros()
    return [(n.shown(), n.generic) for n in definition_notation(body, m, [], None)]


# -- what a definition introduces ----------------------------------------------------------------

def test_the_defining_forms_each_give_the_symbol_they_define():
    assert symbols(r"The \emph{density} of a packing $\mathcal{P}$ is \[ \Delta_{\mathcal{P}} := \limsup_R x. \]") \
        == [(r"\Delta_{\mathcal P}", False)]  # the left side of :=, not the packing P
    assert symbols(r"We write $d[X;Y]$ for the distance.") == [("d[·;·]", False)]
    assert symbols(r"Denote it by $N^{int}_\varepsilon(A)$.") == [(r"N_{\varepsilon}^{int}(·)", False)]
    assert symbols(r"Define \begin{equation} H_2 = \Theta_2^4, \quad H_3 = \Theta_3^4. \end{equation}") \
        == [("H_2", False), ("H_3", False)]
    assert symbols(r"\begin{align*} C_p = \max\{1, 2\} \end{align*}") == [("C_p", False)]  # the whole statement
    assert symbols(r"the fibre $\Phi_n$ stands for the polynomial") == [(r"\Phi_n", False)]
    assert symbols(r"\[ \mathcal{F}(f)(y) = \widehat{f}(y) := \int f \]") == [
        (r"\mathcal F(·)", False), (r"\hat f(·)", False)]  # each member of a chain A = B :=
    assert symbols(r"We define the chaining sequence, denoted $(\bar{x}_i)_{i \le k}$, by") == [(r"\bar x_i", False)]
    assert symbols(r"A set is \emph{small} if it is finite.") == []  # no formula, no symbol


def test_macros_are_expanded_alike_and_a_definition_owns_the_macro_it_defines():
    macros = r"\newcommand{\Pa}{\mathcal{P}} \newcommand{\Lat}{\Lambda_8} \newcommand{\E}{E} \newcommand{\N}{\mathbb{N}}"
    assert symbols(r"We write $\Lat$ for the lattice.", macros) == [(r"\Lambda_8", False)]
    assert symbols(r"We write $\E$ for the expectation.", macros) == [("E", False)]  # owned: not generic
    assert symbols(r"$\N^+ := \{1, 2, \ldots\}$", macros) == [(r"\mathbb N^+", True)]  # \N is not owned
    m = Macros.from_definitions([macros])
    uses = [a.shown() for a in statement_uses(r"Then $\Delta_{\Pa(cX)}(cR) = \Lat$.", m)]
    assert r"\Delta_{\mathcal P(cX)}(·)" in uses and r"\Lambda_8" in uses


# -- edges ---------------------------------------------------------------------------------------

def test_notation_edges_from_a_macro_from_we_write_and_from_a_definition(tmp_path):
    path = write(tmp_path / "m.tex", r"""\newcommand{\Lat}{\Lambda_8}
\begin{definition}\label{e8} We write $\Lat$ for the lattice spanned by the roots. \end{definition}
\begin{definition}\label{dist} For random variables we write $d[X;Y]$ for the Ruzsa distance. \end{definition}
\begin{definition}\label{fd} For a packing $P$ put $\Delta_{P}(R) := \mathrm{vol}(P \cap B_R) / \mathrm{vol}(B_R)$.
\end{definition}
\begin{lemma}\label{a} $\Lat$ is unimodular. \end{lemma}
\begin{lemma}\label{b} The lattice $\Lambda_8$ is even. \end{lemma}
\begin{lemma}\label{c} $d[X;Z] \le d[X;Y] + d[Y;Z]$. \end{lemma}
\begin{lemma}\label{e} For every $c > 0$, $\Delta_{cP}(cR) = \Delta_P(R)$. \end{lemma}
\begin{lemma}\label{f} The proof uses nothing. \end{lemma}
\begin{proof} Here $\Lat$ and $d[X;Y]$ appear, in the proof only. \end{proof}
""")
    _, _, found = edges_of(path)
    assert keyed(found) == {("a", "e8", "notation"), ("b", "e8", "notation"), ("c", "dist", "notation"),
                            ("e", "fd", "notation")}
    by_pair = {(e.unit, e.depends_on): e for e in found.edges}
    assert by_pair[("a", "e8")].evidence == r"m.tex:6 notation $\Lambda_8$"
    assert by_pair[("c", "dist")].evidence == "m.tex:8 notation $d[·;·]$"
    _, _, off = edges_of(path, notation_edges=False)
    assert keyed(off) == set()  # [intake] notation_edges = false


def test_generic_single_letters_numbers_and_standard_sets_give_no_edge(tmp_path):
    path = write(tmp_path / "m.tex", r"""\newcommand{\E}{E}
\begin{definition}\label{f} Define $f(x) := x^2$, let $F := 3$, put $\eta := 1/9$ and $\mathbb{R} := X$. \end{definition}
\begin{definition}\label{e} We write $\E$ for the expectation. \end{definition}
\begin{definition}[$\theta$]\label{th} We set $\theta := (1 + \sqrt{-7})/2$. \end{definition}
\begin{lemma}\label{a} $f(2) = 4$, $F > \eta$ and $2 \in \mathbb{R}$. \end{lemma}
\begin{lemma}\label{b} $\E X \ge 0$ for $X \ge 0$. \end{lemma}
\begin{lemma}\label{c} $\theta^2 = \theta - 2$. \end{lemma}
""")
    _, _, found = edges_of(path)
    # f, F, eta and R are too generic; \E is the definition's own macro; theta is named by its title
    assert keyed(found) == {("b", "e", "notation"), ("c", "th", "notation")}


def test_the_best_matching_symbol_wins_then_the_definition_in_force(tmp_path):
    path = write(tmp_path / "m.tex", r"""\begin{definition}\label{ek} For even $k \ge 4$ let $E_k(z) := \sum_{c,d} (cz+d)^{-k}$.
\end{definition}
\begin{definition}\label{e2} We set $E_2(z) := 1 - 24 \sum_n \sigma_1(n) q^n$. \end{definition}
\begin{definition}\label{h} We write $\bbH[X]$ for the entropy of $X$. \end{definition}
\begin{definition}\label{ch} We write $\bbH[X|Y]$ for the conditional entropy. \end{definition}
\begin{definition}\label{h2} From now on we write $\bbH[X]$ for the entropy in base 2. \end{definition}
\begin{lemma}\label{a} $E_4^2 = E_8$. \end{lemma}
\begin{lemma}\label{b} $E_2(-1/z) = z^2 E_2(z)$. \end{lemma}
\begin{lemma}\label{c} $\bbH[X|Y] \le \log n$. \end{lemma}
\begin{lemma}\label{d} $\bbH[X] \le \log n$. \end{lemma}
""")
    _, _, found = edges_of(path)
    assert keyed(found) == {
        ("a", "ek", "notation"),  # E_4 (squared) matches the slot of E_k
        ("b", "e2", "notation"),  # the constant subscript of E_2 beats the slot of E_k
        ("c", "ch", "notation"),  # the signature [X|Y] picks conditional entropy over the later [X]
        ("d", "h2", "notation"),  # the definition in force: h2 defines [X] again
    }


def test_a_notation_edge_that_would_close_a_cycle_is_a_mention(tmp_path):
    path = write(tmp_path / "m.tex", r"""\begin{definition}\label{d} We write $\Phi_n$ for the polynomial of
Lemma~\ref{l}. \end{definition}
\begin{lemma}\label{l} $\Phi_n$ is irreducible over $\mathbb{Q}$. \end{lemma}
""")
    cat, units, found = edges_of(path)
    assert {(e.unit, e.depends_on, e.origin) for e in found.edges} == {("d", "l", "ref")}
    (m,) = found.mentions
    assert (m.unit, m.depends_on, m.origin, m.dependency) == ("l", "d", "notation", False)
    assert m.note == "it would close the cycle l -> d -> l"
    assert [(w.code, w.where) for w in found.warnings] == [("mention", "m.tex:3")]
    validate(cat, units, found.edges, KINDS)


def test_a_pervasive_symbol_gives_no_edge(tmp_path):
    lemmas = "".join(f"\\begin{{lemma}}\\label{{l{i}}} $\\Omega_0 \\ne {i}$. \\end{{lemma}}\n" for i in range(9))
    path = write(tmp_path / "m.tex", r"\begin{definition}\label{o} We write $\Omega_0$ for the sample space."
                 "\n\\end{definition}\n" + lemmas)
    _, _, found = edges_of(path)
    assert keyed(found) == set()  # in all 9 later statements: the document's own vocabulary


# -- rule 5: redundant keyed edges ---------------------------------------------------------------

def test_a_term_edge_the_statement_already_implies_through_what_it_cites_is_a_mention(tmp_path):
    path = write(tmp_path / "m.tex", r"""\begin{definition}\label{d} A \emph{tame map} is a bounded map. \end{definition}
\begin{lemma}\label{l} Every tame map is continuous. \end{lemma}
\begin{theorem}\label{t} By Lemma~\ref{l}, every tame map is nice. \end{theorem}
""")
    _, _, found = edges_of(path)
    assert {(e.unit, e.depends_on, e.origin) for e in found.edges} == {("l", "d", "term"), ("t", "l", "ref")}
    (m,) = found.mentions
    assert (m.unit, m.depends_on, m.origin, m.dependency) == ("t", "d", "term", False)
    assert m.note == "implied by t -> l -> d (redundant for scheduling)"
    assert found.warnings == []  # a redundant edge is not a doubt: no warning


def test_a_keyed_edge_implied_by_a_chain_of_stronger_edges_is_a_mention_even_through_a_proof(tmp_path):
    path = write(tmp_path / "m.tex", r"""\begin{definition}\label{d} We write $\Phi_n$ for the cyclotomic polynomial.
\end{definition}
\begin{lemma}\label{l} The degree of the polynomial of Definition~\ref{d} is $\varphi(n)$. \end{lemma}
\begin{theorem}\label{t} $\Phi_n$ is irreducible. \end{theorem}
\begin{proof} By Lemma~\ref{l}. \end{proof}
""")
    _, _, found = edges_of(path)
    assert {(e.unit, e.depends_on, e.origin) for e in found.edges} == {("l", "d", "ref"), ("t", "l", "ref")}
    assert [(m.unit, m.depends_on, m.origin, m.note) for m in found.mentions] == [
        ("t", "d", "notation", "implied by t -> l -> d (redundant for scheduling)")]


def test_a_proof_dependency_followed_by_weak_evidence_keeps_the_statements_own_use(tmp_path):
    """The statement needs the definition to be stated; its proof citing a lemma that uses the
    same term (weak evidence) does not make that redundant."""
    path = write(tmp_path / "m.tex", r"""\begin{definition}\label{d} A \emph{tame map} is a bounded map. \end{definition}
\begin{lemma}\label{l} Every tame map is continuous. \end{lemma}
\begin{theorem}\label{t} Every tame map is nice. \end{theorem}
\begin{proof} By Lemma~\ref{l}. \end{proof}
""")
    _, _, found = edges_of(path)
    assert ("t", "d", "term") in keyed(found)
    assert found.mentions == []


def test_a_term_inside_the_definitions_own_name_is_not_a_use(tmp_path):
    path = write(tmp_path / "m.tex", r"""\begin{definition}\label{c} The \emph{packing constant} is the supremum. \end{definition}
\begin{definition}\label{pc} The periodic packing constant is defined to be the supremum over periodic packings.
\end{definition}
\begin{definition}\label{e}{(Packing constant, second form)} We define the lattice packing density to be $x$.
\end{definition}
\begin{lemma}\label{l} The packing constant is at most one. \end{lemma}
""")
    _, _, found = edges_of(path)
    assert keyed(found) == {("l", "c", "term")}


# -- the quality script scores notation as its own kind --------------------------------------------

def test_dag_quality_scores_notation_edges_per_kind(tmp_path, capsys):
    path = write(tmp_path / "content.tex", r"""\begin{definition}\label{d} We write $\Phi_n$ for the cyclotomic polynomial.
\end{definition}
\begin{definition}\label{e} We write $\Psi_n$ for the other polynomial. \end{definition}
\begin{lemma}\label{a}\uses{d} $\Phi_n$ is monic. \end{lemma}
\begin{lemma}\label{b} $\Psi_n$ is monic. \end{lemma}
""")
    sys.path.insert(0, str(ROOT / "scripts"))
    try:
        import dag_quality
    finally:
        sys.path.remove(str(ROOT / "scripts"))
    assert dag_quality.main([str(path), "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    runs = result["runs"]
    assert set(runs) == {"references only", "terms", "notation", "default"}
    assert runs["references only"]["all"]["recall"] == 0.0
    assert runs["notation"]["evidence"]["notation"] == {"predicted": 2, "correct": 1, "precision": 0.5}
    assert runs["default"]["all"] == {"precision": 0.5, "recall": 1.0, "f1": 0.667, "predicted": 2, "truth": 1,
                                      "correct": 1}


def test_notation_edges_in_markdown_with_math(tmp_path):
    from fyan.intake import read_source

    path = write(tmp_path / "notes.md", "**Definition 1.** We write $d[X;Y]$ for the Ruzsa distance.\n\n"
                 "**Lemma 2.** For all $X, Y, Z$ we have $d[X;Z] \\le d[X;Y] + d[Y;Z]$.\n")
    cat = read_source(path)
    units = build_units(cat, KINDS)
    found = extract_edges(cat, units)
    assert [(e.unit, e.depends_on, e.origin, e.evidence) for e in found.edges] == [
        ("lemma-2", "definition-1", "notation", "notes.md:3 notation $d[·;·]$")]
