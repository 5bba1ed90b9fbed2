"""Intake accepts what LaTeX accepts, loses nothing silently, reports a whole book.

Each kind of failure has several members, on snippets of our own (no corpus file is read)."""

from __future__ import annotations

import json

import pytest

from fyan.cli import main
from fyan.config import IntakeSection
from fyan.errors import DagError
from fyan.intake.tex import read_tex
from fyan.specifier.connectivity import Connectivity, connectivity
from fyan.specifier.dag import extract_edges
from fyan.specifier.units import build_units
from tests.conftest import write

KINDS = IntakeSection().unit_kinds
PRE = "\\documentclass{article}\n\\newtheorem{theorem}{Theorem}\n\\newtheorem{lemma}{Lemma}\n"


def doc(body: str, preamble: str = "") -> str:
    return PRE + preamble + "\\begin{document}\n" + body + "\\end{document}\n"


def edges_of(cat, **kw):
    units = build_units(cat, KINDS)
    return units, extract_edges(cat, units, **kw)


def init(capsys, tmp_path, src, *options):
    code = main(["init", str(tmp_path / "p"), "--source", str(src), *options, "--json"])
    captured = capsys.readouterr()
    return code, (json.loads(captured.out) if code == 0 else captured.err)


# -- refused although LaTeX compiles it -----------------------------------------------------------

@pytest.mark.parametrize("body, first, last, owner", [
    # two statements
    ("\\begin{lemma}\\label{a} A. \\end{lemma}\n\\begin{lemma}\\label{a} B. \\end{lemma}\n"
     "\\begin{theorem}\\label{t} By \\ref{a}. \\end{theorem}\n", 5, 6, 1),
    # an unreferenced subsection, then a statement
    ("\\subsection{Intro}\\label{a}\n\\begin{lemma}\\label{a} B. \\end{lemma}\n"
     "\\begin{theorem}\\label{t} By \\ref{a}. \\end{theorem}\n", 5, 6, 0),
    # a statement, then a label in a proof
    ("\\begin{lemma}\\label{a} A. \\end{lemma}\n\\begin{lemma}\\label{b} B. \\end{lemma}\n"
     "\\begin{proof}\\label{a} x \\end{proof}\n\\begin{theorem}\\label{t} By \\ref{a}. \\end{theorem}\n", 5, 7, 1),
])
def test_a_duplicate_label_warns_naming_both_places_and_resolves_to_the_last(tmp_path, body, first, last, owner):
    cat = read_tex(write(tmp_path / "m.tex", doc(body)))
    [w] = [w for w in cat.warnings if w.code == "duplicate-label"]
    assert w.where == f"m.tex:{last}" and f"m.tex:{first}" in w.message and "the last" in w.message
    assert cat.duplicate_labels == {"a": [f"m.tex:{first}", f"m.tex:{last}"]}
    assert cat.labels["a"].line == last and cat.labels["a"].statement_index == owner
    units, found = edges_of(cat)
    target = units[owner].id
    assert [(e.unit, e.depends_on) for e in found.edges] == [("t", target)]
    [flag] = [f for f in found.flags if f.rule == "duplicate-label"]
    assert flag.unit == "t" and f"m.tex:{first}, m.tex:{last}" in flag.message


@pytest.mark.parametrize("preamble", [
    # a proof wrapper and a theorem wrapper, % between the arguments
    "\\newenvironment{pf}% the proof\n  {\\begin{proof}}% begin\n  {\\end{proof}}\n"
    "\\newenvironment{mythm}%\n{\\begin{theorem}}%\n{\\end{theorem}}\n",
    # line breaks between the arguments, comments in \newtheorem and \newcommand too
    "\\newenvironment{pf}\n  {\\begin{proof}}\n  {\\end{proof}}\n\\newtheorem{mythm}%\n  {Theorem}\n"
    "\\newcommand{\\bad}%\n  {\\end{proof}}\n",
    # \renewenvironment and \NewDocumentEnvironment
    "\\newenvironment{pf}{}{}\n\\renewenvironment{pf}%\n{\\begin{proof}}%\n{\\end{proof}}\n"
    "\\NewDocumentEnvironment{mythm}{}%\n{\\begin{theorem}}%\n{\\end{theorem}}\n",
])
@pytest.mark.parametrize("where", ["input", "main"])
def test_definitions_read_the_same_wherever_they_live_comments_included(tmp_path, preamble, where):
    body = ("\\begin{lemma}\\label{l} A. \\end{lemma}\n\\begin{mythm}\\label{t} B. \\end{mythm}\n"
            "\\begin{pf}\n\\begin{mycase} By \\ref{l}. \\end{mycase}\n\\end{pf}\n")
    if where == "input":
        write(tmp_path / "pre.tex", preamble)
        main = write(tmp_path / "m.tex", doc(body, "\\input{pre}\n"))
    else:
        main = write(tmp_path / "m.tex", doc(body, preamble))
    cat = read_tex(main)
    assert [(s.kind, s.label) for s in cat.statements] == [("lemma", "l"), ("theorem", "t")]
    # the \ref inside an unclassified environment nested in the wrapped proof is the proof's
    assert [(r.label, r.in_proof) for r in cat.statements[1].references] == [("l", True)]
    assert cat.unclassified_envs == {"mycase": 1}


@pytest.mark.parametrize("code", ["\\renewcommand{\\arraystretch}{1.2}", "\\newcommand{\\x}{y}", "\\def\\y{z}",
                                  "\\providecommand{\\w}{v}", "\\let\\z\\relax"])
def test_a_definition_alone_on_a_line_inside_display_math_is_not_malformed(tmp_path, code):
    body = f"\\begin{{theorem}}\\label{{t}} B.\n\\[\n{code}\nx = 1\n\\]\n\\end{{theorem}}\n"
    cat = read_tex(write(tmp_path / "m.tex", doc(body)))
    assert [s.label for s in cat.statements] == ["t"] and not cat.warnings


@pytest.mark.parametrize("a_refs, b_refs, weak, strong", [
    # a's statement cites b, b's proof cites a: the statement reference is the weaker
    ("As in \\ref{b}. \\end{lemma}\n", "B. \\end{lemma}\n\\begin{proof} By \\ref{a}. \\end{proof}\n",
     ("a", "b", "m.tex:5"), ("b", "a")),
    # a's proof cites b (forward), b's statement cites a: still the statement reference
    ("A. \\end{lemma}\n\\begin{proof} By \\ref{b}. \\end{proof}\n", "As in \\ref{a}. \\end{lemma}\n",
     ("b", "a", "m.tex:7"), ("a", "b")),
    # two statement references: the forward one
    ("As in \\ref{b}. \\end{lemma}\n", "As in \\ref{a}. \\end{lemma}\n", ("a", "b", "m.tex:5"), ("b", "a")),
])
def test_a_cycle_is_broken_at_its_weakest_edge_by_the_order_of_trust(tmp_path, a_refs, b_refs, weak, strong):
    text = doc("\\begin{lemma}\\label{a} " + a_refs + "\\begin{lemma}\\label{b} " + b_refs)
    cat = read_tex(write(tmp_path / "m.tex", text))
    _, found = edges_of(cat, cycles="break")
    assert [(e.unit, e.depends_on) for e in found.edges] == [strong]
    [w] = [w for w in found.warnings if w.code == "cycle"]
    assert f"the edge {weak[0]} -> {weak[1]} (ref, {weak[2]} \\ref{{{weak[1]}}}) is its weakest edge" in w.message
    assert [m.note for m in found.mentions if (m.unit, m.depends_on) == weak[:2]][0].startswith("demoted")
    # the default of fyan.toml breaks it; --strict stops with every cycle listed
    assert IntakeSection().cycles == "break"
    with pytest.raises(DagError, match="dependency cycle"):
        edges_of(cat, cycles="error")


@pytest.mark.parametrize("uses_in_proof", [False, True])
def test_only_a_cycle_of_uses_alone_stops_intake(tmp_path, uses_in_proof):
    where = "\\end{lemma}\n\\begin{proof}\\uses{b} x \\end{proof}\n" if uses_in_proof else "\\uses{b}\\end{lemma}\n"
    text = doc("\\begin{lemma}\\label{a} A. " + where
               + "\\begin{lemma}\\label{b}\\uses{a} B. \\end{lemma}\n")
    cat = read_tex(write(tmp_path / "m.tex", text))
    with pytest.raises(DagError, match=r"cycle\(s\) formed by \\uses alone"):
        edges_of(cat, cycles="break")
    # the same cycle with one edge a reference is broken there
    mixed = read_tex(write(tmp_path / "n.tex", text.replace("\\uses{a}", "By \\ref{a}.")))
    _, found = edges_of(mixed, cycles="break")
    assert [(e.unit, e.depends_on, e.origin) for e in found.edges] == [("a", "b", "uses")]


def test_unknown_references_warn_by_default_and_show_in_the_units_findings(tmp_path, capsys):
    src = write(tmp_path / "in" / "m.tex", doc(
        "\\begin{lemma}\\label{a} By \\eqref{gone}. \\end{lemma}\n"
        "\\begin{theorem}\\label{t}\\uses{a, lost} T. \\end{theorem}\n"))
    assert IntakeSection().unknown_references == "warn"
    code, result = init(capsys, tmp_path, src)
    assert code == 0
    assert [w["where"] for w in result["warnings"] if w["code"] == "unknown-label"] == ["m.tex:5", "m.tex:6"]
    flags = {(f["unit"], f["rule"]) for f in result["findings"]}
    assert {("a", "unknown-reference"), ("t", "unknown-reference"), ("t", "incomplete-dependencies")} <= flags
    assert result["references"]["unresolved"] == 2 and result["references"]["seen"] == 3
    assert main(["init", str(tmp_path / "q"), "--source", str(src), "--strict"]) == 4
    assert "2 reference(s) to labels defined nowhere" in capsys.readouterr().err


# -- lost or merged without a word -------------------------------------------------------------

@pytest.mark.parametrize("preamble, call", [
    ("\\def\\thm#1#2{\\newtheorem{#1}[theorem]{#2}}\n", "\\thm{example}{Example}\n"),
    ("\\newcommand{\\declare}[2]{\\newtheorem{#1}{#2}}\n", "\\declare%\n{example}{Example}\n"),
    # a wrapper of a wrapper, with an optional argument left to its default
    ("\\def\\thm#1#2{\\newtheorem{#1}{#2}}\n\\newcommand{\\decl}[2][Example]{\\thm{#2}{#1}}\n", "\\decl{example}\n"),
    ("\\newcommand{\\dt}[1]{\\declaretheorem[name=Example]{#1}}\n", "\\dt{example}\n"),
])
def test_theorem_environments_declared_through_wrapper_macros_are_seen(tmp_path, preamble, call):
    body = "".join(f"\\begin{{example}}\\label{{e{i}}} E{i}. \\end{{example}}\n" for i in range(3))
    cat = read_tex(write(tmp_path / "m.tex", doc(body, preamble + call)))
    assert [s.kind for s in cat.statements] == ["example"] * 3
    assert cat.theorem_envs["example"] == "example" and not cat.unclassified_envs


def test_environments_used_but_not_classified_are_reported_with_counts(tmp_path):
    body = ("\\begin{lemma}\\label{a} \\begin{center}x\\end{center}\\begin{exmp} E \\end{exmp} \\end{lemma}\n"
            "\\begin{exmp} F \\end{exmp}\\begin{nonexample} G \\end{nonexample}\\begin{figure}f\\end{figure}\n")
    cat = read_tex(write(tmp_path / "m.tex", doc(body)))
    assert cat.unclassified_envs == {"exmp": 2, "nonexample": 1}
    assert cat.layout_envs == {"center": 1, "figure": 1}


@pytest.mark.parametrize("preamble, use, macro", [
    ("", "\\propref{p}", "propref"),  # defined in a style file that is not there
    ("", "\\lemmaref*{p}", "lemmaref"),
    ("", "\\thmlink{p}", "thmlink"),
    ("\\newcommand{\\propref}[1]{Proposition~\\ref{prop:#1}}\n", "\\propref{p}", "propref"),  # a prefix wrapper
])
def test_a_ref_like_macro_whose_argument_is_a_label_counts_as_a_reference(tmp_path, preamble, use, macro):
    label = "prop:p" if "prop:#1" in preamble else "p"
    body = (f"\\begin{{lemma}}\\label{{{label}}} P. \\end{{lemma}}\n"
            f"\\begin{{theorem}}\\label{{t}} By {use}. \\end{{theorem}}\n\\begin{{proof}} Again {use}. \\end{{proof}}\n"
            "\\begin{lemma}\\label{q} Not \\foo{nolabel}, \\textbf{p}, $\\mathrm{p}$. \\end{lemma}\n")
    cat = read_tex(write(tmp_path / "m.tex", doc(body, preamble)))
    refs = cat.statements[1].references
    assert [(r.label, r.macro, r.in_proof) for r in refs] == [(label, macro, False), (label, macro, True)]
    assert cat.statements[2].references == []
    reported = [w for w in cat.warnings if w.code == "read-as-reference"]
    assert len(reported) == (0 if preamble else 1)
    if reported:
        assert f"\\{macro}{{...}}" in reported[0].message and "2 use(s)" in reported[0].message
    _, found = edges_of(cat)
    assert [(e.unit, e.depends_on) for e in found.edges] == [("t", label.replace(":", "-"))]


# -- whole books ---------------------------------------------------------------------------------

def test_connectivity_isolated_nodes_and_components_in_document_order():
    c = connectivity(["a", "b", "c", "d", "e", "f", "g"], [("c", "a"), ("e", "d"), ("f", "e"), ("g", "g")])
    assert c == Connectivity(isolated=("b", "g"), components=(("d", "e", "f"), ("a", "c")))
    assert connectivity([], []) == Connectivity((), ())
    assert connectivity(["x", "y"], [("y", "x"), ("x", "y")]).components == (("x", "y"),)
    with pytest.raises(Exception):
        c.isolated = ()  # frozen


def test_the_intake_report_of_fyan_init(tmp_path, capsys):
    body = ("\\begin{definition}\\label{d} D. \\end{definition}\n"
            "\\begin{theorem} Uses \\ref{d} and \\ref{sec} and \\ref{}. \\label{} \\end{theorem}\n"
            "\\begin{lemma} Alone. \\end{lemma}\n\\section{S}\\label{sec}\n"
            "\\begin{lemma}\\label{x} X. \\begin{exmp} e \\end{exmp}\\end{lemma}\n"
            "\\begin{lemma}\\label{y} By \\ref{x} and \\ref{nowhere}. \\end{lemma}\n"
            "\\begin{lemma}\\label{z}  Z. \\begin{lemma} nested \\end{lemma}\\end{lemma}\n")
    src = write(tmp_path / "in" / "m.tex", doc(body, "\\newtheorem{definition}{Definition}\n"))
    assert main(["init", str(tmp_path / "p"), "--source", str(src)]) == 0
    out = capsys.readouterr()
    text = out.out
    assert "Intake report:\n  statements by kind: lemma 5, definition 1, theorem 1\n" in text
    assert "environments used but not classified (1; check none is a statement): exmp (1)" in text
    assert ("references: 4 seen, 2 kept (dependency or mention), 1 unresolved, 1 to no unit (running text 1, "
            "non-unit statements 0, the unit itself 0)") in text
    assert ("unresolved references (LaTeX prints ??; each is a finding of its unit): m.tex:11 \\ref{nowhere} "
            "in y\n") in text
    assert "dependency edges by kind: ref 2, nested 1; 0 mention(s)" in text
    assert "isolated statements (no edge in or out): 1: lemma-1\n" in text
    assert "connected components (isolated statements apart): 3 (sizes 2, 2, 2)" in text
    assert "empty \\ref{}: 1 (m.tex:7 \\ref{}); empty \\label{}: 1 (m.tex:7)" in text
    # warnings name unit ids, never "lemma #7"
    assert "inside lemma z" in out.err and "#" not in out.err


def _script(name):
    import sys

    from tests.conftest import ROOT

    sys.path.insert(0, str(ROOT / "scripts"))
    try:
        return __import__(name)
    finally:
        sys.path.remove(str(ROOT / "scripts"))


def test_dag_quality_measures_the_later_statement_closing_rule(tmp_path, capsys):
    # t's proof ends naming a later lemma its \uses also names; u's names one it does not use
    path = write(tmp_path / "content.tex", "\\begin{theorem}\\label{t} T. \\end{theorem}\n"
                 "\\begin{proof}\\uses{l} A computation. This gives the claim by Lemma~\\ref{l}. \\end{proof}\n"
                 "\\begin{theorem}\\label{u} U. \\end{theorem}\n"
                 "\\begin{proof} Easy. We prove a stronger form in Lemma~\\ref{m}. \\end{proof}\n"
                 "\\begin{lemma}\\label{l} L. \\end{lemma}\n\\begin{lemma}\\label{m} M. \\end{lemma}\n")
    assert _script("dag_quality").main([str(path), "--closing", "--json"]) == 0
    [row] = json.loads(capsys.readouterr().out)
    assert row["later_closing"] == {"pairs": 2, "true_edges": 1}
    assert row["with the rule"]["f1"] == 0.0 and row["without it"]["f1"] == 0.667


def test_bench_intake_prints_the_book_scaling_beside_pylatexenc(capsys):
    assert _script("bench_intake").main(["--only", "book", "--book", "30", "--scale", "2", "--repeat", "1"]) == 0
    out = capsys.readouterr().out
    assert "BOOK generated, 30 statements" in out and "pylatexenc's plain parse of the same text" in out
    assert "BOOK scaling: 60 statements" in out and "x the 30-statement time (target < 4 x; pylatexenc" in out
