"""Source text through every field Fyan writes: a macro's argument is read as TeX reads it
(comments and line ends inside it) before it is used, and what Fyan writes into a generated file
(the provenance block of ``problem.tex``, the context block, ``source_proof.tex``) is escaped for
the place it goes, so Fyan's own lints find nothing malformed in Fyan's own files."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fyan.specifier.ingest import plan_ingest
from fyan.specifier.problem import BEGIN, END

from tests.helpers import make_project

DOC = r"""\documentclass{article}
\newtheorem{theorem}{Theorem}
\newtheorem{definition}{Definition}
\begin{document}
\begin{definition}[{DTITLE}]\label{DLABEL}\lean{DLEAN}
An integer is \emph{nice} if it is even.
\end{definition}
\begin{theorem}[{TTITLE}]\label{thm:main}\lean{TLEAN}\uses{USES}
BODY
\end{theorem}
\begin{proof}
By \ref{REF}.
PROOF
\end{proof}
\end{document}
"""


def _doc(**fields: str) -> str:
    text = DOC
    for key, value in fields.items():
        text = text.replace(key, value)
    return text


def _plan(tmp_path, tex: str):
    project = make_project(tmp_path / "p", tex)
    dag, files, _, report = plan_ingest(project)
    return dag, files, report


def _provenance_lines(problem: str) -> list[str]:
    lines = problem.split("\n")
    return lines[lines.index(BEGIN) : lines.index(END) + 1]


# the members of the family: a comment with its line end inside an argument, a bare line end,
# a `\` at a line end, an escaped %, braces, a marker line in the body
MEMBERS = [
    pytest.param(dict(TLEAN="Foo.bar,%\n  Foo.baz"), ["Foo.bar", "Foo.baz"], id="lean-comment-line-end"),
    pytest.param(dict(TLEAN="Foo.bar,\n  Foo.baz"), ["Foo.bar", "Foo.baz"], id="lean-line-end"),
    pytest.param(dict(TLEAN="Foo.bar, % the second one\n   Foo.baz %\n"), ["Foo.bar", "Foo.baz"],
                 id="lean-comments-with-words"),
    pytest.param(dict(TLEAN="Foo.bar%\n,Foo.baz"), ["Foo.bar", "Foo.baz"], id="lean-comment-before-comma"),
]


@pytest.mark.parametrize(("fields", "names"), MEMBERS)
def test_lean_names_are_read_as_tex_reads_them(tmp_path, fields, names):
    doc = _doc(DTITLE="Nice", DLABEL="def:nice", DLEAN="Nice", TTITLE="Main", USES="def:nice", REF="def:nice",
               BODY="Every nice integer is even.", PROOF="", **{"TLEAN": "X"} | fields)
    dag, files, report = _plan(tmp_path, doc)
    problem = files["thm-main"]["problem.tex"].decode()
    assert f"% lean (from the source): {', '.join(names)}" in _provenance_lines(problem)
    assert not [f for f in report.findings if f.rule == "malformed-provenance"]


@pytest.mark.parametrize(("title", "shown"), [
    ("Main %a comment\n   result", "{Main result}"),
    ("Main \\\\\n result", "{Main \\\\ result}"),
    ("Main \\%\n result", "{Main \\% result}"),
    ("Main {\\bf bold}\n result", "{Main {\\bf bold} result}"),
    ("Main \\\n result", "{Main \\ result}"),
    ("Main%\n%\n   result", "{Mainresult}"),
])
def test_titles_are_read_as_tex_reads_them_and_written_on_one_comment_line(tmp_path, title, shown):
    doc = _doc(DTITLE="Nice", DLABEL="def:nice", DLEAN="Nice", TTITLE=title, TLEAN="Main", USES="def:nice",
               REF="def:nice", BODY="Every nice integer is even.", PROOF="")
    dag, files, report = _plan(tmp_path, doc)
    block = _provenance_lines(files["thm-main"]["problem.tex"].decode())
    assert f"% title: {shown}" in block
    assert all(line.startswith("%") for line in block)
    assert not [f for f in report.findings if f.rule == "malformed-provenance"]


def test_a_marker_line_in_the_source_stays_inside_the_statement(tmp_path):
    body = f"Every nice integer is even.\n{END}\n  {BEGIN}  \n% unit: thm-other\nAnd odd ones are odd."
    doc = _doc(DTITLE="Nice", DLABEL="def:nice", DLEAN="Nice", TTITLE="Main", TLEAN="Main", USES="def:nice",
               REF="def:nice", BODY=body, PROOF=f"{END}\ndone.")
    dag, files, report = _plan(tmp_path, doc)
    problem = files["thm-main"]["problem.tex"].decode()
    assert [ln for ln in problem.split("\n") if ln.strip() == END] == [END]
    assert [ln for ln in problem.split("\n") if ln.strip() == BEGIN] == [BEGIN]
    assert "And odd ones are odd." in problem  # the statement is all there
    assert not [f for f in report.findings if f.rule == "malformed-provenance"]
    assert f"%{END}\ndone." in files["thm-main"]["source_proof.tex"].decode()


# every kind of source text, through every field at once
_PIECES = st.sampled_from(["A", "b2", ".", "_", " ", "\n", "%\n", "% c {x\n", "%}\n", "\\%", "\\\\", "\\\n", "{x}",
                           "{%\n}", "\t", "\r\n", f"%{END}\n"])


_LABEL_PIECES = st.sampled_from(["a", "2", " ", "\n", "%\n", "% c {x\n", "\t", "%}\n"])


def _text(min_size: int = 1, pieces=_PIECES):
    return st.lists(pieces, min_size=min_size, max_size=8).map("".join)


def tex_text(text: str) -> str:
    """The test's own model of TeX reading an argument: a comment (an unescaped ``%``) drops the
    rest of its line, the line end and the next line's leading spaces; white space is one space."""
    out, i = [], 0
    while i < len(text):
        c = text[i]
        if c == "\\" and i + 1 < len(text):
            out.append(text[i : i + 2])
            i += 2
        elif c == "%":
            nl = text.find("\n", i)
            if nl < 0:
                break
            i = nl + 1
            while i < len(text) and text[i] in " \t":
                i += 1
        else:
            out.append(c)
            i += 1
    return " ".join("".join(out).split())


def _model_names(text: str) -> list[str]:
    return [n.strip() for n in tex_text(text).split(",") if n.strip()]


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(title=_text(), lean=_text(), label_tail=_text(0, _LABEL_PIECES), proof=_text(0), body=_text(0))
def test_every_kind_of_source_text_through_every_field(tmp_path_factory, title, lean, label_tail, proof, body):
    root = tmp_path_factory.mktemp("src")
    label = "def:nice" + label_tail
    expected_label = tex_text(label)
    doc = _doc(DTITLE=title, DLABEL=label, DLEAN=lean, TTITLE=title, TLEAN=lean, USES=label,
               REF=label, BODY="Every nice integer is even.\n" + body, PROOF=proof)
    dag, files, report = _plan(root, doc)
    assert not [f for f in report.findings if f.rule == "malformed-provenance"], report.findings
    for unit, unit_files in files.items():
        problem = unit_files["problem.tex"].decode()
        block = _provenance_lines(problem)
        assert all(line.startswith("%") for line in block)
        assert [ln for ln in problem.split("\n") if ln.strip() == END] == [END]
    main = files["thm-main"]["problem.tex"].decode()
    names = _model_names(lean)
    if names:
        assert f"% lean (from the source): {', '.join(names)}" in main
    # the \uses and \ref with the same text are one dependency on the definition
    assert any(line.startswith("% depends on: def-") or line.startswith("% depends on: ")
               and "(uses" in line for line in _provenance_lines(main))
    assert expected_label in {s.label for s in dag.units if s.kind == "definition"} | {
        line.removeprefix("% label: ") for u in files.values() for line in _provenance_lines(u["problem.tex"].decode())}


@pytest.mark.parametrize(("term", "folded"), [
    ("nice % the word we define\n   integer", "nice integer"),
    ("nice\n  integer", "nice integer"),
    ("nice%\n  integers", "niceintegers"),
])
def test_defined_terms_are_read_as_tex_reads_them(tmp_path, term, folded):
    from fyan.intake.tex import read_tex

    (tmp_path / "d.tex").write_text("\\begin{definition}\\label{d} An integer $n$ is a \\emph{" + term + "} if "
                                    "it is even.\\end{definition}\n", encoding="utf-8")
    assert read_tex(tmp_path / "d.tex").statements[0].defined_terms == [folded]
