-- Trick: an own type named in an instance's type that reduction erases: `Ignore Int
-- Tag` unfolds to `Int` (the instance key is taken after unfolding, `reduceDT`), so this is an
-- instance on Int although an own constant (`Tag`) appears among what it is about.
structure Tag where
abbrev Ignore (α : Type) (_ : Type) : Type := α

instance ignoreAdd : Add (Ignore Int Tag) := ⟨fun a b => a - b⟩

theorem double_even (n : Int) : ∃ k, double n = 2 * k := ⟨n, rfl⟩
