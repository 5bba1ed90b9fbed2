-- Control (meta setup: the unit imports `Lean`): an honest proof; importing Lean changes nothing.
theorem double_even (n : Int) : ∃ k, double n = 2 * k := ⟨n, rfl⟩
