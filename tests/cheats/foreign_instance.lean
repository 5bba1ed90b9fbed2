-- Trick: an instance about `Int`, which this unit does not own: every unit that
-- imports it elaborates `a ≤ b` on `Int` to something else while its frozen text reads the same.
instance intLEAnything : LE Int := ⟨fun _ _ => True⟩

theorem double_even (n : Int) : ∃ k, double n = 2 * k := ⟨n, rfl⟩
