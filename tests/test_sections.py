"""The document's structure at intake: each statement records the headings it stands
under (``Statement.section``: chapter, section, ... as plain text), in TeX (across ``\\input``,
starred and short-titled headings, a deeper heading closed by a shallower one, a heading quoted
inside a statement ignored) and in Markdown (a statement's own heading is not a section); the
status payload (what ``fyan status --json`` and the dashboard show) carries each unit's section
and the cause it is blocked by."""

from __future__ import annotations

from pathlib import Path

from fyan.cli import main
from fyan.intake.markdown import read_markdown
from fyan.intake.tex import read_tex
from fyan.orchestrator.status import project_status
from fyan.project import Project
from fyan.state.store import Store
from tests.conftest import corpus, write


def sections(catalogue) -> dict[str, list[str]]:
    return {s.display: s.section for s in catalogue.statements}


def test_tex_statements_record_the_headings_they_stand_under(tmp_path: Path):
    write(tmp_path / "ch2.tex", "\\chapter{The \\texorpdfstring{$m$}{m}-torsion case}\n"
          "\\begin{lemma}\\label{c}C.\\end{lemma}\n\\subsection{Deep}\n\\begin{lemma}\\label{d}D.\\end{lemma}\n")
    main_tex = write(tmp_path / "main.tex", "\\documentclass{book}\\begin{document}\n"
                     "\\begin{lemma}\\label{a0}Before any heading.\\end{lemma}\n"
                     "\\chapter[Short]{Entropy \\emph{inequalities}}\n\\section*{First estimate}\n"
                     "\\begin{lemma}\\label{a}A. \\section{quoted, not a heading}\\end{lemma}\n"
                     "\\section{Second  estimate}\n\\begin{theorem}\\label{b}B by \\ref{a}.\\end{theorem}\n"
                     "\\input{ch2}\n\\section{After the input}\n\\begin{lemma}\\label{e}E.\\end{lemma}\n"
                     "\\begin{subsection}{As an environment}\\begin{lemma}\\label{f}F.\\end{lemma}\\end{subsection}\n"
                     "\\begin{lemma}\\label{g}G.\\end{lemma}\n\\end{document}\n")
    got = sections(read_tex(main_tex))
    assert got == {
        "a0": [],
        "a": ["Entropy inequalities", "First estimate"],
        "b": ["Entropy inequalities", "Second estimate"],
        "c": ["The m-torsion case"],
        "d": ["The m-torsion case", "Deep"],
        "e": ["The m-torsion case", "After the input"],
        "f": ["The m-torsion case", "After the input", "As an environment"],
        "g": ["The m-torsion case", "After the input"],  # the environment closed its heading
    }


def test_pfr_blueprint_sections():
    got = sections(read_tex(corpus("blueprints/pfr.content.flat.tex")))
    assert got["entropy-pfr"] == ["Entropy version of PFR", "Conclusion"]
    assert {tuple(v[:1]) for v in got.values()} >= {("Shannon entropy inequalities",), ("The m-torsion case",)}
    assert all(v for v in got.values())  # the flat blueprint opens with a chapter


def test_markdown_statements_record_their_headings_not_their_own(tmp_path: Path):
    doc = write(tmp_path / "notes.md", "# Intro\n\n**Lemma 1.** Foo.\n\n## Part *A*\n\n## Theorem 2\n\n"
                "Bar by Lemma 1.\n\n# Next\n\n**Definition 3.** x.\n")
    assert sections(read_markdown(doc)) == {"Lemma 1": ["Intro"], "Theorem 2": ["Intro", "Part A"],
                                            "Definition 3": ["Next"]}


def test_status_payload_carries_section_and_cause(example, no_lake, capsys):
    assert main(["run", str(example), "--json"]) == 3
    capsys.readouterr()
    project = Project.open(example)
    store = Store(project.paths.db)
    try:
        units = {u["id"]: u for u in project_status(project, store, with_stale=False).units}
    finally:
        store.close()
    assert {tuple(u["section"]) for u in units.values()} == {("A Taste of Number Theory",)}  # \\begin{section}{...}
    # the cause is the failed units'; the units waiting on them name them instead (waiting_on)
    failed = {u for u, x in units.items() if x["status"] == "failed"}
    assert failed == {"definition-1", "def-divides"}
    assert {units[u]["cause"] for u in failed} == {"Lean toolchain not found"}
    assert all(x["cause"] is None and set(x["waiting_on"]) <= failed and x["waiting_on"]
               for u, x in units.items() if u not in failed)
