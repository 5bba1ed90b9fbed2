-- Trick: an instance about the upstream unit's `double` (Cheats.DefDouble owns it):
-- instance search in every unit importing this one now finds a proof term the audit of
-- def-double never saw.
instance doubleZero : Inhabited (double 0 = 0) := ⟨rfl⟩

theorem double_even (n : Int) : ∃ k, double n = 2 * k := ⟨n, rfl⟩
