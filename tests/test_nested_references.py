"""Every reference in a unit's text is counted and classified, at any depth of nesting: one
inside a remark, a question, an example (environments of no unit kind) nested in a proof or in
the statement is the unit's reference, as one in an ``enumerate`` is."""

from __future__ import annotations

import pytest

from fyan.specifier.ingest import plan_ingest

from tests.helpers import make_project

PREAMBLE = r"""\documentclass{article}
\newtheorem{theorem}{Theorem}
\newtheorem{lemma}{Lemma}
\newtheorem{remark}{Remark}
\newtheorem{question}{Question}
\newtheorem{example}{Example}
\begin{document}
\begin{lemma}\label{lem:a} Every even integer is even.\end{lemma}
\begin{lemma}\label{lem:b} Every odd integer is odd.\end{lemma}
"""


def _report(tmp_path, body: str):
    project = make_project(tmp_path / "p", PREAMBLE + body + "\n\\end{document}\n")
    dag, _, _, report = plan_ingest(project)
    pairs = {(e.unit, e.depends_on, e.in_proof) for e in dag.edges}
    return report, pairs


MEMBERS = [
    pytest.param(r"""\begin{theorem}\label{thm:t} All is well.\end{theorem}
\begin{proof}
\begin{remark} This uses \ref{lem:a}. \end{remark}
Done.
\end{proof}""", {("thm-t", "lem-a", True)}, 1, id="remark-in-proof"),
    pytest.param(r"""\begin{theorem}\label{thm:t} All is well.\end{theorem}
\begin{proof}
\begin{remark} A remark.
\begin{question} Does \ref{lem:a} extend? See also \cref{lem:b}. \end{question}
\end{remark}
Done.
\end{proof}""", {("thm-t", "lem-a", True), ("thm-t", "lem-b", True)}, 2, id="question-in-remark-in-proof"),
    pytest.param(r"""\begin{theorem}\label{thm:t} All is well.
\begin{example} For instance \ref{lem:b}. \end{example}
\end{theorem}""", {("thm-t", "lem-b", False)}, 1, id="example-in-statement"),
    pytest.param(r"""\begin{theorem}\label{thm:t} All is well.\end{theorem}
\begin{proof}
\begin{itemize}\item \begin{remark}\label{rem:r} By \ref{lem:a}, and \ref{rem:r} itself. \end{remark}\end{itemize}
\end{proof}""", {("thm-t", "lem-a", True)}, 2, id="remark-in-list-in-proof-and-its-own-label"),
]


@pytest.mark.parametrize(("body", "edges", "seen"), MEMBERS)
def test_references_in_nested_non_unit_environments_are_counted_and_classified(tmp_path, body, edges, seen):
    report, pairs = _report(tmp_path, body)
    assert edges <= pairs
    refs = report.references
    assert refs.seen == seen
    assert refs.kept + refs.unresolved + refs.to_text + refs.to_non_unit + refs.to_self == refs.seen


def test_the_same_reference_in_enumerate_and_in_a_remark_counts_alike(tmp_path):
    listed, pairs_listed = _report(tmp_path / "a", r"""\begin{theorem}\label{thm:t} All is well.\end{theorem}
\begin{proof}\begin{enumerate}\item By \ref{lem:a}.\end{enumerate}\end{proof}""")
    remarked, pairs_remarked = _report(tmp_path / "b", r"""\begin{theorem}\label{thm:t} All is well.\end{theorem}
\begin{proof}\begin{remark} By \ref{lem:a}.\end{remark}\end{proof}""")
    assert listed.references == remarked.references
    assert pairs_listed == pairs_remarked == {("thm-t", "lem-a", True)}


def test_a_unit_stated_inside_a_remark_inside_a_proof_is_a_dependency_of_the_proof(tmp_path):
    _, pairs = _report(tmp_path, r"""\begin{theorem}\label{thm:t} All is well.\end{theorem}
\begin{proof}
\begin{remark} We need a claim.
\begin{lemma}\label{lem:c} A claim holds. \end{lemma}
\end{remark}
Done.
\end{proof}""")
    assert ("thm-t", "lem-c", True) in pairs
