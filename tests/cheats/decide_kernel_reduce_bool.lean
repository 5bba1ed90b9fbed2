-- Trick: `decide +kernel` on a statement about `Lean.reduceBool`: `decide +kernel` itself only asks
-- the kernel to reduce the `Decidable` instance (src/Lean/Elab/Tactic/ElabTerm.lean `doKernel`), but
-- reducing `Lean.reduceBool doublesAgree` makes the kernel run compiled code (Lean ≤ 4.34).
def doublesAgree : Bool := double 21 == 42

theorem double_twenty_one : Lean.reduceBool doublesAgree = true := by decide +kernel

theorem double_even (n : Int) : ∃ k, double n = 2 * k := by
  have _h := double_twenty_one
  exact ⟨n, rfl⟩
