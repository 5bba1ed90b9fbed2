-- Control (bridge setup): the root and its bridge obligation, both honestly proved.
theorem double_even (n : Int) : ∃ k, double n = 2 * k := ⟨n, rfl⟩

theorem double_even_faithful : (∀ n : Int, ∃ k, double n = 2 * k) → ∀ n : Int, ∃ k, 2 * n = 2 * k :=
  fun h n => h n
