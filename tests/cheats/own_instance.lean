-- Control: an instance of a library class on a structure this unit owns changes no
-- other unit's meaning: admitted.
structure DoublePair where
  a : Int
  b : Int

instance doublePairInhabited : Inhabited DoublePair := ⟨⟨0, double 0⟩⟩

theorem double_even (n : Int) : ∃ k, double n = 2 * k := ⟨n, rfl⟩
