-- Trick (the alias family): an instance of an own reducible alias of a foreign class
-- (`abbrev MyLE := LE`) is an instance of `LE` (src/Lean/Meta/Basic.lean `isClassApp?` unfolds
-- abbreviations to find the class; the instance key is taken after unfolding, `reduceDT`): an
-- instance about Int, although the class it names is the unit's own constant.
abbrev MyLE := LE

instance allLE : MyLE Int := ⟨fun _ _ => True⟩

theorem double_even (n : Int) : ∃ k, double n = 2 * k := ⟨n, rfl⟩
