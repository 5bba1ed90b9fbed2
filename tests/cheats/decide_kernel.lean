-- Control: `decide +kernel` is honest. It leaves `of_decide_eq_true _ _ (Eq.refl true)` for the
-- kernel to check by its own reduction (src/Lean/Elab/Tactic/ElabTerm.lean `doKernel`): no axiom, no
-- compiled code, no `Lean.reduceBool`. The gate must pass it.
theorem double_twenty_one : double 21 = 42 := by decide +kernel

theorem double_even (n : Int) : ∃ k, double n = 2 * k := by
  have _h := double_twenty_one
  exact ⟨n, rfl⟩
