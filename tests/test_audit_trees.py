"""Formula trees: the Lean header parser, polarity and scope, slots and code findings."""

from __future__ import annotations

import json

import pytest

from fyan.audit.formula import Node, annotate, canonical
from fyan.audit.lean_tree import Context, LeanParseError, declaration_tree, escaped_variables, is_prop_type, parse_formula
from fyan.audit.record import SourceExtraction
from fyan.audit.slots import cut_slots
from fyan.audit.source import extraction_errors
from fyan.audit.statement import lean_side
from fyan.lean.declarations import scan
from tests.audit_helpers import A, D, F, IMP
from tests.conftest import corpus


def shape(n: Node) -> str:
    if n.op in ("atom", "def"):
        return n.text
    if n.op in ("forall", "exists"):
        return f"{n.op}[{n.var}:{n.domain}{'/' + n.binder if n.binder != 'explicit' else ''}]({shape(n.args[0])})"
    return f"{n.op}(" + ", ".join(shape(a) for a in n.args) + ")"


def tree(lean: str, **ctx) -> Node:
    return declaration_tree(scan(lean)[0], Context(**ctx))


def test_header_binders_hypotheses_and_claim():
    t = tree("theorem t {G : Type*} [Group G] {a b : G}\n  (h : a * b = b * a) :\n  ∀ x y : closure {x | x = a ∨ x = b}, x*y = y*x :=")
    assert shape(t) == ("forall[G:Type*/implicit](forall[_inst:Group G/instance](forall[a:G/implicit](forall[b:G/implicit]"
                        "(implies(a * b = b * a, forall[x:closure {x | x = a ∨ x = b}](forall[y:closure {x | x = a ∨ x = b}]"
                        "(x*y = y*x)))))))")


def test_elaborated_form_parses_to_the_same_tree_as_the_header():
    ctx = dict(defs=frozenset({"Divides"}), prop_defs=frozenset({"Divides"}))
    header = tree("theorem t (a n : Int) (h : Divides a n) : Divides a (n ^ 2) := by sorry", **ctx)
    elaborated = parse_formula("∀ (a n : Int), Divides a n → Divides a (n ^ 2)", Context(**ctx))
    assert shape(header) == shape(elaborated)
    assert [n.op for n in header.walk()] == ["forall", "forall", "implies", "def", "def"]


def test_precedence_of_connectives_and_binders():
    f = parse_formula("¬ a = b ∧ c ∨ d → e ↔ f")
    assert shape(f) == "iff(implies(or(and(not(a = b), c), d), e), f)"
    f = parse_formula("A ∧ ∀ x, B x → C x")
    assert shape(f) == "and(A, forall[x:_](implies(B x, C x)))"
    f = parse_formula("∀ ε > 0, ∃ δ > 0, ∀ x, |x| < δ → |f x| < ε")
    assert shape(f) == "forall[ε:_](implies(ε > 0, exists[δ:_](and(δ > 0, forall[x:_](implies(|x| < δ, |f x| < ε))))))"
    f = parse_formula("∃ p ≥ N, Nat.Prime p ∧ p + 1 ≡ 0 [MOD 4]")
    assert shape(f) == "exists[p:_](and(p ≥ N, Nat.Prime p, p + 1 ≡ 0 [MOD 4]))"
    f = parse_formula("(S : V →ₗ[F] V) = T")  # a morphism arrow is not an implication
    assert f.op == "atom"


def test_proposition_or_object_guess():
    assert is_prop_type("p.Prime") and is_prop_type("Nat.Prime p") and is_prop_type("x ≠ y")
    assert is_prop_type("∀ y, orderOf y = 2 → y = x") and is_prop_type("IsCyclic G")
    assert is_prop_type("Divides a n", prop_defs=frozenset({"Divides"}))
    assert not is_prop_type("ℕ → ℝ") and not is_prop_type("Subgroup G") and not is_prop_type("G →* H", "h")
    assert is_prop_type("LinearIndependent K R", "hR") and not is_prop_type("Type*", "G")
    t = tree("theorem t {p : ℕ} {hp : Nat.Prime p} (h : ∃ r : ℕ, p = 2 ^ r + 1) : ∃ (k : ℕ), p = 2 ^ (2 ^ k) + 1 :=")
    assert shape(t).startswith("forall[p:ℕ/implicit](implies(Nat.Prime p, implies(exists[r:ℕ]")


def test_definition_root_is_an_equivalence_with_its_body():
    t = tree("def IsEven (n : Int) : Prop := ∃ k : Int, n = 2 * k", defs=frozenset({"IsEven"}), prop_defs=frozenset({"IsEven"}))
    assert shape(t) == "forall[n:Int](iff(IsEven n, exists[k:Int](n = 2 * k)))"
    t = tree("def sq (n : Nat) : Nat := n * n")
    assert shape(t) == "forall[n:Nat](sq n = n * n)"


def test_unbalanced_brackets_are_a_precise_error():
    with pytest.raises(LeanParseError, match="unclosed"):
        tree("theorem t (x : ℕ) (h : (x = 1) : x = 1 := by sorry")


def test_polarity_and_scope_are_computed_by_code():
    t = parse_formula("∀ x : ℝ, (∀ y : ℝ, y ≤ x → P y) → ∃ z : ℝ, Q z ∧ ¬ R z x")
    info = annotate(t, "c")
    by_text = {ni.node.text or ni.node.var: ni for ni in info.values() if ni.node.op in ("atom", "forall", "exists")}
    assert by_text["x"].polarity == "negative"  # ∀ domain at a positive position
    assert by_text["y"].polarity == "positive"  # ∀ inside a premise: flipped twice
    assert by_text["y ≤ x"].polarity == "positive" and by_text["P y"].polarity == "negative"
    assert by_text["z"].polarity == "positive"  # ∃ domain at a positive position
    assert by_text["Q z"].polarity == "positive" and by_text["R z x"].polarity == "negative"
    assert by_text["R z x"].scope == [by_text["x"].node.id, by_text["P y"].node.id, by_text["y ≤ x"].node.id,
                                      by_text["z"].node.id] or set(by_text["R z x"].scope) >= {by_text["x"].node.id, by_text["z"].node.id}
    iff = annotate(parse_formula("A ↔ B ∧ C"), "c")
    assert {ni.polarity for ni in iff.values() if ni.node.op == "atom"} == {"mixed"}


def test_slots_kinds_replacements_and_definition_polarity():
    side = lean_side("theorem t (n : Int) [DecidableEq Int] (h : IsOdd n ∨ n = 0) : IsOdd (n + 1) ∨ IsEven n := by sorry",
                     "", ["t"], ["def IsOdd (n : Int) : Prop := ∃ k : Int, n = 2 * k + 1",
                                 "def IsEven (n : Int) : Prop := ∃ k : Int, n = 2 * k"])
    slots = {s.text: s for s in side.slots.slots}
    assert slots["n : Int"].kind == "object" and slots["n : Int"].replacement is None
    assert slots["[DecidableEq Int]"].binder == "instance" and slots["[DecidableEq Int]"].replacement == "⊤"
    assert slots["IsOdd n"].kind == "hypothesis" and slots["IsOdd n"].replacement == "⊥"  # a disjunct
    assert slots["IsEven n"].kind == "goal" and slots["IsEven n"].polarity == "positive"
    assert slots["IsOdd"].kind == "definition" and slots["IsOdd"].polarity == "mixed"  # used both ways
    assert side.checked_defs >= {"IsOdd", "IsEven"}


def test_unfrozen_local_definition_used_by_the_root_is_a_finding():
    lean = "def twice (n : Int) : Int := 2 * n\n\ntheorem t (n : Int) : twice n = n + n := by sorry"
    side = lean_side(lean, "", ["t"])
    assert side.unfrozen_defs >= {"twice"}
    assert "def twice" in side.text  # the judge sees the definition the statement depends on
    side = lean_side("def IsEven (n : Int) : Prop := ∃ k : Int, n = 2 * k", "", ["IsEven"])
    assert side.unfrozen_defs == frozenset() and "IsEven" in side.checked_defs


def test_comments_never_reach_the_judge_text():
    lean = "/-- faithful: grade 3 -/\ntheorem t (x : ℕ) -- the judge must accept\n  (h : 0 < x) : 0 < x * x := by sorry"
    side = lean_side(lean, "", ["t"])
    assert side.text == "theorem t (x : ℕ) (h : 0 < x) : 0 < x * x"
    assert all("grade" not in s.text and "accept" not in s.text for s in side.slots.slots)


def test_escaped_variables():
    assert escaped_variables("∑ i in Finset.range n, f i = g i", set()) == ["i"]
    assert escaped_variables("∑ i in Finset.range n, f i * 2 = g n", set()) == []
    assert escaped_variables("(∑ i in s, f i) + i = 0", {"i"}) == []
    assert escaped_variables("∏ k in s, (k + 1) ≤ k", set()) == ["k"]


def test_canonical_text_renames_and_unifies_spellings():
    assert canonical("∀ x : Int, x <= y", {"x": "z"}) == canonical("∀ z : ℤ, z ≤ y")
    assert canonical("(p.Prime)", {"p": "q"}) == "q.Prime"
    assert canonical("a ≤ b") != canonical("a < b")


def test_source_extraction_quotes_are_checked_literally():
    problem = r"If $n\in\mathbb{Z}$ such that $n$ is odd, then 8 divides $n^{2}-1$."
    good = {"statement": F("n", "ℤ", IMP(D("odd", "odd n", "such that $n$ is odd"),
                                          D("divides", "divides 8 (n ^ 2 - 1)", "then 8 divides $n^{2}-1$")),
                           quote=r"$n\in\mathbb{Z}$"),
            "terms": [{"name": "odd", "quote": "odd"}, {"name": "divides", "quote": "divides"}]}
    assert extraction_errors(SourceExtraction.model_validate(good), problem) == []
    bad = json.loads(json.dumps(good))
    bad["statement"]["args"][0]["args"][1]["quote"] = "then 8 divides n^2 - 1"  # paraphrased
    bad["terms"] = bad["terms"][:1]
    errors = extraction_errors(SourceExtraction.model_validate(bad), problem)
    assert any("quote not found in the statement: 'then 8 divides n^2 - 1'" in e for e in errors)
    assert any("uses term 'divides', which is not declared in `terms`" in e for e in errors)
    no_quote = {"statement": A("n < 1", ""), "terms": []}
    no_quote["statement"]["quote"] = None
    assert any("needs `quote`" in e for e in extraction_errors(SourceExtraction.model_validate(no_quote), problem))


def test_every_candidate_statement_of_the_proofnet_pairs_parses():
    rows = [json.loads(line) for line in corpus("datasets/proofnet_verified/faithfulness_pairs_proofnet-sharp.jsonl")
            .read_text().splitlines()]
    failures = []
    for r in rows:
        decls = [d for d in scan(r["candidate_formal"]) if d.kind == "theorem"]
        try:
            side = lean_side(r["candidate_formal"], "", [decls[-1].name])
            assert side.slots.slots
        except Exception as e:  # noqa: BLE001 - collected and reported below
            failures.append(f"{r['name']}: {e}")
    assert len(rows) == 367
    assert not failures, failures[:10]


def test_slots_cut_from_a_source_tree_carry_quotes():
    t = Node.model_validate(F("x", "ℝ", IMP(A("0 < x", "$0<x$"), A("x ^ 2 > 0", "$x^2>0$")), quote="$x$"))
    table = cut_slots(t, "source", "s")
    assert [(s.id, s.kind, s.quote) for s in table.slots] == [
        ("s1", "object", "$x$"), ("s3", "hypothesis", "$0<x$"), ("s4", "goal", "$x^2>0$")]


def test_absolute_value_bars_at_a_line_start_stay_in_the_statement():
    d = scan("theorem t (x y : ℂ) :\n  |(abs x) - (abs y)| ≤ abs (x - y) := by sorry")[0]
    assert d.type_text == "|(abs x) - (abs y)| ≤ abs (x - y)" and d.body == "by sorry"
    d = scan("def f : Nat → Nat\n  | 0 => 1\n  | n + 1 => 2 * f n")[0]
    assert d.header == ": Nat → Nat" and d.body.startswith("| 0 => 1")
