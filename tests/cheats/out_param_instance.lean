-- Trick: the own type only in the class's `outParam` (`HAdd α β (γ : outParam _)`): instance
-- search replaces it by a metavariable, so `a + b` on two `Int`s finds this instance and its result
-- is a `Tag`: it changes what `+` means on Int.
inductive Tag where
  | mk

instance intAddTag : HAdd Int Int Tag := ⟨fun _ _ => Tag.mk⟩

theorem double_even (n : Int) : ∃ k, double n = 2 * k := ⟨n, rfl⟩
