"""The test vectors of the semantic audit: each asserts the grade code computes.

Source trees are written here as the source-extraction call would write them; candidate trees
are parsed from Lean text by ``fyan.audit.lean_tree``; the validator, grading and transfer
checker are the real ones. No model is involved (the judge's records are written by hand).
"""

from __future__ import annotations

from fyan.audit.grading import bridge_eligible
from fyan.audit.validator import AuditContext
from tests.audit_helpers import AND, A, E, F, IMP, audit, row

WHY = "the candidate item differs from the source item in the way stated"


# -- 1. a dropped hypothesis ------------------------------------------------------------------

SRC_01 = F("x", "ℝ", IMP(AND(A("0 < x"), A("x < 1")), A("x ^ 2 < x")))
LEAN_01 = "theorem sq_lt (x : ℝ) (h : 0 < x) : x ^ 2 < x := by sorry"


def test_dropped_hypothesis_is_an_omission_at_negative_polarity_graded_below_2():
    a = audit(SRC_01, LEAN_01, [
        row(["s1"], ["c1"]), row(["s4"], ["c3"]),
        row(["s5"], [], "mutated_weaker", argument="without x < 1 the candidate claims x^2 < x for every positive x",
            difference="the hypothesis x < 1 is missing", repair="add the hypothesis (h1 : x < 1)"),
        row(["s6"], ["c4"]),
    ], transfer={})
    r = a.result
    assert r.valid, r.errors
    assert r.grade == 1 and r.grade < 2
    omission = a.item(3)
    assert omission.kind == "omission" and omission.polarity == "negative" and omission.admissible
    assert "s5 `x < 1` → ⊤" in omission.note
    assert r.routing == "repair" and any("x < 1" in rep for rep in r.repairs)
    assert r.transfer is not None and r.transfer.ok  # the candidate is stronger: its proof transfers


def test_dropped_hypothesis_recorded_as_the_wrong_direction_is_a_form_error():
    a = audit(SRC_01, LEAN_01, [
        row(["s1"], ["c1"]), row(["s4"], ["c3"]),
        row(["s5"], [], "mutated_stronger", argument="the candidate drops x < 1", difference="x < 1 is missing"),
        row(["s6"], ["c4"]),
    ], transfer={})
    assert not a.result.valid
    assert any("the relation is mutated_weaker, not mutated_stronger" in e for e in a.result.errors)


def test_dropped_hypothesis_is_bridge_eligible_under_the_bridge_policy():
    a = audit(SRC_01, LEAN_01, [
        row(["s1"], ["c1"]), row(["s4"], ["c3"]),
        row(["s5"], [], "mutated_weaker", argument="without x < 1 the candidate claims more",
            difference="the hypothesis x < 1 is missing"),
        row(["s6"], ["c4"]),
    ], transfer={}, policy="bridge")
    assert a.result.grade == 1
    assert bridge_eligible(a.result, AuditContext(root="sq_lt", threshold=2, policy="bridge"))
    assert not bridge_eligible(a.result, AuditContext(root="sq_lt", threshold=2, policy="repair"))


# -- 2. p/q coprime positive vs a : ℚ ------------------------------------------------------------

POS_RAT = "{r : ℚ // ∃ p q : ℕ, 0 < p ∧ 0 < q ∧ Nat.Coprime p q ∧ r = p / q}"
QUOTE_02 = "$a = p/q$ with $p, q$ coprime positive integers"


def test_rational_binder_admitting_nonpositive_values_is_weaker_at_negative_polarity_grade_1():
    src = F("a", POS_RAT, A("a + 1 / a ≥ 2"), quote=QUOTE_02)
    a = audit(src, "theorem amgm (a : ℚ) : a + 1 / a ≥ 2 := by sorry", [
        row(["s1"], ["c1"], "mutated_weaker", argument="a : ℚ admits a ≤ 0, which the source excludes",
            repair="restrict a to the positive rationals"),
        row(["s2"], ["c2"]),
    ], transfer={"adapters": [{"id": "a1", "source": "s1", "candidate": "c1", "direction": "source_to_candidate",
                               "map": "fun a => (a : ℚ)"}]})
    r = a.result
    assert r.valid, r.errors
    item = a.item(1)
    assert item.polarity == "negative" and item.admissible and item.grade == 1
    assert r.grade == 1
    assert r.routing == "repair" and r.repairs == [
        "row 1 (s1, c1): restrict a to the positive rationals"]
    assert r.transfer is not None and r.transfer.ok
    assert any(step.map == "e" and "adapter a1" in step.via for step in r.transfer.recipes)
    assert bridge_eligible(r, AuditContext(root="amgm", policy="bridge"))


def test_the_same_relation_at_a_positive_occurrence_is_inadmissible_grade_0():
    src = E("a", POS_RAT, A("a ^ 2 = 4"), quote=QUOTE_02)
    a = audit(src, "theorem root4 : ∃ a : ℚ, a ^ 2 = 4 := by sorry", [
        row(["s1"], ["c1"], "mutated_weaker", argument="a : ℚ admits a ≤ 0, which the source excludes",
            repair="restrict the witness to the positive rationals"),
        row(["s2"], ["c2"]),
    ], transfer={"adapters": [{"id": "a1", "source": "s1", "candidate": "c1", "direction": "source_to_candidate",
                               "map": "fun a => (a : ℚ)"}]})
    r = a.result
    assert r.valid, r.errors
    item = a.item(1)
    assert item.polarity == "positive" and not item.admissible and item.grade == 0
    assert r.grade == 0 and r.routing == "repair"
    assert not bridge_eligible(r, AuditContext(root="root4", policy="bridge"))


# -- 3. a summation index that escapes its binder --------------------------------------------------

SRC_03 = F("n", "ℕ", F("f", "ℕ → ℕ", F("g", "ℕ → ℕ", IMP(A("∑ i in Finset.range n, f i = g n"), A("f 0 ≤ g n")))))
LEAN_03 = "theorem sumbound (n : ℕ) (f g : ℕ → ℕ) (h : ∑ i in Finset.range n, f i = g i) : f 0 ≤ g n := by sorry"


def test_escaping_summation_index_is_unaligned_grade_0():
    a = audit(SRC_03, LEAN_03, [
        row(["s1"], ["c1"]), row(["s2"], ["c2"]), row(["s3"], ["c3"]),
        row(["s5"], ["c5"], "unaligned", difference="the sum's index i occurs free in g i: the hypothesis is about "
            "an arbitrary i, not g n"),
        row(["s6"], ["c6"]),
    ])
    assert a.result.valid, a.result.errors
    assert a.result.grade == 0
    assert any("escapes its binder" in f for f in a.cand.get("c5").findings)


def test_escaping_index_forces_grade_0_even_when_the_judge_calls_it_a_small_change():
    a = audit(SRC_03, LEAN_03, [
        row(["s1"], ["c1"]), row(["s2"], ["c2"]), row(["s3"], ["c3"]),
        row(["s5"], ["c5"], "mutated_equivalent", argument="g i and g n are the same value in this hypothesis"),
        row(["s6"], ["c6"]),
    ], transfer={})
    assert a.result.valid, a.result.errors
    assert a.item(4).grade == 0 and "escapes its binder" in a.item(4).note
    assert a.result.grade == 0


# -- 4. the conclusion assumed as a hypothesis -----------------------------------------------------

def test_conclusion_assumed_as_hypothesis_grade_0():
    src = F("x", "ℝ", IMP(AND(A("x ^ 2 = 4"), A("0 < x")), A("x = 2")))
    a = audit(src, "theorem two (x : ℝ) (h1 : x ^ 2 = 4) (h2 : 0 < x) (h3 : x = 2) : x = 2 := by sorry", [
        row(["s1"], ["c1"]), row(["s4"], ["c3"]), row(["s5"], ["c5"]),
        row([], ["c7"], "unaligned", difference="the candidate assumes x = 2, the value the source asks to prove"),
        row(["s6"], ["c8"], "unaligned", difference="the claim x = 2 is already a hypothesis of the candidate"),
    ])
    r = a.result
    assert r.valid, r.errors
    assert r.grade == 0 and a.item(4).grade == 0 and a.item(5).grade == 0
    assert any("assumed as hypothesis c7" in f for f in a.cand.get("c8").findings)


def test_conclusion_assumed_as_hypothesis_cannot_be_graded_up_by_the_judge():
    src = F("x", "ℝ", IMP(AND(A("x ^ 2 = 4"), A("0 < x")), A("x = 2")))
    a = audit(src, "theorem two (x : ℝ) (h1 : x ^ 2 = 4) (h2 : 0 < x) (h3 : x = 2) : x = 2 := by sorry", [
        row(["s1"], ["c1"]), row(["s4"], ["c3"]), row(["s5"], ["c5"]),
        row([], ["c7"], "mutated_stronger", argument="an extra hypothesis", difference="x = 2 assumed as well"),
        row(["s6"], ["c8"]),
    ], transfer={})
    assert a.result.valid, a.result.errors
    assert a.result.grade == 0  # an extra hypothesis is inadmissible, and the finding forces 0


# -- 5. ℝ-valued where the source is ℂ-valued ---------------------------------------------------------

def test_real_valued_function_for_complex_valued_object_is_mutated_grade_at_most_1():
    src = F("f", "ℂ → ℂ", IMP(F("z", "ℂ", A("f z = f (-z)")), A("f 0 = f 0 + 0")))
    a = audit(src, "theorem even_fun (f : ℝ → ℝ) (h : ∀ z : ℝ, f z = f (-z)) : f 0 = f 0 + 0 := by sorry", [
        row(["s1"], ["c1"], "mutated", argument="f maps ℝ to ℝ instead of ℂ to ℂ", affected=["s4", "s5", "c4", "c5"],
            repair="take f : ℂ → ℂ"),
        row(["s3"], ["c3"], "mutated", argument="z ranges over ℝ instead of ℂ", affected=["s4", "c4"]),
        row(["s4"], ["c4"]),
        row(["s5"], ["c5"]),
    ], transfer={})
    r = a.result
    assert r.valid, r.errors
    assert a.item(1).grade == 1 and a.item(1).relation == "mutated"
    assert r.grade is not None and r.grade <= 1
    assert r.routing == "repair"


# -- 6. records the validator rejects ---------------------------------------------------------------

SRC_08 = F("x", "ℝ", IMP(A("0 < x"), AND(A("x ≤ x ^ 2 + 1"), A("0 < x ^ 2 + 1"))))
LEAN_08 = "theorem pos (y : ℝ) (hy : 0 < y) : 0 < y ^ 2 + 1 ∧ y ≤ y ^ 2 + 1 := by sorry"


def test_conversion_outside_the_closed_list_is_rejected():
    a = audit(SRC_08, LEAN_08, [
        row(["s1"], ["c1"]), row(["s3"], ["c3"]),
        row(["s5", "s6"], ["c5", "c6"], "trivial_equivalent", conversions=["ring_normalization"],
            argument="the two claims are the same up to the order of the conjuncts"),
    ])
    assert not a.result.valid and a.result.routing == "reject"
    assert any("conversion 'ring_normalization' is not in the closed list" in e for e in a.result.errors)


def test_unpaired_slot_without_an_omission_row_is_rejected():
    a = audit(SRC_08, LEAN_08, [row(["s1"], ["c1"]), row(["s3"], ["c3"]), row(["s5"], ["c6"])])
    assert not a.result.valid
    assert any(e.startswith("slot s6 goal `0 < x ^ 2 + 1` is in no row") for e in a.result.errors)
    assert any(e.startswith("slot c5 goal `0 < y ^ 2 + 1` is in no row") for e in a.result.errors)


def test_placeholder_text_in_an_argument_is_rejected():
    for text in ("TODO", "...", "see above", "n/a", "trivial"):
        a = audit(SRC_08, LEAN_08, [
            row(["s1"], ["c1"]), row(["s3"], ["c3"]),
            row(["s5", "s6"], ["c5", "c6"], "trivial_equivalent", conversions=["conjunct_reordering"], argument=text),
        ])
        assert not a.result.valid, text
        assert any("needs a concrete argument" in e for e in a.result.errors), text


def test_same_on_items_that_differ_is_rejected():
    a = audit(SRC_01, "theorem sq_lt (x : ℝ) (h : 0 < x) (h1 : x ≤ 1) : x ^ 2 < x := by sorry", [
        row(["s1"], ["c1"]), row(["s4"], ["c3"]), row(["s5"], ["c5"]), row(["s6"], ["c6"]),
    ])
    assert not a.result.valid
    assert any("labelled same but the texts differ: `x < 1` vs `x ≤ 1`" in e for e in a.result.errors)


# -- 8. renamed bound variable, reordered conjunction ----------------------------------------------------

def test_renamed_variable_and_reordered_conjuncts_pair_one_to_one_grade_3():
    a = audit(SRC_08, LEAN_08, [row(["s1"], ["c1"]), row(["s3"], ["c3"]), row(["s5"], ["c6"]), row(["s6"], ["c5"])])
    assert a.result.valid, a.result.errors
    assert a.result.grade == 3 and a.result.routing == "freeze"


def test_renamed_variable_and_reordered_conjuncts_as_a_group_grade_2():
    a = audit(SRC_08, LEAN_08, [
        row(["s1"], ["c1"], "trivial_equivalent", conversions=["alpha_renaming"], argument="x is called y"),
        row(["s3"], ["c3"]),
        row(["s5", "s6"], ["c5", "c6"], "trivial_equivalent", conversions=["alpha_renaming", "conjunct_reordering"],
            argument="the two claims appear in the other order, with y for x"),
    ])
    assert a.result.valid, a.result.errors
    assert a.result.grade == 2 and a.result.routing == "freeze"


def test_threshold_3_sends_a_grade_2_statement_back():
    a = audit(SRC_08, LEAN_08, [
        row(["s1"], ["c1"]), row(["s3"], ["c3"]),
        row(["s5", "s6"], ["c5", "c6"], "trivial_equivalent", conversions=["conjunct_reordering"],
            argument="the two claims appear in the other order"),
    ], threshold=3)
    assert a.result.grade == 2 and a.result.routing == "repair"


def test_objects_grouped_with_their_claim_count_at_the_claims_polarity():
    src = F("R", "Type*", F("a", "R", F("b", "R", A("a * b = b * a"))))
    a = audit(src, "theorem comm (R : Type*) : Nonempty (CommRing R) := by sorry", [
        row(["s1"], ["c1"]),
        row(["s2", "s3", "s4"], ["c2"], "mutated_weaker", argument="some commutative structure exists, not this one"),
    ], transfer={})
    item = a.item(2)
    assert item.polarity == "positive" and not item.admissible and item.grade == 0


# -- a claim code cannot check never raises a grade ---------------------------------

SRC_23 = F("x", "ℝ", IMP(A("0 < x"), A("x < x + 1")))


def _flip_audit(lean: str, conversions: list[str], threshold: int = 2):
    return audit(SRC_23, lean, [
        row(["s1"], ["c1"]),
        row(["s3"], ["c3"], "trivial_equivalent", conversions=conversions,
            argument="0 < x is written the other way round as x > 0"),
        row(["s4"], ["c4"]),
    ], threshold=threshold)


def test_an_inequality_flip_code_verifies_grades_2():
    a = _flip_audit("theorem t (x : ℝ) (h : x > 0) : x < x + 1 := by sorry", ["inequality_flip"])
    assert a.result.valid, a.result.errors
    assert a.result.grade == 2 and a.result.routing == "freeze"


def test_an_inequality_flip_that_weakens_the_statement_grades_0_at_every_threshold():
    """The attacker's record: `inequality_flip` claimed for `x ≥ 0` against `0 < x` (a weaker
    hypothesis: a stronger claim is frozen than the source's). It graded 2 = the default threshold."""
    for threshold in (1, 2, 3):
        a = _flip_audit("theorem t (x : ℝ) (h : x ≥ 0) : x < x + 1 := by sorry", ["inequality_flip"], threshold)
        assert a.result.valid, a.result.errors
        assert a.result.grade == 0 and a.result.routing == "repair", (threshold, a.result.grade)
        assert "unverified conversion: inequality_flip does not turn" in a.item(2).note


def test_a_conversion_code_does_not_check_never_raises_a_grade():
    """Every conversion outside CHECKED_CONVERSIONS, even on a row whose texts are equivalent."""
    from fyan.audit.record import CHECKED_CONVERSIONS, CONVERSIONS

    unchecked = sorted(set(CONVERSIONS) - CHECKED_CONVERSIONS)
    assert "coercion_insertion" in unchecked and "numeral_representation" in unchecked
    for conv in unchecked:
        a = _flip_audit("theorem t (x : ℝ) (h : x > 0) : x < x + 1 := by sorry", [conv, "inequality_flip"])
        assert a.result.valid, (conv, a.result.errors)
        assert a.result.grade == 0 and a.result.routing == "repair", conv
        assert f"{conv}: a conversion deterministic code does not check" in a.item(2).note, conv


def test_the_symmetric_forms_code_checks():
    src = F("x", "ℝ", IMP(A("x = 1"), A("x + 1 = 2")))
    ok = audit(src, "theorem t (x : ℝ) (h : 1 = x) : x + 1 = 2 := by sorry", [
        row(["s1"], ["c1"]), row(["s3"], ["c3"], "trivial_equivalent", conversions=["eq_symmetry"],
                                 argument="x = 1 is written as 1 = x"), row(["s4"], ["c4"])])
    assert ok.result.grade == 2, ok.result.items
    wrong = audit(src, "theorem t (x : ℝ) (h : 2 = x) : x + 1 = 2 := by sorry", [
        row(["s1"], ["c1"]), row(["s3"], ["c3"], "trivial_equivalent", conversions=["eq_symmetry"],
                                 argument="x = 1 is written as 2 = x"), row(["s4"], ["c4"])])
    assert wrong.result.grade == 0


def test_the_threshold_cannot_be_set_where_an_unchecked_claim_would_freeze():
    import pydantic
    import pytest

    from fyan.config import AuditSection

    with pytest.raises(pydantic.ValidationError):
        AuditSection(threshold=0)
    assert AuditSection(threshold=1).threshold == 1
