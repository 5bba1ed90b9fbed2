-- Trick: a coercion between two library types (`Bool` to `Int`): downstream
-- statements that mix them elaborate with Fyan-unaudited meaning.
instance boolToInt : Coe Bool Int := ⟨fun b => if b then 1 else 0⟩

theorem double_even (n : Int) : ∃ k, double n = 2 * k := ⟨n, rfl⟩
