-- Trick (the alias family): an instance on `Int` behind a chain of own reducible
-- aliases deeper than the policy followed (it stopped after 8 and took the ninth alias for an own
-- type); instance search unfolds the whole chain, so this is an instance on `Int`.
abbrev MyInt0 := Int
abbrev MyInt1 := MyInt0
abbrev MyInt2 := MyInt1
abbrev MyInt3 := MyInt2
abbrev MyInt4 := MyInt3
abbrev MyInt5 := MyInt4
abbrev MyInt6 := MyInt5
abbrev MyInt7 := MyInt6
abbrev MyInt8 := MyInt7
abbrev MyInt9 := MyInt8

instance myInt9Add : Add MyInt9 := ⟨fun a b => a - b⟩

theorem double_even (n : Int) : ∃ k, double n = 2 * k := ⟨n, rfl⟩
