-- Trick: `_root_.Lean.reduceNat`, decided through `decide +kernel`: the kernel
-- evaluates `fortyTwo` with compiled code (Lean ≤ 4.34) instead of reducing it.
def fortyTwo : Nat := 42

theorem forty_two : _root_.Lean.reduceNat fortyTwo = 42 := by decide +kernel

theorem double_even (n : Int) : ∃ k, double n = 2 * k := by
  have _h := forty_two
  exact ⟨n, rfl⟩
