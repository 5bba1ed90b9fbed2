"""Evidence records that claim a relation code does not see must not freeze a statement.

A judge that wants its statement frozen can name a conversion (``one_point_rule``,
``definition_unfolding``, ``decidability_instance``) or call rows ``same`` while the statements
differ in their tree. Each attack below graded at the freeze threshold before the conversions
were applied by code and the pairing checked against the trees; each honest control beside it
must keep its grade.
"""

from __future__ import annotations

import pytest

from tests.audit_helpers import AND, IMP, OR, A, D, E, F, audit, row

SMALL = F("n", "ℤ", IMP(AND(A("0 < n"), A("n < 10")), A("n * n < 100")))
DIVIDES = "def Divides (a b : Int) : Prop := ∃ k : Int, b = a * k"
TRIVIAL = "def Trivially (a : Int) : Prop := a = a"


def frozen(a) -> bool:
    return a.result.valid and a.result.routing == "freeze"


# -- one_point_rule ---------------------------------------------------------------------------

@pytest.mark.parametrize("goal, rows_for_goal", [
    ("n = n", [row(["s6"], ["c2", "c4", "c9"], "trivial_equivalent", conversions=["one_point_rule"],
                   argument="k is defined by k = 0 and substituted away")]),
    ("True", [row(["s6"], ["c2", "c4", "c9"], "trivial_equivalent", conversions=["one_point_rule"],
                  argument="k is defined by k = 0 and substituted away")]),
])
def test_a_dummy_one_point_binder_does_not_carry_a_trivialised_goal(goal, rows_for_goal):
    lean = f"theorem t (n : Int) (k : Int) (hk : k = 0) (h0 : 0 < n) (h1 : n < 10) : {goal} := by sorry"
    rows = [row(["s1"], ["c1"]), row(["s4"], ["c6"]), row(["s5"], ["c8"]), *rows_for_goal]
    a = audit(SMALL, lean, rows)
    assert a.result.valid, a.result.errors
    assert not frozen(a) and a.result.grade == 0
    assert "one_point_rule" in a.item(4).note or "unverified conversion" in a.item(4).note


def test_a_dummy_one_point_binder_does_not_carry_a_dropped_hypothesis():
    lean = "theorem t (n : Int) (k : Int) (hk : k = 0) (h0 : 0 < n) : n * n < 100 := by sorry"
    rows = [row(["s1"], ["c1"]), row(["s4"], ["c6"]), row(["s6"], ["c7"]),
            row(["s5"], ["c2", "c4"], "trivial_equivalent", conversions=["one_point_rule"],
                argument="k = 0 is substituted, which is the hypothesis n < 10")]
    a = audit(SMALL, lean, rows)
    assert not frozen(a)


def test_a_one_point_omission_row_does_not_hide_a_false_premise():
    lean = "theorem t (n : Int) (k : Int) (hk : k = 0) (hf : False) (h0 : 0 < n) (h1 : n < 10) : n * n < 100 := by sorry"
    a0 = audit(SMALL, lean, [row(["s1"], ["c1"])])
    ids = {s.text: s.id for s in a0.cand.slots}
    rows = [row(["s1"], ["c1"]), row(["s4"], [ids["0 < n"]]), row(["s5"], [ids["n < 10"]]),
            row(["s6"], [ids["n * n < 100"]]),
            row([], [ids["k : Int"], ids["k = 0"], ids["⊥"]], "trivial_equivalent", conversions=["one_point_rule"],
                argument="k is defined by its equation and removed")]
    a = audit(SMALL, lean, rows)
    assert not frozen(a)


def test_an_honest_one_point_substitution_still_grades_2():
    src = F("n", "ℤ", A("0 < 2 * (n + 1)"))
    lean = "theorem t (n m : Int) (hm : m = n + 1) : 0 < 2 * m := by sorry"
    rows = [row(["s1"], ["c1"]), row(["s2"], ["c2", "c4", "c5"], "trivial_equivalent", conversions=["one_point_rule"],
                                      argument="m is defined as n + 1 and substituted")]
    a = audit(src, lean, rows)
    assert a.result.valid and a.result.grade == 2, [it.note for it in a.result.items]


def test_an_honest_one_point_omission_of_an_unused_defined_object_still_grades_2():
    src = F("n", "ℤ", A("0 < n + 1"))
    lean = "theorem t (n : Int) (k : Int) (hk : k = 0) : 0 < n + 1 := by sorry"
    rows = [row(["s1"], ["c1"]), row(["s2"], ["c5"]),
            row([], ["c2", "c4"], "trivial_equivalent", conversions=["one_point_rule"],
                argument="k is defined by k = 0 and used nowhere")]
    a = audit(src, lean, rows)
    assert a.result.valid and a.result.grade == 2, [it.note for it in a.result.items]


# -- decidability_instance --------------------------------------------------------------------

def test_a_decidability_binder_does_not_carry_a_changed_goal():
    lean = "theorem t (n : Int) [Decidable (0 < 1)] (h0 : 0 < n) (h1 : n < 10) : n * n ≤ 100 := by sorry"
    a0 = audit(SMALL, lean, [row(["s1"], ["c1"])])
    ids = {s.text: s.id for s in a0.cand.slots}
    rows = [row(["s1"], ["c1"]), row(["s4"], [ids["0 < n"]]), row(["s5"], [ids["n < 10"]]),
            row(["s6"], [ids["[Decidable (0 < 1)]"], ids["n * n ≤ 100"]], "trivial_equivalent",
                conversions=["decidability_instance"], argument="classical logic provides the instance")]
    a = audit(SMALL, lean, rows)
    assert not frozen(a)


def test_an_honest_decidability_binder_still_grades_2():
    src = F("n", "ℕ", A("n < n + 1"))
    lean = "theorem t (n : Nat) [DecidableEq Nat] : n < n + 1 := by sorry"
    rows = [row(["s1"], ["c1"]), row([], ["c2"], "trivial_equivalent", conversions=["decidability_instance"],
                                      argument="classical logic provides every DecidableEq instance"),
            row(["s2"], ["c3"])]
    a = audit(src, lean, rows)
    assert a.result.valid and a.result.grade == 2, [it.note for it in a.result.items]


# -- definition_unfolding ---------------------------------------------------------------------

def test_an_unrelated_unfold_does_not_carry_a_trivialised_goal():
    lean = "theorem t (n : Int) (h0 : 0 < n) (h1 : n < 10) : n = n := by sorry"
    rows = [row(["s1"], ["c1"]), row(["s4"], ["c3"]), row(["s5"], ["c5"]),
            row(["s6"], ["c6"], "trivial_equivalent", conversions=["definition_unfolding"], unfolds=["Divides"],
                argument="unfolding Divides gives the claim")]
    a = audit(SMALL, lean, rows, upstream=[DIVIDES])
    assert not frozen(a)
    assert "does not occur" in a.item(4).note


def test_an_unfold_that_occurs_but_does_not_make_the_texts_agree_is_refused():
    src = F("a", "ℤ", F("n", "ℤ", E("k", "ℤ", A("n = a * k + 1"))))
    lean = "theorem t (a n : Int) : Divides a n := by sorry"
    rows = [row(["s1"], ["c1"]), row(["s2"], ["c2"]),
            row(["s3", "s4"], ["c3", "cd1"], "trivial_equivalent", conversions=["definition_unfolding"],
                unfolds=["Divides"], argument="Divides a n unfolds to ∃ k, n = a * k")]
    a = audit(src, lean, rows, upstream=[DIVIDES])
    assert not frozen(a) and "does not make the row's texts agree" in a.item(3).note


def test_an_honest_unfold_still_grades_2():
    src = F("a", "ℤ", F("n", "ℤ", E("j", "ℤ", A("n = a * j"))))
    lean = "theorem t (a n : Int) : Divides a n := by sorry"
    rows = [row(["s1"], ["c1"]), row(["s2"], ["c2"]),
            row(["s3", "s4"], ["c3", "cd1"], "trivial_equivalent", conversions=["definition_unfolding"],
                unfolds=["Divides"], argument="Divides a n unfolds to ∃ k, n = a * k")]
    a = audit(src, lean, rows, upstream=[DIVIDES])
    assert a.result.valid and a.result.grade == 2, [it.note for it in a.result.items]


def test_an_honest_unfold_with_a_compound_argument_still_grades_2():
    src = F("a", "ℤ", F("n", "ℤ", E("j", "ℤ", A("n * n = a * j"))))
    lean = "theorem t (a n : Int) : Divides a (n * n) := by sorry"
    rows = [row(["s1"], ["c1"]), row(["s2"], ["c2"]),
            row(["s3", "s4"], ["c3", "cd1"], "trivial_equivalent", conversions=["definition_unfolding"],
                unfolds=["Divides"], argument="Divides a (n * n) unfolds to ∃ k, n * n = a * k")]
    a = audit(src, lean, rows, upstream=[DIVIDES])
    assert a.result.valid and a.result.grade == 2, [it.note for it in a.result.items]


def test_unfolding_the_units_own_root_is_not_a_conversion():
    src = F("n", "ℤ", IMP(D("even", "even n"), E("k", "ℤ", A("n = 2 * k"))))
    lean = "def IsEven (n : Int) : Prop := True"
    a0 = audit(src, lean, [row(["s1"], ["c1"])], root="IsEven")
    ids = {s.text: s.id for s in a0.cand.slots}
    srcids = [s.id for s in a0.src.slots if s.kind != "object" or s.var == "k"]
    rows = [row(["s1"], ["c1"]),
            row(srcids, [ids["IsEven n"], ids["⊤"], ids["IsEven"]], "trivial_equivalent",
                conversions=["definition_unfolding"], unfolds=["IsEven"], argument="IsEven unfolds to its body")]
    a = audit(src, lean, rows, root="IsEven")
    assert not frozen(a)


# -- `same` follows the tree ------------------------------------------------------------------

def test_swapped_quantifiers_are_not_same():
    src = E("x", "ℝ", F("y", "ℝ", A("x ≤ y")))
    lean = "theorem t : ∀ y : ℝ, ∃ x : ℝ, x ≤ y := by sorry"
    rows = [row(["s1"], ["c2"]), row(["s2"], ["c1"]), row(["s3"], ["c3"])]
    a = audit(src, lean, rows)
    assert not frozen(a)
    assert any("binder order" in e for e in a.result.errors)


def test_swapped_quantifiers_are_not_trivially_equivalent_either():
    src = E("x", "ℝ", F("y", "ℝ", A("x ≤ y")))
    lean = "theorem t : ∀ y : ℝ, ∃ x : ℝ, x ≤ y := by sorry"
    rows = [row(["s1"], ["c2"], "trivial_equivalent", conversions=["alpha_renaming"], argument="the same binder x"),
            row(["s2"], ["c1"], "trivial_equivalent", conversions=["alpha_renaming"], argument="the same binder y"),
            row(["s3"], ["c3"])]
    a = audit(src, lean, rows)
    assert not frozen(a)


def test_reordered_binders_of_one_kind_stay_same():
    src = F("x", "ℝ", F("y", "ℝ", OR(A("x ≤ y"), A("y ≤ x"))))
    lean = "theorem t : ∀ y : ℝ, ∀ x : ℝ, x ≤ y ∨ y ≤ x := by sorry"
    a0 = audit(src, lean, [row(["s1"], ["c2"])])
    rows = [row(["s1"], ["c2"]), row(["s2"], ["c1"])] + [
        row([s.id], [c.id]) for s, c in zip([x for x in a0.src.slots if x.kind == "goal"],
                                            [x for x in a0.cand.slots if x.kind == "goal"], strict=True)]
    a = audit(src, lean, rows)
    assert a.result.valid and a.result.grade == 3, a.result.errors


def test_a_claim_moved_under_a_negation_is_not_same():
    src = F("n", "ℤ", A("n < 10"))
    lean = "theorem t (n : Int) : ¬ (n < 10) := by sorry"
    a = audit(src, lean, [row(["s1"], ["c1"]), row(["s2"], ["c3"])])
    assert not frozen(a)


def test_claims_swapped_between_their_hypotheses_are_not_same():
    src = F("n", "ℤ", AND(IMP(A("0 < n"), A("0 < n * n")), IMP(A("n < 5"), A("n < 6"))))
    lean = "theorem t (n : Int) : (0 < n → n < 6) ∧ (n < 5 → 0 < n * n) := by sorry"
    a0 = audit(src, lean, [row(["s1"], ["c1"])])
    s = {x.text: x.id for x in a0.src.slots}
    c = {x.text: x.id for x in a0.cand.slots}
    a = audit(src, lean, [row(["s1"], ["c1"])] + [row([s[t]], [c[t]]) for t in ("0 < n", "0 < n * n", "n < 5", "n < 6")])
    assert not frozen(a)
    assert any("under the hypotheses" in e for e in a.result.errors)


def test_binders_of_two_kinds_grouped_in_one_row_keep_their_order_and_kind():
    src = E("x", "ℝ", F("y", "ℝ", A("x ≤ y")))
    lean = "theorem t : ∀ y : ℝ, ∃ x : ℝ, x ≤ y := by sorry"
    for cands in (["c2", "c1"], ["c1", "c2"]):
        a = audit(src, lean, [row(["s1", "s2"], cands), row(["s3"], ["c3"])])
        assert not frozen(a), cands


@pytest.mark.parametrize("lean", [
    "theorem t (n : Int) : ∃ k : Int, k = 0 ∨ 0 < n + k := by sorry",
    "theorem t (n : Int) : ∀ k : Int, (k = 0 ∨ n < 0) → 0 < n + k := by sorry",
])
def test_an_equation_that_does_not_define_its_object_is_not_a_one_point_rule(lean):
    src = F("n", "ℤ", A("0 < n"))
    a0 = audit(src, lean, [row(["s1"], ["c1"])])
    rest = [s.id for s in a0.cand.slots if s.id != "c1"]
    a = audit(src, lean, [row(["s1"], ["c1"]), row(["s2"], rest, "trivial_equivalent", conversions=["one_point_rule"],
                                                     argument="k is 0 by its equation and substituted away")])
    assert not frozen(a)
