"""``search_declarations`` over an FTS5 index of a declaration list (``fyan.prover.search``)."""

from __future__ import annotations

import pytest

from fyan.prover.search import (DeclarationIndex, DeclarationList, DeclarationRecord, IndexError_, build_index,
                                name_words, symbol_words, write_declarations)

RECORDS = [
    DeclarationRecord(name="Nat.add_comm", kind="theorem", module="Init.Data.Nat.Basic",
                      signature="Nat.add_comm (n m : ℕ) : n + m = m + n", docstring="Addition is commutative."),
    DeclarationRecord(name="Nat.mul_comm", kind="theorem", module="Init.Data.Nat.Basic",
                      signature="Nat.mul_comm (n m : ℕ) : n * m = m * n"),
    DeclarationRecord(name="Nat.le_refl", kind="theorem", module="Init.Prelude", signature="Nat.le_refl (n : ℕ) : n ≤ n"),
    DeclarationRecord(name="MeasureTheory.integral_add", kind="theorem", module="Mathlib.MeasureTheory.Integral.Bochner",
                      signature="MeasureTheory.integral_add {f g : α → E} (hf : Integrable f μ) (hg : Integrable g μ) : "
                                "∫ a, f a + g a ∂μ = ∫ a, f a ∂μ + ∫ a, g a ∂μ",
                      docstring="The Bochner integral is additive."),
    DeclarationRecord(name="Finset.sum_comm", kind="theorem", module="Mathlib.Algebra.BigOperators.Basic",
                      signature="Finset.sum_comm : ∑ x ∈ s, ∑ y ∈ t, f x y = ∑ y ∈ t, ∑ x ∈ s, f x y"),
]


@pytest.fixture
def index(tmp_path):
    decls = tmp_path / "declarations.jsonl"
    write_declarations(decls, DeclarationList(toolchain="leanprover/lean4:v4.35.0", dependencies="d1", count=len(RECORDS)),
                       RECORDS)
    build_index(decls, tmp_path / "index.sqlite")
    idx = DeclarationIndex(tmp_path / "index.sqlite", expect=("leanprover/lean4:v4.35.0", "d1"))
    yield idx
    idx.close()


def test_words_rank_the_name_match_first(index):
    hits = index.search("add comm").hits
    assert hits[0].name == "Nat.add_comm" and hits[0].module == "Init.Data.Nat.Basic"
    assert hits[0].docstring == "Addition is commutative." and hits[0].signature.endswith("n + m = m + n")
    assert index.search("integral additive").hits[0].name == "MeasureTheory.integral_add"  # camel case and docstring
    assert index.search("Measure Theory").hits[0].name == "MeasureTheory.integral_add"


def test_a_type_pattern_matches_signatures(index):
    r = index.search("_ * _ = _ * _")
    assert r.pattern and r.hits[0].name == "Nat.mul_comm"
    assert index.search("_ ≤ _").hits[0].name == "Nat.le_refl"
    assert index.search("∑ x ∈ s, _").hits[0].name == "Finset.sum_comm"


def test_any_word_fills_up_when_all_words_find_too_few(index):
    names = [h.name for h in index.search("comm zzzunknown", limit=5).hits]
    assert set(names) >= {"Nat.add_comm", "Nat.mul_comm", "Finset.sum_comm"}


def test_query_syntax_is_never_passed_to_fts5(index):
    for q in ('"', "NEAR(a b)", "name : x", "a* OR", "-", "^"):
        r = index.search(q)  # no sqlite3.OperationalError
        assert r.status in ("ok", "refused")
    assert index.search("   ").status == "refused"


def test_module_of_and_an_index_of_another_set_is_refused(index, tmp_path):
    assert index.module_of("Nat.le_refl") == "Init.Prelude" and index.module_of("Nat.nope") is None
    with pytest.raises(IndexError_, match="built for"):
        DeclarationIndex(tmp_path / "index.sqlite", expect=("leanprover/lean4:v4.36.0", "d1"))


def test_a_bad_declaration_list_names_its_line(tmp_path):
    decls = tmp_path / "d.jsonl"
    decls.write_text(DeclarationList(toolchain="t", dependencies="d", count=2).model_dump_json() + "\n"
                     + RECORDS[0].model_dump_json() + "\n" + '{"name": "x"}\n')
    with pytest.raises(IndexError_, match="line 3"):
        build_index(decls, tmp_path / "i.sqlite")
    assert not (tmp_path / "i.sqlite").exists()
    decls.write_text(DeclarationList(toolchain="t", dependencies="d", count=5).model_dump_json() + "\n"
                     + RECORDS[0].model_dump_json() + "\n")
    with pytest.raises(IndexError_, match="says 5"):
        build_index(decls, tmp_path / "i.sqlite")


def test_words_of_names_and_symbols():
    assert name_words("MeasureTheory.integral_add") == "Measure Theory integral add"
    assert symbol_words("a ≤ b → a + 1 ≤ b + 1").split() == ["a", "le", "b", "imp", "a", "plus", "1", "le", "b", "plus", "1"]


def test_building_never_writes_over_anything_but_a_declaration_index(index, tmp_path):
    """The index path comes from configuration: a state store, another database, a link or a
    folder there is refused and left as it was; an existing declaration index is rebuilt."""
    import sqlite3

    decls = tmp_path / "declarations.jsonl"
    store = tmp_path / "state.db"
    db = sqlite3.connect(store)
    db.execute("CREATE TABLE units (id TEXT)")
    db.execute("INSERT INTO units VALUES ('lem-1')")
    db.commit()
    db.close()
    before = store.read_bytes()
    with pytest.raises(IndexError_, match="not a declaration index"):
        build_index(decls, store)
    assert store.read_bytes() == before
    (tmp_path / "folder").mkdir()
    (tmp_path / "link").symlink_to(store)
    for target in (tmp_path / "folder", tmp_path / "link"):
        with pytest.raises(IndexError_, match="not a declaration index"):
            build_index(decls, target)
    assert store.read_bytes() == before and (tmp_path / "folder").is_dir()
    assert build_index(decls, tmp_path / "index.sqlite").count == len(RECORDS)  # a rebuild of its own file
