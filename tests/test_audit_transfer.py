"""The transfer checker: composition over ⊤, ⊥, ∧, ∨, →, ∀, ∃ and every refusal it owes."""

from __future__ import annotations

from fyan.audit.record import TransferEvidence
from fyan.audit.transfer import Pairing, check_transfer
from tests.audit_helpers import AND, FALSE, IFF, OR, TRUE, A, E, F, IMP, NOT, sides


def tx(source, lean, links, evidence=None, rename=None):
    src, side = sides(source, lean)
    p = Pairing()
    for s, c, *rel in links:
        p.links.add((s, c))
        p.relation[(s, c)] = rel[0] if rel else "mutated"
    ev = TransferEvidence.model_validate(evidence or {})
    return check_transfer(src, side.slots, p, ev, rename or {})


# -- omissions --------------------------------------------------------------------------------

def test_conjunct_dropped_from_a_hypothesis_transfers():  # P ∧ ⊤ at negative polarity
    r = tx(F("x", "ℤ", IMP(AND(A("0 < x"), A("x < 9")), A("x * x < 81"))),
           "theorem t (x : ℤ) (h : 0 < x) : x * x < 81 := by sorry",
           [("s1", "c1"), ("s4", "c3"), ("s6", "c4")])
    assert r.ok, r.refusals
    assert {s.map for s in r.recipes} == {"e", "a", "g"}
    assert any(s.via.startswith("omission (P ∧ ⊤)") and s.source == ["s5"] for s in r.recipes)


def test_conjunct_dropped_from_the_claim_is_refused():  # P ∧ ⊤ at positive polarity
    r = tx(F("x", "ℤ", AND(A("0 ≤ x * x"), A("x ≤ x * x"))), "theorem t (x : ℤ) : 0 ≤ x * x := by sorry",
           [("s1", "c1"), ("s3", "c2")])
    assert not r.ok
    assert any("source item s4 `x ≤ x * x` has no counterpart" in m for m in r.refusals)


def test_literal_true_conjunct_is_supported_on_either_side():  # ⊤ ∧ P and P ∧ ⊤
    r = tx(F("x", "ℤ", A("0 ≤ x * x")), "theorem t (x : ℤ) : True ∧ 0 ≤ x * x := by sorry", [("s1", "c1"), ("s2", "c4")])
    assert r.ok, r.refusals
    r = tx(F("x", "ℤ", IMP(AND(TRUE, A("0 < x")), A("0 < x * x"))), "theorem t (x : ℤ) (h : 0 < x) : 0 < x * x := by sorry",
           [("s1", "c1"), ("s5", "c3"), ("s6", "c4")])
    assert r.ok, r.refusals


def test_disjunct_dropped_from_the_claim_transfers():  # P ∨ ⊥ at positive polarity
    r = tx(F("x", "ℤ", OR(A("0 ≤ x"), A("x < 0"))), "theorem t (x : ℤ) : 0 ≤ x := by sorry", [("s1", "c1"), ("s3", "c2")])
    assert r.ok, r.refusals


def test_disjunct_dropped_from_a_hypothesis_is_refused():  # P ∨ ⊥ at negative polarity
    r = tx(F("x", "ℤ", IMP(OR(A("x = 1"), A("x = 2")), A("0 < x"))), "theorem t (x : ℤ) (h : x = 1) : 0 < x := by sorry",
           [("s1", "c1"), ("s4", "c3"), ("s6", "c4")])
    assert not r.ok
    assert any("source item s5 `x = 2` has no counterpart" in m for m in r.refusals)


def test_literal_false_disjunct_is_supported():  # ⊥ ∨ P
    r = tx(F("x", "ℤ", OR(FALSE, A("0 ≤ x * x"))), "theorem t (x : ℤ) : 0 ≤ x * x := by sorry", [("s1", "c1"), ("s4", "c2")])
    assert r.ok, r.refusals


def test_extra_candidate_hypothesis_needs_a_certificate_from_the_source_hypotheses():
    source = F("x", "ℤ", IMP(A("0 < x"), A("0 < x * x")))
    lean = "theorem t (x : ℤ) (h : 0 < x) (h' : 0 ≤ x) : 0 < x * x := by sorry"
    links = [("s1", "c1"), ("s3", "c3"), ("s4", "c6")]
    r = tx(source, lean, links)
    assert not r.ok and any("candidate item c5 `0 ≤ x` has no counterpart" in m for m in r.refusals)
    cert = {"id": "k1", "source": [], "candidate": ["c5"], "sign": "-", "argument": "0 < x gives 0 ≤ x", "uses": ["s3"]}
    r = tx(source, lean, links, {"certificates": [cert]})
    assert r.ok, r.refusals
    assert any(s.map == "a" and s.target == "c5" and "certificate k1" in s.via for s in r.recipes)


# -- changed quantifier domains ------------------------------------------------------------------

POS = "{q : ℚ // 0 < q}"


def test_changed_forall_domain_needs_a_source_to_candidate_witness_adapter():
    source = F("a", POS, A("a + 1 / a ≥ 2"))
    lean = "theorem t (a : ℚ) : a + 1 / a ≥ 2 := by sorry"
    links = [("s1", "c1"), ("s2", "c2")]
    r = tx(source, lean, links)
    assert not r.ok and any("needs a witness adapter source_to_candidate" in m for m in r.refusals)
    good = {"adapters": [{"id": "a1", "source": "s1", "candidate": "c1", "direction": "source_to_candidate", "map": "Subtype.val"}]}
    r = tx(source, lean, links, good)
    assert r.ok, r.refusals
    assert r.recipes[0].map == "e" and r.recipes[0].target == "c1" and "adapter a1" in r.recipes[0].via
    wrong = {"adapters": [{"id": "a1", "source": "s1", "candidate": "c1", "direction": "candidate_to_source", "map": "?"}]}
    r = tx(source, lean, links, wrong)
    assert not r.ok and any("adapter a1 is wrongly directed" in m for m in r.refusals)


def test_changed_exists_domain_at_positive_polarity_needs_candidate_to_source():
    source = E("a", POS, A("a * a = 4"))
    lean = "theorem t : ∃ a : {q : ℚ // 1 < q}, a * a = 4 := by sorry"
    links = [("s1", "c1"), ("s2", "c2")]
    ok = {"adapters": [{"id": "a1", "source": "s1", "candidate": "c1", "direction": "candidate_to_source",
                        "map": "fun a => ⟨a.1, lt_trans zero_lt_one a.2⟩"}]}
    assert tx(source, lean, links, ok).ok
    wrong = {"adapters": [{"id": "a1", "source": "s1", "candidate": "c1", "direction": "source_to_candidate", "map": "f"}]}
    r = tx(source, lean, links, wrong)
    assert not r.ok and any("needs candidate_to_source" in m for m in r.refusals)


def test_iff_is_an_unsupported_constructor_unless_a_certificate_covers_it():
    source = IFF(F("a", POS, A("0 < a")), A("p"))
    lean = "theorem t : (∀ a : {q : ℚ // 1 < q}, 0 < a) ↔ p := by sorry"
    links = [("s2", "c2"), ("s3", "c3"), ("s4", "c4")]
    r = tx(source, lean, links)
    assert not r.ok and any("unsupported constructor ↔ at s1 ~ c1" in m for m in r.refusals)
    cert = {"id": "k1", "source": ["s1"], "candidate": ["c1"], "sign": "+", "argument": "both sides are p"}
    assert tx(source, lean, links, {"certificates": [cert]}).ok
    cert["sign"] = "-"
    assert not tx(source, lean, links, {"certificates": [cert]}).ok


def test_mixed_position_needs_both_directions():
    # inside an iff both sides are mixed: a one-way adapter is not enough
    source = IFF(A("p"), F("a", POS, A("0 < a")))
    lean = "theorem t : p ↔ ∀ a : {q : ℚ // 1 < q}, 0 < a := by sorry"
    src, side = sides(source, lean)
    p = Pairing(links={("s3", "c3"), ("s4", "c4")})
    k = {"id": "k0", "source": ["s2"], "candidate": ["c2"], "sign": "=", "argument": "p is p"}
    one_way = {"adapters": [{"id": "a1", "source": "s3", "candidate": "c3", "direction": "candidate_to_source", "map": "f"}],
               "certificates": [k]}
    from fyan.audit.transfer import _Checker

    checker = _Checker(src, side.slots, p, TransferEvidence.model_validate(one_way), {})
    assert not checker.transfer(src.tree.args[1], side.slots.tree.args[1], "mixed", "g")
    both = {"adapters": [{"id": "a1", "source": "s3", "candidate": "c3", "direction": "both", "map": "f"}]}
    checker = _Checker(src, side.slots, Pairing(links={("s3", "c3"), ("s4", "c4")}), TransferEvidence.model_validate(both), {})
    assert checker.transfer(src.tree.args[1], side.slots.tree.args[1], "mixed", "g"), checker.refusals


# -- refusals --------------------------------------------------------------------------------------

def test_incomplete_coverage_of_candidate_objects_is_refused():
    r = tx(F("x", "ℤ", A("0 ≤ x * x")), "theorem t (x y : ℤ) : 0 ≤ x * x := by sorry", [("s1", "c1"), ("s2", "c3")])
    assert not r.ok
    assert any("incomplete coverage: candidate object c2 `y : ℤ`" in m for m in r.refusals)


def test_changed_atom_needs_a_correctly_directed_certificate():
    source = F("x", "ℤ", IMP(A("0 < x"), A("0 < x * x")))
    lean = "theorem t (x : ℤ) (h : 1 ≤ x) : 0 < x * x := by sorry"
    links = [("s1", "c1"), ("s3", "c3"), ("s4", "c4")]
    r = tx(source, lean, links)
    assert not r.ok and any("changed item s3 `0 < x` ~ c3 `1 ≤ x`" in m for m in r.refusals)
    minus = {"certificates": [{"id": "k1", "source": ["s3"], "candidate": ["c3"], "sign": "-", "argument": "0 < x ↔ 1 ≤ x on ℤ"}]}
    assert tx(source, lean, links, minus).ok
    plus = {"certificates": [{"id": "k1", "source": ["s3"], "candidate": ["c3"], "sign": "+", "argument": "1 ≤ x gives 0 < x"}]}
    r = tx(source, lean, links, plus)
    assert not r.ok and any("certificate k1 is wrongly directed" in m for m in r.refusals)


def test_changed_item_labelled_same_is_refused():
    r = tx(F("x", "ℤ", A("0 ≤ x * x")), "theorem t (x : ℤ) : 0 < x * x + 1 := by sorry",
           [("s1", "c1", "same"), ("s2", "c2", "same")])
    assert not r.ok
    assert any("changed item labelled same: s2 `0 ≤ x * x` vs c2 `0 < x * x + 1`" in m for m in r.refusals)
    r = tx(F("x", "ℕ", A("0 ≤ x * x")), "theorem t (x : ℤ) : 0 ≤ x * x := by sorry",
           [("s1", "c1", "same"), ("s2", "c2", "same")])
    assert not r.ok and any("changed item labelled same: object s1" in m for m in r.refusals)


def test_certificate_using_a_hypothesis_out_of_scope_is_refused():
    # the certificate for the first hypothesis uses the second one, which is not available there
    source = F("x", "ℤ", IMP(A("0 < x"), IMP(A("x < 5"), A("x * x < 25"))))
    lean = "theorem t (x : ℤ) (h : 1 ≤ x) (h2 : x < 5) : x * x < 25 := by sorry"
    links = [("s1", "c1"), ("s3", "c3"), ("s5", "c5"), ("s6", "c6")]
    bad = {"certificates": [{"id": "k1", "source": ["s3"], "candidate": ["c3"], "sign": "-", "argument": "from x < 5",
                             "uses": ["s5"]}]}
    r = tx(source, lean, links, bad)
    assert not r.ok and any("k1 uses s5, which is not in scope there (bad scope" in m for m in r.refusals)


def test_cyclic_and_undeclared_dependencies_are_refused():
    source = F("x", "ℤ", IMP(A("0 < x"), A("0 < x * x")))
    lean = "theorem t (x : ℤ) (h : 1 ≤ x) : 0 < x * x + 0 := by sorry"
    links = [("s1", "c1"), ("s3", "c3"), ("s4", "c4")]
    certs = [
        {"id": "k1", "source": ["s3"], "candidate": ["c3"], "sign": "-", "argument": "integers", "uses": ["k2"]},
        {"id": "k2", "source": ["s4"], "candidate": ["c4"], "sign": "+", "argument": "add zero", "uses": ["k1"]},
    ]
    r = tx(source, lean, links, {"certificates": certs})
    assert not r.ok and any(m.startswith("cyclic dependency between certificates") for m in r.refusals)
    certs[1]["uses"] = ["k9"]
    certs[0]["uses"] = []
    r = tx(source, lean, links, {"certificates": certs})
    assert not r.ok and any("k2 uses 'k9', which is neither a slot nor a declared" in m for m in r.refusals)
    certs[1]["uses"] = []
    assert tx(source, lean, links, {"certificates": certs}).ok


def test_group_certificate_relates_one_source_premise_to_two_candidate_premises():
    source = F("x", "ℝ", IMP(A("x ∈ Set.Ioo 0 1"), A("x ^ 2 < x")))
    lean = "theorem t (x : ℝ) (h0 : 0 < x) (h1 : x < 1) : x ^ 2 < x := by sorry"
    links = [("s1", "c1"), ("s3", "c3"), ("s3", "c5"), ("s4", "c6")]
    r = tx(source, lean, links)
    assert not r.ok and any("paired as a group but no certificate covers the group" in m for m in r.refusals)
    cert = {"id": "k1", "source": ["s3"], "candidate": ["c3", "c5"], "sign": "=", "argument": "Set.mem_Ioo"}
    r = tx(source, lean, links, {"certificates": [cert]})
    assert r.ok, r.refusals


def test_negation_is_read_as_implication_to_false():
    r = tx(NOT(E("r", "ℚ", A("r * r = 2"))), "theorem t : ¬ ∃ q : ℚ, q * q = 2 := by sorry",
           [("s2", "c2"), ("s3", "c3")], rename={"r": "q"})
    assert r.ok, r.refusals
    # the negated existential's witness must map candidate → source is not needed: it is a premise
    r = tx(NOT(E("r", "ℚ", A("r * r = 2"))), "theorem t : ¬ ∃ q : ℚ, q * q = 3 := by sorry",
           [("s2", "c2"), ("s3", "c3")], rename={"r": "q"})
    assert not r.ok


def test_unchanged_subformula_needs_no_descent_even_through_iff():
    source = F("g", "ℤ", IMP(IFF(A("g * g = g"), OR(A("g = 0"), A("g = 1"))), A("0 ≤ g")))
    lean = "theorem t (g : ℤ) (h : g * g = g ↔ g = 0 ∨ g = 1) : 0 ≤ g := by sorry"
    r = tx(source, lean, [("s1", "c1"), ("s4", "c4"), ("s6", "c6"), ("s7", "c7"), ("s8", "c8")])
    assert r.ok, r.refusals
    assert any(s.via == "the same subformula" for s in r.recipes)


def test_instance_arguments_are_premises():
    source = F("G", "Type*", F("_inst", "Group G", F("_inst", "Fintype G", A("0 < Fintype.card G")), binder="instance"),
               binder="explicit")
    source["args"][0]["args"][0]["binder"] = "instance"
    lean = "theorem t (G : Type*) [Group G] : 0 < Fintype.card G := by sorry"
    r = tx(source, lean, [("s1", "c1"), ("s2", "c2"), ("s4", "c3")])
    assert r.ok, r.refusals  # dropping the source's [Fintype G] makes the candidate stronger: fine
    r = tx(F("G", "Type*", F("_inst", "Group G", A("0 < Fintype.card G"), binder="instance")),
           "theorem t (G : Type*) [Group G] [Fintype G] : 0 < Fintype.card G := by sorry",
           [("s1", "c1"), ("s2", "c2"), ("s3", "c4")])
    assert not r.ok and any("candidate item c3 `Fintype G` has no counterpart" in m for m in r.refusals)
