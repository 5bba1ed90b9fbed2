"""Vacuous statements are found by code (``fyan.audit.vacuity``), at the plan check and as
candidate-slot findings of the audit, and the prelude-expressible cases are confirmed by the
real core Lean: it proves each flagged claim, or ``False`` from each flagged set of premises,
without any mathematics."""

from __future__ import annotations

import subprocess

import pytest

from fyan.audit.formula import annotate
from fyan.audit.statement import lean_side
from fyan.audit.vacuity import vacuity_findings, vacuous_roots
from tests.audit_helpers import AND, IMP, A, F, audit, row

VACUOUS = [
    "theorem t (n : Int) (k : Int) (hk : k = 0) (h0 : 0 < n) (h1 : n < 10) : n = n",
    "theorem t : 0 = 0",
    "theorem t : True",
    "theorem t (a : Nat) : a ≤ a",
    "theorem t (a : Int) : a ≥ a",
    "theorem t (p : Prop) : p → p",
    "theorem t (n : Nat) (h : False) : n = n + 1",
    "theorem t (n : Nat) (h : n < 0) : n = 1",
    "theorem t (n : Nat) (h : 0 > n) : n = 1",
    "theorem t (n : Nat) (h0 : 0 < n) (h : n = 0) : n = 1",
    "theorem t (a b : Int) (h : a < b) (h2 : b < a) : a = 1",
    "theorem t (a b : Int) (h : a < b) (h2 : a ≥ b) : a = 1",
    "theorem t (a b : Int) (h : a = b) (h2 : a ≠ b) : a = 1",
    "theorem t (x : ℝ) (h : x < x) : x = 1",
    "theorem t (n : Int) (h : 1 < 0) : n = 1",
    "theorem t (n : Int) : (∃ k : Int, n = 2 * k) ↔ ∃ j : Int, n = 2 * j",
]
HONEST = [
    "theorem t (n : Int) (h0 : 0 < n) (h1 : n < 10) : n * n < 100",
    "theorem t (x y : Nat) (h : x = y) : y = x",
    "theorem t (a b : Int) (h : a < b) (h2 : b > a) : a + 1 ≤ b",
    "theorem t : 2 + 2 = 5",
    "theorem t : 2 ^ 10 = 1024",
    "theorem t (n : Int) (h : n < 0) : n * n > 0",
    "theorem t (a : Int) (n : Nat) (h : a ∣ n) : a ∣ n * n",
    "theorem t (x : ℝ) (h : 0 ≤ x) : ∃ y : ℝ, y * y = x",
    "theorem t (n : Int) : (∃ k : Int, n = 2 * k) ↔ ∃ j : Int, n = 2 * j + 2",
]


@pytest.mark.parametrize("lean", VACUOUS)
def test_vacuous_theorem_roots_are_found_by_code(lean):
    assert vacuity_findings(annotate(lean_side(lean + " := by sorry", "", ["t"]).tree, "c"))
    assert "is vacuous" in (vacuous_roots(lean + " := by sorry", "", ["t"]) or "")


@pytest.mark.parametrize("lean", HONEST)
def test_honest_theorem_roots_are_not_vacuous(lean):
    assert vacuous_roots(lean + " := by sorry", "", ["t"]) is None


@pytest.mark.parametrize("lean, vacuous", [
    ("def IsEven (n : Int) : Prop := True", True),
    ("def IsEven (n : Int) : Prop := False", True),
    ("def IsEven (n : Int) : Prop := n = n", True),
    ("def IsEven (n : Int) : Prop := ∃ k : Int, 0 = 2 * k", True),
    ("def five (n : Nat) : Nat := 5", True),
    ("def IsEven (n : Int) : Prop := ∃ k : Int, n = 2 * k", False),
    ("def Divides (a b : Int) : Prop := ∃ k : Int, b = a * k", False),
    ("def five : Nat := 5", False),
])
def test_a_definition_that_ignores_its_arguments_is_vacuous(lean, vacuous):
    name = lean.split()[1]
    assert (vacuous_roots(lean, "", [name]) is not None) is vacuous


def test_a_vacuous_candidate_grades_0_even_when_every_row_claims_same():
    src = F("n", "ℤ", IMP(AND(A("0 < n"), A("n < 10")), A("n * n < 100")))
    lean = "theorem t (n : Int) (h0 : 0 < n) (h1 : n < 10) (h2 : 10 < n) : n * n < 100 := by sorry"
    a = audit(src, lean, [row(["s1"], ["c1"]), row(["s4"], ["c3"]), row(["s5"], ["c5", "c7"], "mutated_stronger",
                                                                            argument="n < 10 and a second bound")
                          , row(["s6"], ["c8"])], transfer={"adapters": [], "certificates": []})
    assert a.result.valid and a.result.grade == 0
    assert any("contradict" in f for s in a.cand.slots for f in s.findings)


# -- the real core Lean confirms the prelude-expressible cases ---------------------------------------

PRELUDE = """prelude
universe u
-- the compiler's erased-type constant, which an indexed inductive family (`Le`) needs without Init
axiom lcErased : Type
inductive Eq {α : Sort u} (a : α) : α → Prop where
  | refl : Eq a a
inductive True : Prop where
  | intro : True
inductive False : Prop
inductive N where
  | z : N
  | s : N → N
inductive Le (n : N) : N → Prop where
  | refl : Le n n
  | step {m : N} : Le n m → Le n (N.s m)
def Lt (n m : N) : Prop := Le (N.s n) m
def IsZero (m : N) : Prop := N.rec (motive := fun _ => Prop) True (fun _ _ => False) m
theorem lt_zero (n : N) (h : Lt n N.z) : False :=
  @Le.rec (N.s n) (fun m _ => IsZero m → False) (fun h => h) (fun _ _ h => h) N.z h True.intro
"""
#: (the statement as the finder reads it, the same statement in the prelude's terms with a proof
#: that uses no mathematics: the claim by reflexivity, or False from the premises)
CORE_CASES = [
    ("theorem t (n : Nat) (k : Nat) (hk : k = 0) : n = n", "theorem t (n : N) (k : N) (_hk : Eq k N.z) : Eq n n := Eq.refl"),
    ("theorem t : True", "theorem t : True := True.intro"),
    ("theorem t (p : Prop) : p → p", "theorem t (p : Prop) : p → p := fun h => h"),
    ("theorem t (a : Nat) : a ≤ a", "theorem t (a : N) : Le a a := Le.refl"),
    ("theorem t (n : Nat) (h : False) : n = n + 1",
     "theorem t (n : N) (h : False) : Eq n (N.s n) := False.rec (fun _ => Eq n (N.s n)) h"),
    ("theorem t (n : Nat) (h : n < 0) : n = 1", "theorem t (n : N) (h : Lt n N.z) : False := lt_zero n h"),
    ("theorem t (n : Nat) (h0 : 0 < n) (h : n = 0) : n = 1",
     "theorem t (n : N) (h0 : Lt N.z n) (h : Eq n N.z) : False := lt_zero N.z (@Eq.rec N n (fun m _ => Lt N.z m) h0 N.z h)"),
]


def _elaborate(core_lean, tmp_path, body: str) -> subprocess.CompletedProcess:
    src = tmp_path / "Vacuity.lean"
    src.write_text(PRELUDE + body + "\n")
    return subprocess.run([str(core_lean), str(src)], cwd=tmp_path, capture_output=True, text=True, timeout=120)


@pytest.mark.lean_core
def test_core_lean_proves_each_flagged_case_without_mathematics(core_lean, tmp_path):
    for finder, _ in CORE_CASES:
        assert vacuous_roots(finder + " := by sorry", "", ["t"]), finder
    bodies = "\n".join(lean.replace("theorem t ", f"theorem t{i} ") for i, (_, lean) in enumerate(CORE_CASES))
    run = _elaborate(core_lean, tmp_path, bodies)
    assert run.returncode == 0 and "error" not in run.stdout, run.stdout + run.stderr


@pytest.mark.lean_core
def test_core_lean_refuses_the_same_trick_on_a_claim_the_finder_leaves_alone(core_lean, tmp_path):
    assert vacuous_roots("theorem t (n : Nat) : n = n + 1 := by sorry", "", ["t"]) is None
    run = _elaborate(core_lean, tmp_path, "theorem t (n : N) : Eq n (N.s n) := Eq.refl")
    assert run.returncode == 1 and "error" in run.stdout
