/-! Fyan's honest control `Polymorphic`: definitions with instance arguments, `export`, `where`,
`@[ext]` on its own structure, well-founded recursion with `termination_by`/`decreasing_by`. -/
namespace FyanControl.Polymorphic

def twice {α : Type} [Add α] (x : α) : α := x + x

def sumList {α : Type} [Add α] [OfNat α 0] : List α → α
  | [] => 0
  | x :: xs => x + sumList xs

theorem twice_nat (n : Nat) : twice n = 2 * n := by unfold twice; omega

def double (n : Nat) : Nat := go n 0
where
  go : Nat → Nat → Nat
    | 0, acc => acc
    | k + 1, acc => go k (acc + 2)

@[ext] structure Pair where
  a : Nat
  b : Nat

theorem Pair.eq_of (p q : Pair) (h1 : p.a = q.a) (h2 : p.b = q.b) : p = q := Pair.ext h1 h2

def halve (n : Nat) : Nat :=
  if h : n < 2 then 0 else 1 + halve (n - 2)
termination_by n
decreasing_by omega

namespace Api
export FyanControl.Polymorphic (twice double)
end Api

end FyanControl.Polymorphic
