import Architect

@[blueprint "def:one" (statement := /-- The number one. -/) (title := "One")]
def one : Nat := 1

@[blueprint "lem:one-pos" (statement := /-- One is positive. -/) (latexEnv := "lemma")]
theorem one_pos : 0 < one := by
  decide
