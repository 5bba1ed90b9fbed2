-- Trick (a text lint evaded): compiler trust spelled `decide (config := {native := true})`.
theorem double_twenty_one : double 21 = 42 := by decide (config := {native := true})

theorem double_even (n : Int) : ∃ k, double n = 2 * k := by
  have _h := double_twenty_one
  exact ⟨n, rfl⟩
