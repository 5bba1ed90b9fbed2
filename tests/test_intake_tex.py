"""TeX intake on real corpus documents and on bad input."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import pytest

from fyan.errors import InputError
from fyan.intake import read_source
from fyan.intake.tex import read_tex
from tests.conftest import corpus, write


def strip_comments(tex: str) -> str:
    return "\n".join(re.sub(r"(?<!\\)%.*", "", line) for line in tex.splitlines())

STMT_KINDS = {"theorem", "lemma", "proposition", "corollary", "claim"}


def counts(cat):
    kinds = Counter(s.kind for s in cat.statements)
    uses = [r for s in cat.statements for r in s.references if r.macro == "uses"]
    return {
        "stmt": sum(n for k, n in kinds.items() if k in STMT_KINDS),
        "def": kinds["definition"],
        "labels": len(cat.labels),
        "uses": len(uses),
        "uses_stmt": sum(not r.in_proof for r in uses),
        "uses_proof": sum(r.in_proof for r in uses),
    }


def assert_provenance_exact(cat, root: Path):
    """Every statement's first line holds its \\begin and its last line its \\end."""
    for s in cat.statements:
        lines = (root / s.provenance.file).read_text(encoding="utf-8").splitlines()
        assert f"\\begin{{{s.env}}}" in lines[s.provenance.line_start - 1], s.provenance
        assert f"\\end{{{s.env}}}" in lines[s.provenance.line_end - 1], s.provenance
        if s.proof is not None:
            p = s.proof.provenance
            plines = (root / p.file).read_text(encoding="utf-8").splitlines()
            assert "\\begin{proof}" in plines[p.line_start - 1]


def test_ernst_section_counts_and_provenance():
    path = corpus("notes/ernst_ibl_intro_to_proof/TasteNumberTheory.tex")
    cat = read_tex(path)
    kinds = Counter(s.kind for s in cat.statements)
    # 8 theorems, 1 corollary, 2 definitions; 4 problems (one more is commented out: not counted)
    assert kinds == {"theorem": 8, "corollary": 1, "definition": 2, "problem": 4}
    assert_provenance_exact(cat, path.parent)
    first = cat.by_label("thm:n even implies n^2 even")
    assert first is not None and first.kind == "theorem"
    assert "$n^2$ is an even integer" in first.body
    divides = cat.by_label("def:divides")
    assert divides.defined_terms == ["divides", "divisible by", "factor"]


def test_ernst_number_theory_sections_match_manifest():
    cat = read_tex(corpus("notes/ernst_ibl_intro_to_proof/ernst_number_theory_sections.concat.tex"))
    c = counts(cat)
    # MANIFEST: 30 stmt, 8 def, 34 labels
    assert (c["stmt"], c["def"], c["labels"]) == (30, 8, 34)


def test_dirichlet_blueprint_matches_manifest():
    path = corpus("blueprints/dirichlet_nonvanishing/blueprint/src/content.tex")
    cat = read_tex(path)
    c = counts(cat)
    # MANIFEST: stmt 10, def 2, labels 13, \uses 8 commands / 14 items, \lean 12
    assert (c["stmt"], c["def"], c["labels"], c["uses"]) == (10, 2, 13, 14)
    assert sum(len(s.lean_names) > 0 for s in cat.statements) == 12
    assert_provenance_exact(cat, path.parent)
    # statement-level and proof-level \uses are kept apart
    assert c["uses_stmt"] > 0 and c["uses_proof"] > 0


def test_ramanujan_nagell_matches_manifest():
    cat = read_tex(corpus("blueprints/ramanujan_nagell/blueprint/src/content.tex"))
    c = counts(cat)
    assert (c["stmt"], c["def"], c["labels"], c["uses"]) == (61, 8, 69, 155)


def test_pfr_multi_file_through_input_matches_manifest():
    src = corpus("blueprints/pfr/blueprint/src")
    cat = read_tex(src / "web.tex")
    assert cat.files[:4] == ["web.tex", "preamble/common.tex", "preamble/web.tex", "chapter/main.tex"]
    assert len(cat.files) == 17  # web, 2 preamble files, main, 13 chapters
    c = counts(cat)
    # MANIFEST: stmt 188, def 30, labels 269, \uses 497 items (65 commands in statements, 167 in proofs)
    assert (c["stmt"], c["def"], c["labels"], c["uses"]) == (188, 30, 269, 497)
    commands = [len(re.findall(r"\\uses\{", strip_comments(s.body))) for s in cat.statements]
    proof_commands = [len(re.findall(r"\\uses\{", strip_comments(s.proof.body))) for s in cat.statements if s.proof]
    assert (sum(commands), sum(proof_commands)) == (65, 167)
    assert_provenance_exact(cat, src)
    # the flat file gives the same statements
    flat = read_tex(corpus("blueprints/pfr.content.flat.tex"))
    assert [s.label for s in flat.statements] == [s.label for s in cat.statements]


def test_chapter_main_read_as_main_file_resolves_from_the_blueprint_root():
    src = corpus("blueprints/pfr/blueprint/src")
    cat = read_tex(src / "chapter/main.tex", source_root=src)
    assert len(cat.statements) == 218


def test_newtheorem_aliases_proofs_labels_and_references(tmp_path):
    main = write(tmp_path / "main.tex", r"""\documentclass{article}
\newtheorem{thmx}{Theorem}
\newtheorem{prob}[thmx]{Problem}
\newtheorem*{keylem}{Key Lemma}
\begin{document}
\input{defs}
\begin{thmx}[Main]\label{thm:main}
By Lemma~\ref{lem:key} and \cref{def:a, eq:inner}, $x$.
\end{thmx}
\begin{proof}
Use \eqref{eq:inner} and \autoref{lem:key}. \uses{def:a}
\end{proof}
\begin{keylem}\label{lem:key} Something \begin{equation}\label{eq:inner} y \end{equation} \end{keylem}
\begin{prob} not a unit kind \end{prob}
\end{document}
""")
    write(tmp_path / "defs.tex", "\\begin{defn}\\label{def:a} An \\emph{apple} is red.\\end{defn}\n")
    cat = read_tex(main)
    assert [(s.kind, s.label) for s in cat.statements] == [
        ("definition", "def:a"), ("theorem", "thm:main"), ("lemma", "lem:key"), ("problem", None)]
    main_thm = cat.statements[1]
    assert main_thm.title == "Main"
    assert main_thm.proof is not None and main_thm.proof.provenance.line_start == 10
    stmt_refs = {(r.label, r.macro) for r in main_thm.references if not r.in_proof}
    assert stmt_refs == {("lem:key", "ref"), ("def:a", "cref"), ("eq:inner", "cref")}
    proof_refs = {(r.label, r.macro) for r in main_thm.references if r.in_proof}
    assert proof_refs == {("eq:inner", "eqref"), ("lem:key", "autoref"), ("def:a", "uses")}
    assert cat.labels["eq:inner"].statement_index == 2  # an equation label belongs to its statement
    assert cat.statements[0].provenance.file == "defs.tex"
    assert cat.statements[0].defined_terms == ["apple"]


def test_proof_with_ref_in_its_title_belongs_to_that_statement(tmp_path):
    main = write(tmp_path / "m.tex", r"""\begin{lemma}\label{a}A\end{lemma}
\begin{lemma}\label{b}B\end{lemma}
\begin{proof}[Proof of Lemma~\ref{a}] uses \ref{b} \end{proof}
""")
    cat = read_tex(main)
    assert cat.statements[0].proof is not None and cat.statements[1].proof is None


@pytest.mark.parametrize(
    "text, message",
    [
        ("\\begin{theorem} x \\end{lemma}\n", r"m\.tex:1: \\end\{lemma\} closes \\begin\{theorem\} opened at line 1"),
        ("\\begin{theorem}\nx\n", r"m\.tex:1: \\begin\{theorem\} is never closed"),
        ("x\n\\end{proof}\n", r"m\.tex:2: \\end\{proof\} without a matching"),
        ("\\input{missing}\n", r"m\.tex:1: included file 'missing' not found"),
        ("just some words, no commands at all\n", r"does not look like a TeX document"),
    ],
)
def test_bad_tex_input_is_a_precise_error(tmp_path, text, message):
    path = write(tmp_path / "m.tex", text)
    with pytest.raises(InputError, match=message):
        read_tex(path)


def test_comments_do_not_count(tmp_path):
    path = write(tmp_path / "m.tex", "% \\begin{theorem}\n\\begin{lemma} 100\\% sure % \\end{theorem}\n\\end{lemma}\n")
    cat = read_tex(path)
    assert [s.kind for s in cat.statements] == ["lemma"]


def test_input_loop_is_reported(tmp_path):
    write(tmp_path / "a.tex", "\\input{b}\n")
    write(tmp_path / "b.tex", "\\input{a}\n")
    with pytest.raises(InputError, match=r"\\input loop: a\.tex -> b\.tex -> a\.tex"):
        read_tex(tmp_path / "a.tex")


def test_binary_missing_empty_oversized_and_broken_pdf_sources(tmp_path):
    junk = tmp_path / "junk.tex"
    junk.write_bytes(b"\x00\x01\x02binary\xff")
    with pytest.raises(InputError, match="binary file, not TeX"):
        read_source(junk)
    with pytest.raises(InputError, match="source file not found"):
        read_source(tmp_path / "nope.tex")
    empty = write(tmp_path / "empty.tex", "")
    with pytest.raises(InputError, match=r"empty\.tex: the file is empty"):
        read_source(empty)
    pdf = tmp_path / "x.pdf"
    pdf.write_bytes(b"%PDF-1.7 ...")
    with pytest.raises(InputError, match=r"x\.pdf: cannot read the PDF") as e:
        read_source(pdf)
    assert "damaged or truncated" in e.value.hint


def test_a_50_mb_file_is_refused_before_it_is_read(tmp_path):
    big = tmp_path / "big.tex"
    with big.open("wb") as f:  # 50 MiB of real TeX text
        line = b"\\begin{lemma} x \\end{lemma} % padding padding padding padding padding\n"
        f.write(line * (50 * 1024 * 1024 // len(line) + 1))
    with pytest.raises(InputError, match=r"big\.tex: 50\.0 MiB is larger than the 32 MiB limit") as e:
        read_source(big)
    assert "max_file_mib" in e.value.hint
    # an included file is held to the limit too (here a small limit, to keep the test fast)
    write(tmp_path / "main.tex", "\\input{part}\n")
    write(tmp_path / "part.tex", "\\begin{lemma} y \\end{lemma}\n" * 2000)
    with pytest.raises(InputError, match=r"part\.tex: 0\.1 MiB is larger than the 0\.01 MiB limit"):
        read_source(tmp_path / "main.tex", max_file_mib=0.01)


def test_latin1_file_is_read_with_a_warning(tmp_path):
    path = tmp_path / "l.tex"
    path.write_bytes("\\begin{theorem}\\label{t} Erd\xf6s\n\\end{theorem}\n".encode("latin-1"))
    cat = read_tex(path)
    assert "Erdös" in cat.statements[0].body
    assert any(re.search(r"l\.tex:1: file is not UTF-8; read as Latin-1", str(w)) for w in cat.warnings)


def test_reference_macros_defined_by_the_document_are_references(tmp_path):
    write(tmp_path / "preamble.tex", "\\newcommand{\\thmref}[1]{Theorem~\\ref{#1}}\n\\newtheorem{claim}{Claim}\n")
    main = write(tmp_path / "main.tex", r"""\documentclass{article}
\input{preamble}
\newcommand{\lemref}[2][Lemma]{#1~\ref{#2}}
\def\eqnref#1{(\ref{#1})}
\NewDocumentCommand{\Thmref}{s m}{Theorem~\cref{#2}}
\newcommand{\bbR}{\mathbb{R}}
\begin{document}
\begin{lemma}\label{lem:a} A \begin{equation}\label{eq:a} x \end{equation}\end{lemma}
\begin{lemma}\label{lem:b} B \end{lemma}
\begin{theorem}\label{thm:c} By \thmref{lem:a}, \lemref[Lem.]{lem:b}, \eqnref{eq:a} and \Thmref*{lem:b}.
\end{theorem}
\begin{proof}[Proof of \thmref{lem:a}] Direct. \end{proof}
\end{document}
""")
    cat = read_tex(main)
    assert cat.by_label("lem:a").proof is not None and cat.by_label("thm:c").proof is None
    refs = [(r.label, r.macro) for r in cat.by_label("thm:c").references]
    # \thmref is defined in a file read after main.tex was parsed: still a reference
    assert refs == [("lem:a", "thmref"), ("lem:b", "lemref"), ("eq:a", "eqnref"), ("lem:b", "Thmref")]
    assert "\\newcommand{\\bbR}{\\mathbb{R}}" in cat.macros
    assert "\\newcommand{\\thmref}[1]{Theorem~\\ref{#1}}" in cat.macros
    assert cat.theorem_envs["claim"] == "claim"


def test_proves_attaches_a_proof_and_is_not_a_dependency(tmp_path):
    main = write(tmp_path / "m.tex", r"""\begin{lemma}\label{a}A\end{lemma}
\begin{lemma}\label{b}B\end{lemma}
\begin{proof}\proves{a} By \ref{b}.\end{proof}
""")
    cat = read_tex(main)
    a, b = cat.statements
    assert a.proof is not None and a.proof.proves == "a" and b.proof is None
    assert [(r.label, r.macro, r.in_proof) for r in a.references] == [("b", "ref", True)]


def test_claims_nested_in_a_proof_and_labelled_items(tmp_path):
    main = write(tmp_path / "m.tex", r"""\newtheorem{claim}{Claim}
\begin{theorem}\label{t}
\begin{enumerate}\item\label{t:i} first \item\label{t:ii} second\end{enumerate}
\end{theorem}
\begin{proof}
\begin{claim}\label{c} Using hypothesis \ref{t:i}, something.\end{claim}
\begin{proof} easy \end{proof}
Hence the theorem.
\end{proof}
\begin{corollary}\label{k} By \ref{t:ii}. \end{corollary}
""")
    cat = read_tex(main)
    t, c, k = cat.statements
    assert (c.kind, c.parent, c.in_parent_proof) == ("claim", 0, True)
    assert c.proof is not None and "easy" in c.proof.body and "Hence" in t.proof.body
    assert cat.labels["t:ii"].statement_index == 0
    from fyan.specifier.dag import extract_edges
    from fyan.specifier.units import build_units

    units = build_units(cat, ["theorem", "claim", "corollary"])
    edges = {(e.unit, e.depends_on, e.origin, e.in_proof) for e in extract_edges(cat, units).edges}
    # the theorem's proof uses its claim; the claim citing the theorem's item closes no cycle;
    # a reference to an item counts as a reference to its statement
    assert edges == {("t", "c", "nested", True), ("k", "t", "ref", False)}


def test_comment_environments_and_iffalse_are_ignored(tmp_path):
    main = write(tmp_path / "m.tex", r"""\begin{comment}
\begin{theorem}\label{x} hidden \end{theorem}
\end{comment}
\iffalse
\begin{lemma}\label{y} hidden \ifnum1=1 too\fi \end{lemma}
\fi
\begin{lstlisting}
\begin{lemma} code \end{lemma}
\end{lstlisting}
% \iffalse
\begin{lemma}\label{z} real \end{lemma}
""")
    cat = read_tex(main)
    assert [(s.kind, s.label, s.provenance.line_start) for s in cat.statements] == [("lemma", "z", 11)]


def test_missing_include_is_a_warning_missing_input_an_error_with_a_hint(tmp_path):
    main = write(tmp_path / "m.tex", "\\include{chap1}\n\\include{gone}\n")
    write(tmp_path / "chap1.tex", "\\begin{lemma}\\label{a} x\\end{lemma}\n")
    cat = read_tex(main)
    assert len(cat.statements) == 1
    assert [str(w) for w in cat.warnings] == ["m.tex:2: \\include{gone}: file not found; skipped (LaTeX skips it too)"]
    write(tmp_path / "chapter" / "main.tex", "\\input{chapter/one}\n")
    write(tmp_path / "chapter" / "one.tex", "\\begin{lemma} x\\end{lemma}\n")
    with pytest.raises(InputError, match=r"main\.tex:1: included file 'chapter/one' not found") as e:
        read_tex(tmp_path / "chapter" / "main.tex")
    assert f"it exists relative to {tmp_path}" in e.value.hint


# Every TeX file of the corpus, read as a main file. Those that cannot be read say why.
CORPUS_TEX_ERRORS = {
    # a chapter list that names its files from the blueprint root: give web.tex instead
    "blueprints/pfr/blueprint/src/chapter/main.tex": "included file 'chapter/jensen' not found",
    # the corpus has content.tex of this blueprint but not its macros/ folder
    "notes/sums_three_squares/print.tex": "included file 'macros/common' not found",
}


def expected_error(path: Path, rel: str) -> str | None:
    """Why a corpus file cannot be read as a document: listed above, or (every leanblueprint's
    ``macros/web.tex``) a file of comments only, which is not a TeX document."""
    if rel in CORPUS_TEX_ERRORS:
        return CORPUS_TEX_ERRORS[rel]
    if not re.search(r"\\[A-Za-z]+", strip_comments(path.read_text(encoding="utf-8", errors="replace"))):
        return "does not look like a TeX document"
    return None


def independent_count(cat, root: Path) -> Counter:
    """Theorem-like environments counted with regexes over the files the reader read
    (comments removed): names declared by \\newtheorem/\\declaretheorem, or the usual ones."""
    from fyan.intake.catalogue import KIND_ALIASES

    texts = [strip_comments((root / f).read_text(encoding="utf-8", errors="replace")) for f in cat.files]
    declared = {m for t in texts for m in re.findall(r"\\(?:newtheorem\*?|declaretheorem(?:\[[^\]]*\])?)\{([^}]+)\}", t)}
    names = declared | set(KIND_ALIASES)
    found = Counter()
    for t in texts:
        for env in re.findall(r"\\begin\{([A-Za-z]+\*?)\}", t):
            if env.rstrip("*") in names or env in names:
                found[env] += 1
    return found


def test_statement_recall_on_every_corpus_tex_document():
    from tests.conftest import CORPUS

    checked = 0
    for path in sorted(CORPUS.rglob("*.tex")):
        rel = path.relative_to(CORPUS).as_posix()
        error = expected_error(path, rel)
        if error is not None:
            with pytest.raises(InputError, match=re.escape(error)):
                read_tex(path)
            continue
        cat = read_tex(path)
        expected = independent_count(cat, path.parent)
        assert Counter(s.env for s in cat.statements) == expected, rel  # 100% of theorem-like envs
        for s in cat.statements:  # bodies exact: the source text from \begin to \end, on the lines named
            lines = (path.parent / s.provenance.file).read_text(encoding="utf-8").split("\n")
            span = "\n".join(lines[s.provenance.line_start - 1 : s.provenance.line_end])
            assert s.body in span and span.lstrip().startswith(s.body[:20]), (rel, s.provenance)
            assert s.body.startswith(f"\\begin{{{s.env}}}") and s.body.endswith(f"\\end{{{s.env}}}"), (rel, s.provenance)
        checked += 1
    assert checked >= 40


def test_blueprint_macros_statement_and_proof_level(tmp_path):
    main = write(tmp_path / "c.tex", r"""\begin{definition}\label{d}\lean{Nat.Prime}\mathlibok A prime.\end{definition}
\begin{lemma}\label{l}\lean{Foo.bar, Foo.baz}\leanok\uses{d} Statement.\end{lemma}
\begin{proof}\uses{d}\leanok Proof.\end{proof}
\begin{theorem}\label{t}\uses{l} T.\end{theorem}
\begin{proof}\uses{d, l} P.\end{proof}
""")
    d, lemma, t = read_tex(main).statements
    assert (d.lean_names, d.mathlibok, d.leanok) == (["Nat.Prime"], True, False)
    assert (lemma.lean_names, lemma.leanok, lemma.proof.leanok) == (["Foo.bar", "Foo.baz"], True, True)
    assert (t.leanok, t.proof.leanok) == (False, False)
    assert [(r.label, r.in_proof) for r in t.references] == [("l", False), ("d", True), ("l", True)]


def test_subfile_trees(tmp_path):
    main = write(tmp_path / "main.tex", "\\documentclass{article}\\usepackage{subfiles}\n\\begin{document}\n"
                 "\\subfile{sections/one}\n\\end{document}\n")
    write(tmp_path / "sections" / "one.tex", "\\documentclass[../main.tex]{subfiles}\n\\begin{document}\n"
          "\\begin{lemma}\\label{a} x \\end{lemma}\n\\end{document}\n")
    cat = read_tex(main)
    assert cat.files == ["main.tex", "sections/one.tex"]
    assert [(s.label, str(s.provenance)) for s in cat.statements] == [("a", "sections/one.tex:3-3")]
