/-! Fyan's honest control `Inductives`: an enumeration and a tree with `deriving`, mutual inductive
predicates, a structure that `extends` another, `@[match_pattern]` and `@[elab_as_elim]` on its own
declarations, definitions by pattern matching on them. -/
namespace FyanControl.Inductives

inductive Color where
  | red | green | blue
  deriving Inhabited, DecidableEq, Repr

inductive Tree (α : Type) where
  | leaf : Tree α
  | node : Tree α → α → Tree α → Tree α
  deriving Inhabited

def Tree.size {α : Type} : Tree α → Nat
  | .leaf => 0
  | .node l _ r => l.size + 1 + r.size

mutual
inductive Even : Nat → Prop where
  | zero : Even 0
  | succ : Odd n → Even (n + 1)
inductive Odd : Nat → Prop where
  | succ : Even n → Odd (n + 1)
end

structure Point where
  x : Int
  y : Int

structure Point3 extends Point where
  z : Int

@[match_pattern] def two : Nat := 2

def isTwo : Nat → Bool
  | two => true
  | _ => false

@[elab_as_elim] theorem Color.induct {motive : Color → Prop} (r : motive .red) (g : motive .green)
    (b : motive .blue) (c : Color) : motive c := by
  cases c <;> assumption

theorem Color.red_ne_green : Color.red ≠ Color.green := by decide

theorem even_two : Even 2 := .succ (.succ .zero)

end FyanControl.Inductives
