-- Trick: an instance on a reducible alias of `Int` is an instance on `Int` (the alias
-- unfolds during instance search): `abbrev` hides the foreign type behind an own name.
abbrev MyInt := Int

instance myIntAdd : Add MyInt := ⟨fun a b => a - b⟩

theorem double_even (n : Int) : ∃ k, double n = 2 * k := ⟨n, rfl⟩
