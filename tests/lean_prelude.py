"""Prelude-only Lean sources for the real core tier's language-server tests and
``scripts/bench_iterations.py`` (no ``Init`` there: ``tests/lean_core.py``).

``SORRY_SUPPORT`` declares, as axioms, the constants Lean 4.35's elaborator needs to elaborate
``sorry`` (``sorryAx`` with its ``optParam``, and what ``mkLabeledSorry`` builds the label from:
``Unit``, ``Function.const``, ``Lean.Name`` with ``OfNat`` numerals of ``Nat`` and ``String``;
``src/Lean/Meta/Sorry.lean`` in leanprover/lean4). With it a ``prelude`` file's ``sorry`` gives the
real ``declaration uses `sorry``` warning (kind ``hasSorry``). Checked on the real core 4.35.0:
``tests/test_lean_server.py``. Written for Fyan's tests; no Lean source copied.
"""

from __future__ import annotations

#: the library honest-feature modules of the core tier import (module ``Base``): what the
#: elaborator needs for structures, pattern matching, structural recursion (``PProd``, ``HEq``,
#: ``Eq.ndrec``), classes with an ``outParam``, ``optParam``, and a stand-in for the reals. Library
#: facts Init proves are axioms here (this module is never judged; the feature modules are).
HONEST_BASE = """prelude
universe u v w u1 u2
unsafe axiom lcAny : Type
unsafe axiom lcErased : Type
unsafe axiom lcVoid : Type
axiom lcProof {α : Prop} : α
unsafe axiom lcUnreachable {α : Sort u} : α
set_option bootstrap.inductiveCheckResultingUniverse false in
inductive PUnit : Sort u where
  | unit : PUnit
inductive Eq {α : Sort u} (a : α) : α → Prop where
  | refl : Eq a a
def Eq.ndrec {α : Sort u2} {a : α} {motive : α → Sort u1} (m : motive a) {b : α} (h : Eq a b) : motive b :=
  @Eq.rec α a (fun x _ => motive x) m b h
axiom Eq.symm {α : Sort u} {a b : α} (h : Eq a b) : Eq b a
def id {α : Sort u} (a : α) : α := a
axiom Eq.mpr {α β : Sort u} (h : Eq α β) (b : β) : α
inductive HEq {α : Sort u} (a : α) : {β : Sort u} → β → Prop where
  | refl : HEq a a
axiom eq_of_heq {α : Sort u} {a a' : α} (h : HEq a a') : Eq a a'
axiom heq_of_eq {α : Sort u} {a a' : α} (h : Eq a a') : HEq a a'
structure PProd (α : Sort u) (β : Sort v) where
  fst : α
  snd : β
@[reducible] def outParam (α : Sort u) : Sort u := α
@[reducible] def optParam (α : Sort u) (_default : α) : Sort u := α
class HAdd (α : Type u) (β : Type v) (γ : outParam (Type w)) where
  hAdd : α → β → γ
class Inhabited (α : Sort u) where
  default : α
class Add (α : Type u) where
  add : α → α → α
class LE (α : Type u) where
  le : α → α → Prop
structure Prod (α : Type u) (β : Type v) where
  fst : α
  snd : β
inductive N where
  | zero : N
  | succ (n : N) : N
abbrev Unit : Type := PUnit
@[match_pattern] abbrev Unit.unit : Unit := PUnit.unit
axiom Real : Type
axiom Real.zero : Real
namespace Classical
axiom choice {α : Sort u} : Inhabited α → α
end Classical
"""

SORRY_SUPPORT = """prelude
universe u v
inductive Bool : Type where | false | true
@[reducible] def optParam (α : Sort u) (_default : α) : Sort u := α
axiom sorryAx (α : Sort u) (synthetic : Bool := Bool.false) : α
axiom Nat : Type
axiom OfNat : Type u → Nat → Type u
set_option checkBinderAnnotations false in
axiom OfNat.ofNat {α : Type u} (n : Nat) [self : OfNat α n] : α
axiom instOfNatNat (n : Nat) : OfNat Nat n
axiom String : Type
axiom Unit : Type
axiom Unit.unit : Unit
axiom Function.const {α : Sort u} (β : Sort v) (a : α) : β → α
axiom Lean.Name : Type
axiom Lean.Name.anonymous : Lean.Name
axiom Lean.Name.str (pre : Lean.Name) (s : String) : Lean.Name
axiom Lean.Name.num (pre : Lean.Name) (i : Nat) : Lean.Name
"""


def generated_module(n: int, imports: str = "Core.Sorry") -> str:
    """A prelude module of ``n`` declarations (an axiom type and ``n - 1`` theorems and
    definitions; no ``inductive``: with ``SORRY_SUPPORT``'s axiomatic ``Nat`` Lean cannot build its
    ``ctorIdx``) importing ``imports``: what a unit's import costs, at core level."""
    lines = ["prelude", f"import {imports}", "axiom Gen.T : Type", "axiom Gen.a : Gen.T",
             "theorem Gen.refl0 (p : Prop) (h : p) : p := h"]
    for i in range(1, n - 1):
        if i % 2:
            lines.append(f"noncomputable def Gen.d{i} (x : Gen.T) : Gen.T := x")
        else:
            lines.append(f"theorem Gen.t{i} (p q : Prop) (hp : p) (_hq : q) : p := hp")
    return "\n".join(lines) + "\n"


def unit_text(k: int, *, imports: str = "Gen", sorry: bool = True, error: bool = True) -> str:
    """Iteration ``k`` of a unit importing ``imports``: some proofs, a ``sorry`` and an error
    when asked (an unsolved tactic goal and a type mismatch), so diagnostics and goals differ
    per iteration."""
    out = ["prelude", f"import {imports}", "", "namespace U",
           f"theorem ok{k} (p : Prop) (h : p) : p := h"]
    if sorry:
        out.append(f"theorem open{k} (p q : Prop) (h : p) : q := sorry")
    if error:
        out.append(f"theorem bad{k} (p q : Prop) (h : p) : q := h")
        out.append(f"theorem tac{k} (p : Prop) (h : p) : p := by skip")
    out.append("end U")
    return "\n".join(out) + "\n"


#: the constants a ``decide`` check elaborates with at core level (no ``Init``): ``Bool`` (its
#: constructors exported as ``true``/``false``, as Init does), ``Eq`` with ``Eq.refl (a : α)``
#: (Init/Prelude.lean's shape), ``Not``, ``Decidable`` with ``decide`` and ``of_decide_eq_true``
#: proved from the recursors (no axiom: a refutation must rest on none), ``Decidable`` instances
#: for ``Not``, ``Eq`` on ``Bool`` and ``∀`` over ``Bool``, ``Bool.and`` and ``Bool.or``, and unary numbers ``N`` with ``add``, ``mul`` and ``beq``
#: (not ``Nat``: the elaborator gives the name ``Nat`` special treatment that needs Init), and
#: ``Sneaky``, decided through an axiom (a check resting on it must not count). Used as
#: the ``lean_header`` of refutation checks on the real core 4.35.0 (tests/test_refute_runner.py).
#: Written for Fyan's tests; no Lean source copied.
DECIDE_SUPPORT = """prelude
universe u v
unsafe axiom lcAny : Type
unsafe axiom lcErased : Type
unsafe axiom lcVoid : Type
axiom lcProof {α : Prop} : α
unsafe axiom lcUnreachable {α : Sort u} : α
set_option bootstrap.inductiveCheckResultingUniverse false in
inductive PUnit : Sort u where
  | unit : PUnit
inductive Bool : Type where
  | false : Bool
  | true : Bool
export Bool (false true)
inductive Eq {α : Sort u} : α → α → Prop where
  | refl (a : α) : Eq a a
inductive True : Prop where
  | intro : True
inductive False : Prop
def Not (a : Prop) : Prop := a → False
def False.elim {C : Sort u} (h : False) : C := False.rec (motive := fun _ => C) h
theorem Bool.false_ne_true (h : Eq false true) : False :=
  @Eq.rec Bool false (fun b _ => Bool.rec (motive := fun _ => Prop) True False b) True.intro true h
class inductive Decidable (p : Prop) where
  | isFalse (h : Not p) : Decidable p
  | isTrue (h : p) : Decidable p
@[reducible] noncomputable def Decidable.decide (p : Prop) [h : Decidable p] : Bool :=
  Decidable.rec (motive := fun _ => Bool) (fun _ => false) (fun _ => true) h
export Decidable (decide)
theorem of_decide_eq_true {p : Prop} [inst : Decidable p] : Eq (decide p) true → p :=
  Decidable.rec (motive := fun i => Eq (@decide p i) true → p)
    (fun _ h => False.elim (Bool.false_ne_true h)) (fun hp _ => hp) inst
@[reducible, instance] noncomputable def instDecidableNot {p : Prop} [dp : Decidable p] : Decidable (Not p) :=
  Decidable.rec (motive := fun _ => Decidable (Not p)) (fun hn => Decidable.isTrue hn)
    (fun hp => Decidable.isFalse (fun hn => hn hp)) dp
@[reducible, instance] noncomputable def instDecidableEqBool (a b : Bool) : Decidable (Eq a b) :=
  Bool.rec (motive := fun a => Decidable (Eq a b))
    (Bool.rec (motive := fun b => Decidable (Eq false b)) (Decidable.isTrue (Eq.refl _))
      (Decidable.isFalse (fun h => Bool.false_ne_true h)) b)
    (Bool.rec (motive := fun b => Decidable (Eq true b))
      (Decidable.isFalse (fun h => Bool.false_ne_true (@Eq.rec Bool true (fun x _ => Eq x true) (Eq.refl _) false h)))
      (Decidable.isTrue (Eq.refl _)) b) a
@[reducible, instance] noncomputable def Bool.decForall (P : Bool → Prop) [df : Decidable (P false)]
    [dt : Decidable (P true)] : Decidable (∀ b, P b) :=
  Decidable.rec (motive := fun _ => Decidable (∀ b, P b))
    (fun hf => Decidable.isFalse (fun h => hf (h false)))
    (fun hf => Decidable.rec (motive := fun _ => Decidable (∀ b, P b))
      (fun ht => Decidable.isFalse (fun h => ht (h true)))
      (fun ht => Decidable.isTrue (fun b => Bool.rec (motive := fun b => P b) hf ht b)) dt) df
@[reducible] noncomputable def Bool.and (a b : Bool) : Bool := Bool.rec (motive := fun _ => Bool) false b a
@[reducible] noncomputable def Bool.or (a b : Bool) : Bool := Bool.rec (motive := fun _ => Bool) b true a
inductive N where
  | zero : N
  | succ (n : N) : N
@[reducible] noncomputable def N.add (a b : N) : N := N.rec (motive := fun _ => N) a (fun _ ih => N.succ ih) b
@[reducible] noncomputable def N.mul (a b : N) : N := N.rec (motive := fun _ => N) N.zero (fun _ ih => N.add ih a) b
@[reducible] noncomputable def N.beq (a : N) : N → Bool :=
  N.rec (motive := fun _ => N → Bool)
    (fun b => N.rec (motive := fun _ => Bool) true (fun _ _ => false) b)
    (fun _ ih b => N.rec (motive := fun _ => Bool) false (fun b' _ => ih b') b) a
axiom Sneaky : Prop
axiom Sneaky.false : Not Sneaky
@[reducible, instance] noncomputable def Sneaky.decidable : Decidable Sneaky := Decidable.isFalse Sneaky.false
"""
