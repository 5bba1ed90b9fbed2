-- Trick: an own `@[reducible] def` that drops its argument: `LE (Drop Tag.mk)` unfolds to `LE Int`.
inductive Tag where
  | mk

@[reducible] def Drop (_ : Tag) : Type := Int

instance dropLE : LE (Drop Tag.mk) := ⟨fun _ _ => True⟩

theorem double_even (n : Int) : ∃ k, double n = 2 * k := ⟨n, rfl⟩
