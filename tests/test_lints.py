"""Deterministic problem.tex lints (fyan.specifier.lints): each rule on a faithful text and on
a text that breaks it, provenance written by code only, and the lints run at ingest."""

from __future__ import annotations

from fyan.intake.tex import read_tex
from fyan.specifier.dag import extract_edges
from fyan.specifier.lints import LintInput, has_errors, lint_problems
from fyan.specifier.problem import BEGIN, END, provenance_block, strip_provenance, with_provenance
from fyan.specifier.units import build_units
from tests.conftest import corpus, write
from tests.helpers import ingested

SOURCE = r"""\begin{theorem}\label{t}
Let $n > 1$. Then $n$ is prime if and only if $(n-1)! \equiv -1 \pmod n$, and $A \subsetneq B$.
\end{theorem}"""

BLOCK = "\n".join([BEGIN, "% unit: t", "% kind: theorem", "% source: source/doc.tex, lines 1-3", "% label: t",
                   "% depends on: lem (ref, statement; doc.tex:2 \\ref{l})", END])


def lint(problem: str, source: str = SOURCE, **kw):
    item = LintInput(unit="t", problem_tex=problem, source_tex=source, depends_on=kw.pop("depends_on", ["lem"]), **kw)
    return lint_problems([item], label_units=kw.pop("label_units", {"l": "lem", "x": "other", "Lemma 7": "other"}))


def rules(findings):
    return sorted((f.rule, f.severity) for f in findings)


def test_faithful_problem_has_no_finding():
    assert lint(BLOCK + "\n" + SOURCE + "\n", expected_block=BLOCK) == []


def test_lost_iff_strict_inequalities_and_new_asymptotics():
    weakened = SOURCE.replace("if and only if", "implies that").replace("n > 1", "n \\ge 1")
    weakened = weakened.replace("\\subsetneq", "\\subseteq").replace("$n$ is prime", "$n$ is prime for all sufficiently large $n$, $f(n) = O(n)$")
    findings = lint(BLOCK + "\n" + weakened + "\n")
    assert rules(findings) == [("lost-iff", "error"), ("new-asymptotic", "error"), ("new-asymptotic", "error"),
                               ("strict-to-nonstrict", "error"), ("strict-to-nonstrict", "error")]
    assert has_errors(findings)
    # the same words in a comment do not count
    assert rules(lint(BLOCK + "\n" + SOURCE + "\n% for sufficiently large n, O(n)\n")) == []
    # "iff" and \iff count as an equivalence, a strict relation kept as \lt is still strict
    same = SOURCE.replace("if and only if", "iff").replace("n > 1", "1 < n")
    assert rules(lint(BLOCK + "\n" + same + "\n")) == []


def test_malformed_or_model_written_provenance():
    body = SOURCE + "\n"
    assert rules(lint(body)) == [("malformed-provenance", "error")]  # no block at all
    assert rules(lint("Intro.\n" + BLOCK + "\n" + body)) == [("malformed-provenance", "error")]
    assert rules(lint(BLOCK + "\n" + BLOCK + "\n" + body)) == [("malformed-provenance", "error")]
    edited = BLOCK.replace("lines 1-3", "lines 9-3")
    assert [f.message for f in lint(edited + "\n" + body)] == ["source range 9-3 is reversed"]
    forged = BLOCK.replace("% label: t", "% note: trust me, this is the source")
    assert "not part of the provenance grammar" in lint(forged + "\n" + body)[0].message
    other = BLOCK.replace("% unit: t", "% unit: s")
    assert "expected exactly ['t']" in lint(other + "\n" + body)[0].message
    assert "the DAG declares ['lem', 'x']" in lint(BLOCK + "\n" + body, depends_on=["lem", "x"])[0].message
    changed = BLOCK.replace("lines 1-3", "lines 1-4")
    assert [f.message for f in lint(changed + "\n" + body, expected_block=BLOCK)] == [
        "the provenance block differs from the one Fyan wrote"]


def test_undeclared_cross_unit_dependency():
    cites = SOURCE.replace("Let", "By \\cref{l, x} and Lemma 7, let")
    findings = lint(BLOCK + "\n" + cites + "\n")
    assert [(f.rule, f.line) for f in findings] == [("undeclared-dependency", 9), ("undeclared-dependency", 9)]
    assert "'x' of unit other" in findings[0].message and "'Lemma 7' of unit other" in findings[1].message
    assert lint(BLOCK + "\n" + cites + "\n", context_units=["other"]) == []


def test_provenance_is_put_back_by_code():
    model_text = "% --- fyan provenance (written by Fyan from the source; do not edit) ---\n% unit: forged\n" \
                 "% --- end provenance ---\nLet $n > 1$ ..."
    fixed = with_provenance(model_text, BLOCK)
    assert fixed.startswith(BLOCK + "\n") and "forged" not in fixed and fixed.count(BEGIN) == 1
    assert strip_provenance(fixed).strip() == "Let $n > 1$ ..."


def test_lints_run_at_ingest_and_report_findings(tmp_path):
    tex = r"""\begin{definition}\label{def:a} An integer is \textbf{nice} if it is even.\end{definition}
\begin{theorem}\label{t}
\begin{enumerate}\item\label{t:i} $n > 1$ \end{enumerate}
\end{theorem}
\begin{proof}
\begin{claim}\label{c} By \ref{t:i}, $n \ge 2$.\end{claim}
\end{proof}
"""
    _, gateway = ingested(tmp_path, tex)
    gateway.close()
    from fyan.project import Project
    from fyan.specifier.ingest import plan_ingest

    _, files, _, report = plan_ingest(Project.open(tmp_path))
    # code-written problem.tex: faithful by construction, and the claim citing the theorem it
    # sits in is not an undeclared dependency
    assert report.findings == []
    assert "% depends on: c (nested, proof;" in files["t"]["problem.tex"].decode()


def test_every_corpus_problem_tex_is_clean():
    cat = read_tex(corpus("blueprints/pfr.content.flat.tex"))
    units = build_units(cat, ["theorem", "lemma", "proposition", "corollary", "definition"])
    edges = extract_edges(cat, units).edges
    owner = {i: u.id for u in units for i in u.statements}
    items = []
    for u in units:
        deps = [e for e in edges if e.unit == u.id]
        block = provenance_block(u, cat, deps, "source/")
        body = cat.statements[u.statements[0]].body
        items.append(LintInput(unit=u.id, problem_tex=block + "\n" + body + "\n", source_tex=body,
                               depends_on=[e.depends_on for e in deps], expected_block=block))
    labels = {k: owner[v.statement_index] for k, v in cat.labels.items() if v.statement_index in owner}
    assert lint_problems(items, label_units=labels) == []
    # and a realistic model rewrite of one of them is caught
    target = next(i for i in items if "\\leq" in i.source_tex and "<" in i.source_tex)
    bad = target.model_copy(update={"problem_tex": target.problem_tex.replace("<", "\\leq")})
    assert has_errors(lint_problems([bad]))


def test_problem_file_helpers_roundtrip(tmp_path):
    path = write(tmp_path / "m.tex", "\\begin{lemma}\\label{a} $1 < 2$ \\end{lemma}\n")
    cat = read_tex(path)
    units = build_units(cat, ["lemma"])
    block = provenance_block(units[0], cat, [], "source/")
    assert block.splitlines()[-2:] == ["% depends on: nothing", END]
    assert lint_problems([LintInput(unit="a", problem_tex=with_provenance(cat.statements[0].body, block),
                                    source_tex=cat.statements[0].body, expected_block=block)]) == []
