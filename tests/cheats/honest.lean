-- Control: an honest proof of the frozen statement. The gate must pass it.
theorem double_even (n : Int) : ∃ k, double n = 2 * k := ⟨n, rfl⟩
