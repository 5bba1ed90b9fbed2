"""Units, the dependency DAG and problem.tex."""

from __future__ import annotations

import pytest

from fyan.config import IntakeSection
from fyan.errors import DagError
from fyan.intake.tex import read_tex
from fyan.specifier.dag import Edge, extract_edges, validate
from fyan.specifier.problem import BEGIN, END, render_problem
from fyan.specifier.units import build_units, module_name, sanitize_id
from tests.conftest import corpus, write

KINDS = IntakeSection().unit_kinds


def dag_of(path, **kw):
    cat = read_tex(path)
    units = build_units(cat, KINDS)
    found = extract_edges(cat, units, **kw)
    return cat, units, validate(cat, units, found.edges, KINDS), found.notes + [str(w) for w in found.warnings]


def test_unit_ids_are_safe_paths_and_lean_module_names():
    assert sanitize_id("thm:n even implies n^2 even") == "thm-n-even-implies-n-2-even"
    assert sanitize_id("lem: 2^{n} ≥ n!") == "lem-2-n-n"
    assert module_name("thm-n-even-implies-n-2-even") == "ThmNEvenImpliesN2Even"
    assert module_name("2-adic") == "U2Adic"


def test_units_of_the_example_section():
    cat, units, dag, _ = dag_of(corpus("notes/ernst_ibl_intro_to_proof/TasteNumberTheory.tex"))
    ids = [u.id for u in units]
    assert len(ids) == 11  # 2 definitions, 8 theorems, 1 corollary; the 4 problems are not units
    assert ids[:2] == ["definition-1", "thm-n-even-implies-n-2-even"]
    assert "theorem-7" in ids and "theorem-8" in ids  # unlabelled: kind and ordinal
    deps = {(e.unit, e.depends_on) for e in dag.edges}
    assert ("thm-n-even-implies-n-2-even", "definition-1") in deps  # uses the defined term "even"
    assert ("theorem-8", "definition-1") in deps and ("theorem-8", "def-divides") in deps
    assert dag.layers["definition-1"] == 0 and dag.layers["theorem-8"] == 1


def test_colliding_labels_get_distinct_ids(tmp_path):
    path = write(tmp_path / "m.tex", "\\begin{lemma}\\label{a:b}x\\end{lemma}\\begin{lemma}\\label{a b}y\\end{lemma}")
    _, units, _, _ = dag_of(path)
    assert [u.id for u in units] == ["a-b", "a-b-2"]
    assert len({u.module for u in units}) == 2


def test_blueprint_edges_and_layers():
    cat, units, dag, _ = dag_of(corpus("blueprints/dirichlet_nonvanishing/blueprint/src/content.tex"))
    uses = [e for e in dag.edges if e.origin == "uses"]
    assert len(uses) == 14  # every \uses item resolves to another unit
    g = dag.graph()
    for u, d in g.edges:  # layers are recomputed from the edges
        assert dag.layers[u] > dag.layers[d]


def test_reference_to_unknown_label_is_an_error_with_file_and_line(tmp_path):
    path = write(tmp_path / "m.tex", "\\begin{lemma}\\label{a}\nBy \\ref{nowhere}.\n\\end{lemma}\n")
    with pytest.raises(DagError, match=r"m\.tex:2: \\ref\{nowhere\} in a: unknown label"):
        dag_of(path)
    _, _, dag, notes = dag_of(path, unknown_references="warn")
    assert dag.edges == [] and any("nowhere" in n for n in notes)


def test_uses_to_unknown_label_is_an_error(tmp_path):
    path = write(tmp_path / "m.tex", "\\begin{lemma}\\label{a}\n\\uses{b, c}\n\\end{lemma}\n\\begin{lemma}\\label{b}x\\end{lemma}\n")
    with pytest.raises(DagError, match=r"(?s)1 reference\(s\).*m\.tex:2: \\uses\{c\} in a: unknown label"):
        dag_of(path)


def test_cycle_is_reported_with_the_cycle(tmp_path):
    path = write(tmp_path / "m.tex", "\\begin{lemma}\\label{a} by \\ref{b}\\end{lemma}\n\\begin{lemma}\\label{b} by \\ref{a}\\end{lemma}\n")
    with pytest.raises(DagError, match=r"1 dependency cycle\(s\):\n  cycle 1:\n    a \(m\.tex:1-1\) depends on b: ref, "
                       r"m\.tex:1 \\ref\{b\}\n    b \(m\.tex:2-2\) depends on a: ref, m\.tex:2 \\ref\{a\}\n"
                       r"    weakest edge: a -> b"):  # the forward reference
        dag_of(path)


def test_validate_refuses_bad_edges_and_coverage(tmp_path):
    path = write(tmp_path / "m.tex", "\\begin{lemma}\\label{a}x\\end{lemma}\\begin{lemma}\\label{b}y\\end{lemma}")
    cat = read_tex(path)
    units = build_units(cat, KINDS)
    with pytest.raises(DagError, match="unknown unit 'zzz'"):
        validate(cat, units, [Edge(unit="a", depends_on="zzz", origin="proposed", evidence="model")], KINDS)
    with pytest.raises(DagError, match="depends on itself"):
        validate(cat, units, [Edge(unit="a", depends_on="a", origin="proposed", evidence="model")], KINDS)
    with pytest.raises(DagError, match="is in no unit"):
        validate(cat, units[:1], [], KINDS)
    doubled = [units[0], units[1].model_copy(update={"statements": [0, 1]})]
    with pytest.raises(DagError, match="is in two units"):
        validate(cat, doubled, [], KINDS)


def test_reference_to_a_non_unit_statement_is_noted_not_an_edge(tmp_path):
    path = write(tmp_path / "m.tex", "\\begin{problem}\\label{p}x\\end{problem}\\begin{lemma}\\label{a} by \\ref{p}\\end{lemma}")
    _, _, dag, notes = dag_of(path)
    assert dag.edges == [] and "not a unit kind" in notes[0]


def test_problem_tex_has_a_code_written_provenance_block():
    cat, units, dag, _ = dag_of(corpus("notes/ernst_ibl_intro_to_proof/TasteNumberTheory.tex"))
    unit = units[1]
    text = render_problem(unit, cat, [e for e in dag.edges if e.unit == unit.id], "source/")
    block = text[: text.index(END) + len(END)]
    assert block.startswith(BEGIN)
    assert "% source: source/TasteNumberTheory.tex, lines 29-31" in block
    assert "% label: thm:n even implies n^2 even" in block
    assert "% depends on: definition-1 (term, statement;" in block
    assert text.endswith("If $n$ is an even integer, then $n^2$ is an even integer.\n\\end{theorem}\n")
