"""A document's includes followed as LaTeX follows them: the import package's commands, subfiles
with their preamble, include and label commands the document defines itself (in its preamble
or a local package or class), and a file it includes that intake could not find or did not
follow named in the intake report and in the refusal it explains."""

from __future__ import annotations

from pathlib import Path

import pytest

from fyan.errors import InputError
from fyan.intake.tex import read_tex
from fyan.project import Project
from fyan.specifier.ingest import plan_ingest

THM = "\\newtheorem{theorem}{Theorem}\n\\newtheorem{lemma}{Lemma}\n"


def _tree(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root / "main.tex"


def _labels(root: Path, files: dict[str, str]) -> list[str]:
    cat = read_tex(_tree(root, files))
    return sorted(s.label for s in cat.statements if s.label)


LEMMA = "\\begin{lemma}\\label{lem:%s} Something %s.\\end{lemma}\n"

MEMBERS = [
    pytest.param({"main.tex": f"\\documentclass{{article}}\\usepackage{{import}}\n{THM}\\begin{{document}}\n"
                  "\\import{chapters/}{one}\n\\end{document}\n",
                  "chapters/one.tex": LEMMA % ("a", "a") + "\\input{two}\n",  # \input inside: from chapters/
                  "chapters/two.tex": LEMMA % ("b", "b")}, ["lem:a", "lem:b"], id="import-and-input-inside"),
    pytest.param({"main.tex": f"\\documentclass{{article}}\\usepackage{{import}}\n{THM}\\begin{{document}}\n"
                  "\\subimport{sub/}{part}\n\\end{document}\n",
                  "sub/part.tex": LEMMA % ("a", "a") + "\\subimport*{deeper/}{more}\n",
                  "sub/deeper/more.tex": LEMMA % ("b", "b")}, ["lem:a", "lem:b"], id="subimport-nested"),
    pytest.param({"main.tex": f"\\documentclass{{article}}\\usepackage{{import}}\n{THM}\\begin{{document}}\n"
                  "\\inputfrom{a}{x}\\includefrom{b/}{y}\\subincludefrom{c/}{z}\\subinputfrom{d/}{w.tex}\n"
                  "\\end{document}\n",
                  "a/x.tex": LEMMA % ("a", "a"), "b/y.tex": LEMMA % ("b", "b"), "c/z.tex": LEMMA % ("c", "c"),
                  "d/w.tex": LEMMA % ("d", "d")}, ["lem:a", "lem:b", "lem:c", "lem:d"], id="from-forms"),
    pytest.param({"main.tex": "\\documentclass{book}\\usepackage{subfiles}\n\\newtheorem{theorem}{Theorem}"
                  "\n\\begin{document}\n\\subfile{ch/one}\n\\end{document}\n",
                  "ch/one.tex": "\\documentclass[../main.tex]{subfiles}\n\\newtheorem{prop}{Proposition}\n"
                  "\\begin{document}\n\\begin{prop}\\label{p:one} A proposition.\\end{prop}\n\\end{document}\n"},
                 ["p:one"], id="subfile-with-its-preamble"),
    pytest.param({"main.tex": f"\\documentclass{{article}}\\usepackage{{mymacros}}\n{THM}\\begin{{document}}\n"
                  "\\chapterfile{one}\n\\section{S}\\lemmafrom{sec}{two}\n\\end{document}\n",
                  "mymacros.sty": "\\ProvidesPackage{mymacros}\n\\RequirePackage{import}\n"
                  "\\DeclareDocumentCommand{\\chapterfile}{m}{\\input{chapters/#1}}\n"
                  "\\newcommand{\\lemmafrom}[2]{\\subimport{#1/}{#2}}\n",
                  "chapters/one.tex": LEMMA % ("a", "a"), "sec/two.tex": LEMMA % ("b", "b")},
                 ["lem:a", "lem:b"], id="own-include-commands-in-a-local-package"),
    pytest.param({"main.tex": "\\documentclass{mybook}\n\\begin{document}\n\\part{one}\n\\end{document}\n",
                  "mybook.cls": "\\LoadClass{book}\n\\newtheorem{lemma}{Lemma}\n"
                  "\\def\\part#1{\\include{parts/#1}}\n",
                  "parts/one.tex": LEMMA % ("a", "a")}, ["lem:a"], id="include-command-in-a-local-class"),
    pytest.param({"main.tex": f"\\documentclass{{article}}\n{THM}\\newcommand{{\\chapdir}}{{chapters}}\n"
                  "\\newcommand{\\inc}[1]{\\input{\\chapdir/#1}}\n\\newcommand{\\incc}[1]{\\inc{#1}}\n"
                  "\\begin{document}\n\\incc{one}\n\\end{document}\n",
                  "chapters/one.tex": LEMMA % ("a", "a")}, ["lem:a"], id="wrapper-of-a-wrapper-with-a-path-macro"),
]


@pytest.mark.parametrize(("files", "labels"), MEMBERS)
def test_includes_are_followed_as_latex_follows_them(tmp_path, files, labels):
    assert _labels(tmp_path, files) == labels


LABEL_MEMBERS = [
    pytest.param("\\newcommand{\\ollabel}[1]{\\label{ol:#1}}", "\\ollabel{a}", "ol:a", id="newcommand-prefix"),
    pytest.param("\\DeclareDocumentCommand{\\mylabel}{m}{\\label{#1}\\hypertarget{#1}{}}", "\\mylabel{a}", "a",
                 id="document-command"),
    pytest.param("\\def\\tl#1{\\label{thm:#1}}\\newcommand{\\ollabel}[1]{\\tl{#1}}", "\\ollabel{a}", "thm:a",
                 id="wrapper-of-a-wrapper"),
]


@pytest.mark.parametrize(("define", "use", "label"), LABEL_MEMBERS)
def test_label_wrappers_define_the_label_they_expand_to(tmp_path, define, use, label):
    files = {"main.tex": f"\\documentclass{{article}}\n{THM}{define}\n\\begin{{document}}\n"
             f"\\begin{{lemma}}{use} First.\\end{{lemma}}\n"
             f"\\begin{{theorem}}\\label{{thm:t}} By \\ref{{{label}}}.\\end{{theorem}}\n\\end{{document}}\n"}
    root = tmp_path / "src"
    cat = read_tex(_tree(root, files))
    assert cat.statements[0].label == label
    (tmp_path / "p").mkdir()
    (tmp_path / "p" / "source").symlink_to(root)
    (tmp_path / "p" / "fyan.toml").write_text('[project]\nname = "t"\nsource = "source/main.tex"\n')
    dag, _, _, report = plan_ingest(Project.open(tmp_path / "p"))
    assert report.references.unresolved == 0 and report.references.kept == 1


def test_a_missing_skippable_include_is_named_in_the_report_and_the_refusal(tmp_path):
    files = {"main.tex": f"\\documentclass{{article}}\n{THM}\\begin{{document}}\n"
             "\\include{chapters/gone}\n\\includefrom{x/}{gone}\n\\end{document}\n"}
    root = tmp_path / "src"
    _tree(root, files)
    (tmp_path / "p").mkdir()
    (tmp_path / "p" / "source").symlink_to(root)
    (tmp_path / "p" / "fyan.toml").write_text('[project]\nname = "t"\nsource = "source/main.tex"\n')
    with pytest.raises(InputError) as e:
        plan_ingest(Project.open(tmp_path / "p"))
    assert "main.tex:5 \\include{chapters/gone}: file not found" in str(e.value)
    assert "main.tex:6 \\includefrom{x/}{gone}: file not found" in str(e.value)


def test_an_include_not_followed_explains_an_unknown_label(tmp_path):
    files = {"main.tex": f"\\documentclass{{article}}\n{THM}\\begin{{document}}\n"
             "\\begin{theorem}\\label{thm:t} By \\ref{lem:a}.\\end{theorem}\n"
             "\\input{\\notmine/one}\n\\includefrom{x/}{gone}\n\\end{document}\n"}
    root = tmp_path / "src"
    _tree(root, files)
    (tmp_path / "p").mkdir()
    (tmp_path / "p" / "source").symlink_to(root)
    (tmp_path / "p" / "fyan.toml").write_text('[project]\nname = "t"\nsource = "source/main.tex"\n'
                                             '[intake]\nunknown_references = "error"\n')
    with pytest.raises(InputError) as e:
        plan_ingest(Project.open(tmp_path / "p"))
    assert "defined nowhere" in str(e.value)
    assert "main.tex:6 \\input{\\notmine/one}: its path holds a macro intake does not expand" in str(e.value)
    (tmp_path / "p" / "fyan.toml").write_text('[project]\nname = "t"\nsource = "source/main.tex"\n'
                                             '[intake]\nunknown_references = "warn"\n')
    report = plan_ingest(Project.open(tmp_path / "p"))[3]
    assert [x.split(":")[0] for x in report.unfollowed_includes] == ["main.tex", "main.tex"]
    from fyan.specifier.report import intake_report

    assert "included files not read (2" in intake_report(report)


def test_a_missing_import_is_refused_naming_the_command(tmp_path):
    files = {"main.tex": f"\\documentclass{{article}}\n{THM}\\begin{{document}}\n\\subimport{{sub/}}{{gone}}\n"
             "\\end{document}\n"}
    with pytest.raises(InputError, match=r"main\.tex:5: included file 'sub/gone' not found \(\\subimport\{sub/\}\{gone\}; looked in"):
        read_tex(_tree(tmp_path, files))
