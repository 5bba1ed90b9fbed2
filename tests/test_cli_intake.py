"""`fyan init` on PDF, Markdown and TeX sources, and the errors a user sees for bad input."""

from __future__ import annotations

import json

from fyan.cli import main
from fyan.specifier.problem import PDF_NOTE
from tests.conftest import write
from tests.pdfgen import blank_pdf, text_page, write_pdf
from tests.test_intake_markdown import DOC


def run(capsys, *argv):
    code = main([*argv, "--json"])
    captured = capsys.readouterr()
    return code, json.loads(captured.out)


def test_init_from_a_pdf(tmp_path, capsys):
    pdf = write_pdf(tmp_path / "in" / "notes.pdf", [text_page([
        ("Definition 1.", " A number n is even if n = 2k."),
        "",
        ("Lemma 2.", " If n is even, so is n + 2 (Definition 1)."),
    ])])
    code, result = run(capsys, "init", str(tmp_path / "p"), "--source", str(pdf))
    assert code == 0, result
    assert (result["format"], result["units"], result["edges"], result["findings"]) == ("pdf", 2, 1, [])
    assert (tmp_path / "p" / "source" / "notes.pdf").read_bytes() == pdf.read_bytes()
    problem = (tmp_path / "p" / "units" / "lemma-2" / "problem.tex").read_text()
    assert "% source: source/notes.pdf, page 1, characters " in problem and PDF_NOTE in problem
    assert "% depends on: definition-1 (ref, statement; notes.pdf:p1 'Definition 1')" in problem
    assert problem.endswith("Lemma 2. If n is even, so is n + 2 (Definition 1).\n")
    assert 'source = "source/notes.pdf"' in (tmp_path / "p" / "fyan.toml").read_text()


def test_init_from_markdown(tmp_path, capsys):
    md = write(tmp_path / "in" / "notes.md", DOC)
    code, result = run(capsys, "init", str(tmp_path / "p"), "--source", str(md))
    assert code == 0 and result["format"] == "markdown" and result["units"] == 5
    problem = (tmp_path / "p" / "units" / "thm-squares" / "problem.tex").read_text()
    assert "% source: source/notes.md, lines 11-15" in problem
    assert "$$ n^2 = 4k^2 \\quad \\text{where } a_1*b_1*c $$" in problem  # math verbatim


def test_dangling_references_warn_by_default_and_stop_init_when_strict(tmp_path, capsys):
    src = write(tmp_path / "in" / "m.tex", "\\begin{lemma}\\label{a}\nBy \\ref{elsewhere}.\n\\end{lemma}\n")
    for strict in (["--strict"], ["--unknown-references", "error"]):
        assert main(["init", str(tmp_path / "p"), "--source", str(src), *strict]) == 4
        err = capsys.readouterr().err
        assert "m.tex:2: \\ref{elsewhere} in a: unknown label" in err and "--unknown-references warn" in err
        assert not (tmp_path / "p").exists()
    code, result = run(capsys, "init", str(tmp_path / "p"), "--source", str(src), "--unknown-references", "warn")
    assert code == 0
    assert result["warnings"] == [{"code": "unknown-label", "where": "m.tex:2",
                                   "message": "\\ref{elsewhere} in a: unknown label; no edge"}]
    assert 'unknown_references = "warn"' in (tmp_path / "p" / "fyan.toml").read_text()
    # without --json, every warning is printed on stderr; warn is the default
    assert main(["init", str(tmp_path / "q"), "--source", str(src)]) == 0
    captured = capsys.readouterr()
    assert "warning: m.tex:2: \\ref{elsewhere} in a: unknown label; no edge" in captured.err
    assert "1 warning(s) on stderr" in captured.out


def test_uses_to_an_unknown_label_is_an_error_with_file_and_line_when_strict(tmp_path, capsys):
    src = write(tmp_path / "in" / "bp.tex", "\\begin{lemma}\\label{a}\n\\uses{b, c}\n\\end{lemma}\n"
                "\\begin{lemma}\\label{b}x\\end{lemma}\n")
    assert main(["init", str(tmp_path / "p"), "--source", str(src), "--strict"]) == 4
    assert "bp.tex:2: \\uses{c} in a: unknown label" in capsys.readouterr().err


def test_bad_pdfs_leave_nothing_behind(tmp_path, capsys):
    for name, path in (("scan", blank_pdf(tmp_path / "scan.pdf")), ("junk", write(tmp_path / "junk.tex", "\x00junk"))):
        assert main(["init", str(tmp_path / name), "--source", str(path)]) == 4
        assert not (tmp_path / name).exists()
    err = capsys.readouterr().err
    assert "scan.pdf: the PDF has no text layer" in err and "junk.tex: binary file, not TeX" in err


# -- the first ingest through `fyan run`, `fyan resume` or the daemon reports its warnings -----------

#: Six references to labels defined nowhere and a missing file LaTeX writes itself: 7 warnings.
WARNED = "".join(f"\\begin{{lemma}}\\label{{l{i}}} By \\ref{{gone{i}}}. \\end{{lemma}}\n" for i in range(6)) \
    + "\\input{m.aux}\n"


def _uningested(tmp_path, capsys):
    src = write(tmp_path / "in" / "m.tex", WARNED)
    assert main(["init", str(tmp_path / "p"), "--source", str(src), "--unknown-references", "warn",
                 "--no-ingest"]) == 0
    # a model is configured: replay from an empty cassette (every stage misses and the units block)
    config = tmp_path / "p" / "fyan.toml"
    config.write_text(config.read_text().replace('provider = "none"', 'provider = "replay"'))
    write(tmp_path / "p" / "replay" / "cassette.jsonl", "")
    capsys.readouterr()
    return tmp_path / "p"


def test_the_first_run_prints_intakes_warnings_grouped_as_init_does(tmp_path, capsys, no_lake):
    project = _uningested(tmp_path, capsys)
    code = main(["run", str(project)])
    captured = capsys.readouterr()
    assert code == 3  # the units block (the replay cassette answers nothing): not the point here
    assert captured.err.startswith("7 warnings:\n")
    assert "  generated-input (1): missing files that LaTeX writes during its own run (skipped)\n" in captured.err
    assert "  unknown-label (6): references to labels defined nowhere in the document (no edge)\n" in captured.err
    assert all(f"m.tex:{i + 1}: \\ref{{gone{i}}} in l{i}: unknown label; no edge" in captured.err for i in range(6))
    assert "Ingested source/m.tex: 6 units, 0 edges, 1 layer(s)\n  7 warning(s) on stderr\n" in captured.out
    # the next run ingests nothing and repeats nothing
    main(["run", str(project)])
    again = capsys.readouterr()
    assert "warnings:" not in again.err and "Ingested" not in again.out


def test_the_first_run_lists_intakes_warnings_in_json_and_resume_prints_them(tmp_path, capsys, no_lake):
    project = _uningested(tmp_path, capsys)
    main(["run", str(project), "--json"])
    captured = capsys.readouterr()
    result = json.loads(captured.out)
    assert [w["code"] for w in result["ingest"]["warnings"]] == ["generated-input"] + ["unknown-label"] * 6
    assert captured.err == ""  # --json: the warnings are in the JSON only
    other = _uningested(tmp_path / "second", capsys)
    main(["resume", str(other)])
    assert capsys.readouterr().err.startswith("7 warnings:\n")


def test_a_daemon_that_ingests_logs_intakes_warnings(tmp_path, capsys, no_lake):
    from fyan.daemon import Daemon, DaemonOptions

    project = _uningested(tmp_path, capsys)
    daemon = Daemon(project, DaemonOptions(watch=False, until_idle=True))
    daemon.serve()
    records = [json.loads(line) for line in (project / ".fyan" / "logs" / "fyan.jsonl").read_text().splitlines()]
    warned = [(r["code"], r["where"]) for r in records if r["event"] == "ingest_warning"]
    assert warned == [("generated-input", "m.tex:7")] + [("unknown-label", f"m.tex:{i + 1}") for i in range(6)]
    (ingested,) = [r for r in records if r["event"] == "ingested"]
    assert (ingested["units"], ingested["warnings"]) == (6, 7)
    (note,) = [n for n in daemon.notes if "first ingest" in n]
    assert "first ingest: 7 warnings:\n  generated-input (1)" in note and "\\ref{gone5} in l5" in note


def test_a_folder_given_as_the_source_gets_its_likely_main_files_as_a_hint(tmp_path, capsys):
    folder = tmp_path / "src"
    (folder / "chapter").mkdir(parents=True)
    (folder / "chapter" / "one.tex").write_text("\\begin{lemma}\\label{l} $1 = 1$. \\end{lemma}\n")
    (folder / "print.tex").write_text("\\documentclass{article}\n\\begin{document}\\input{chapter/one}\\end{document}\n")
    assert main(["init", str(tmp_path / "p"), "--source", str(folder)]) == 4
    err = capsys.readouterr().err
    assert f"{folder}: is a folder; give the main document file" in err
    assert f"hint: give one of its files, e.g. --source {folder / 'print.tex'}" in err
    assert "one.tex" not in err  # no \\documentclass: not a main file
    assert not (tmp_path / "p").exists()
    empty = tmp_path / "empty"
    empty.mkdir()
    assert main(["init", str(tmp_path / "q"), "--source", str(empty)]) == 4
    assert "hint: no .tex file with \\documentclass, .md or .pdf file is in" in capsys.readouterr().err
