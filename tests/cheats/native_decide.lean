-- Trick: a fact checked by compiled code (`native_decide`) that the root's proof depends on.
theorem double_twenty_one : double 21 = 42 := by native_decide

theorem double_even (n : Int) : ∃ k, double n = 2 * k := by
  have _h := double_twenty_one
  exact ⟨n, rfl⟩
