"""``fyan export blueprint``: leanblueprint TeX from the store, and the round trip (export,
re-import with the TeX intake, same units and edges)."""

from __future__ import annotations

import json
import re

import pytest

from fyan.cli import main
from fyan.config import IntakeSection
from fyan.intake.tex import read_tex
from fyan.specifier.dag import extract_edges
from fyan.specifier.units import build_units
from fyan.state.store import Store
from tests.conftest import corpus, write
from tests.pdfgen import text_page, write_pdf
from tests.test_intake_markdown import DOC

KINDS = IntakeSection().unit_kinds


def run(capsys, *argv):
    code = main([*argv, "--json"])
    out = capsys.readouterr().out
    return code, json.loads(out)


def collapse(triples):
    """(unit, dependency) -> True when the dependency is only needed by the proof."""
    out: dict[tuple[str, str], bool] = {}
    for unit, dep, in_proof in triples:
        out[(unit, dep)] = out.get((unit, dep), True) and in_proof
    return out


def round_trip(project):
    """Units and edges of the store, and of the exported blueprint read back by the TeX intake."""
    store = Store(project / ".fyan" / "state.db")
    cat = read_tex(project / "blueprint" / "src" / "web.tex")
    units = build_units(cat, KINDS)
    edges = extract_edges(cat, units).edges
    before = ([(u.id, u.kind) for u in store.units()], collapse((d.unit, d.depends_on, d.in_proof) for d in store.deps()))
    after = ([(u.id, u.kind) for u in units], collapse((e.unit, e.depends_on, e.in_proof) for e in edges))
    store.close()
    return before, after, cat


def test_export_of_the_completed_example_round_trips(example, fake_lake, capsys, monkeypatch):
    code, summary = run(capsys, "run", str(example))
    assert code == 0, (summary.get("blocked"), summary.get("notes"))
    code, report = run(capsys, "export", "blueprint", str(example))
    assert code == 0 and report["units"] == 11 and report["leanok_proofs"] == 11 and report["leanok_statements"] == 11
    out = example / "blueprint" / "src"
    assert set(report["written"]) == {"content.tex", "macros/common.tex", "web.tex", "print.tex", "macros/web.tex",
                                      "macros/print.tex", "plastex.cfg"}
    content = (out / "content.tex").read_text()
    store = Store(example / ".fyan" / "state.db")
    for u in store.units():
        decls = [f.decl for f in store.freezes(u.id)]
        assert decls and f"\\lean{{{', '.join(decls)}}}" in content
    store.close()
    assert "\\begin{theorem}\n  \\label{theorem-8}" in content  # unlabelled in the source: its unit id
    assert "\\usepackage[showmore, dep_graph, thms=definition+theorem+corollary]{blueprint}" in (out / "web.tex").read_text()
    common = (out / "macros" / "common.tex").read_text()
    assert "\\newtheorem{theorem}{Theorem}" in common and "\\newtheorem{corollary}[theorem]{Corollary}" in common
    before, after, cat = round_trip(example)
    assert after == before
    # \lean and \leanok come back too: every statement and proof is marked formalized
    assert all(s.leanok and s.lean_names and s.proof is not None and s.proof.leanok for s in cat.statements)
    # a second export keeps the files a user may have edited
    (out / "web.tex").write_text("% mine\n")
    code, report = run(capsys, "export", "blueprint", str(example))
    assert report["kept"] == ["web.tex", "print.tex", "macros/web.tex", "macros/print.tex", "plastex.cfg"]
    assert (out / "web.tex").read_text() == "% mine\n"


@pytest.mark.parametrize("rel", ["blueprints/dirichlet_nonvanishing/blueprint/src/content.tex",
                                 "blueprints/ramanujan_nagell/blueprint/src/web.tex"])
def test_corpus_blueprints_round_trip(tmp_path, capsys, rel):
    source = corpus(rel)
    code, init = run(capsys, "init", str(tmp_path / "p"), "--source", str(source))
    assert code == 0, init
    code, report = run(capsys, "export", "blueprint", str(tmp_path / "p"), "--out", str(tmp_path / "p" / "blueprint" / "src"))
    assert code == 0
    before, after, cat = round_trip(tmp_path / "p")
    assert after == before and len(before[0]) == init["units"]
    content = re.sub(r"(?m)^%.*$", "", (tmp_path / "p" / "blueprint" / "src" / "content.tex").read_text())
    # nothing is formalized in this new project: the source's \lean and \leanok are not claimed
    assert "\\leanok" not in content and "\\lean{" not in content
    assert report["uses"] == sum(1 for m in re.finditer(r"\\uses\{([^}]*)\}", content) for _ in m.group(1).split(","))


def test_pdf_and_markdown_projects_export_and_round_trip(tmp_path, capsys):
    pdf = write_pdf(tmp_path / "notes.pdf", [text_page([
        ("Definition 1.1.", " An integer n is even if n = 2k; 100% of evens are #even_ones."),
        "",
        ("Theorem 1.2 (Squares).", " If n is even, then n^2 is even, by Definition 1.1."),
        ("Proof.", " By Definition 1.1. QED"),
    ])])
    md = write(tmp_path / "notes.md", DOC.replace("Some prose", "**Lemma 6.** True for 100% of $n$ & more.\n\nSome prose"))
    for name, source in (("pdfp", pdf), ("mdp", md)):
        code, init = run(capsys, "init", str(tmp_path / name), "--source", str(source))
        assert code == 0, init
        assert main(["export", "blueprint", str(tmp_path / name)]) == 0
        capsys.readouterr()
        before, after, _ = round_trip(tmp_path / name)
        assert after == before
    content = (tmp_path / "pdfp" / "blueprint" / "src" / "content.tex").read_text()
    assert "100\\% of evens are \\#even\\_ones." in content  # PDF text is escaped for TeX
    assert "\\begin{theorem}[Squares]\n  \\label{Theorem 1.2}\n  \\uses{Definition 1.1}\n" in content
    md_content = (tmp_path / "mdp" / "blueprint" / "src" / "content.tex").read_text()
    assert "\\emph{even}" in md_content and "(\\ref{def-even})" in md_content and "**" not in md_content
    assert "True for 100\\% of $n$ \\& more." in md_content


def test_reference_to_a_label_the_export_does_not_define(tmp_path, capsys):
    source = write(tmp_path / "doc" / "m.tex", r"""\section{Intro}\label{sec:intro}
\begin{remark}\label{rem:r} A remark. \end{remark}
\begin{lemma}\label{l} As in Section~\ref{sec:intro} and \cref{rem:r, l2}, \lean{Foo.bar}\leanok x. \end{lemma}
\begin{lemma}\label{l2} y \end{lemma}
""")
    assert main(["init", str(tmp_path / "p"), "--source", str(source)]) == 0
    assert main(["export", "blueprint", str(tmp_path / "p")]) == 0
    content = re.sub(r"(?m)^%.*$", "", (tmp_path / "p" / "blueprint" / "src" / "content.tex").read_text())
    assert "As in Section~\\texttt{sec:intro} and \\cref{l2} (\\texttt{rem:r})," in content
    assert "Foo.bar" not in content  # not a declaration of this project
    before, after, _ = round_trip(tmp_path / "p")
    assert after == before


def test_export_before_ingest_is_an_error(tmp_path, capsys):
    write(tmp_path / "p" / "fyan.toml", '[project]\nname = "p"\nsource = "source/m.tex"\n')
    assert main(["export", "blueprint", str(tmp_path / "p")]) == 4
    assert "has not been ingested yet" in capsys.readouterr().err


def test_claims_nested_in_a_proof_are_exported_once(tmp_path, capsys):
    source = write(tmp_path / "doc" / "m.tex", r"""\newtheorem{claim}{Claim}
\begin{theorem}\label{t} $n > 1$. \end{theorem}
\begin{proof}
\begin{claim}\label{c} $n \ge 2$. \end{claim}
\begin{proof} Trivial. \end{proof}
Hence the theorem.
\end{proof}
""")
    assert main(["init", str(tmp_path / "p"), "--source", str(source)]) == 0
    assert main(["export", "blueprint", str(tmp_path / "p")]) == 0
    content = (tmp_path / "p" / "blueprint" / "src" / "content.tex").read_text()
    assert content.count("\\label{c}") == 1 and "(\\cref{c})" in content and "Hence the theorem." in content
    before, after, _ = round_trip(tmp_path / "p")
    assert after == before and before[1] == {("t", "c"): True}


def test_the_export_keeps_the_documents_chapters_and_sections(tmp_path, capsys):
    """PFR's blueprint: every unit stands, in the exported blueprint read back, under the same
    chapter and section as in the source (the export used to put every unit under one chapter
    named after the project)."""
    from fyan.intake.catalogue import Catalogue

    code, init = run(capsys, "init", str(tmp_path / "p"), "--source", str(corpus("blueprints/pfr.content.flat.tex")))
    assert code == 0, init
    code, _ = run(capsys, "export", "blueprint", str(tmp_path / "p"))
    assert code == 0
    store = Store(tmp_path / "p" / ".fyan" / "state.db")
    source = Catalogue.model_validate_json(store.meta("catalogue"))
    want = {u.id: source.statements[u.statements[0]].section for u in store.units()}
    store.close()
    before, after, cat = round_trip(tmp_path / "p")
    assert after[0] == before[0]
    got = {u.id: cat.statements[u.statements[0]].section for u in build_units(cat, KINDS)}
    assert len({tuple(s[:1]) for s in want.values()}) >= 5  # several chapters
    assert got == want
    content = (tmp_path / "p" / "blueprint" / "src" / "content.tex").read_text()
    assert "\\chapter{p}" not in content and content.count("\\chapter{Entropy version of PFR}") == 1
