-- Trick: `Lean.reduceBool` behind an `abbrev`: the proof never names it, the alias
-- unfolds to it and the kernel (Lean ≤ 4.34) runs compiled code; no axiom shows.
abbrev evalBool := Lean.reduceBool

def doublesAgree : Bool := double 21 == 42

theorem double_twenty_one : evalBool doublesAgree = true := rfl

theorem double_even (n : Int) : ∃ k, double n = 2 * k := by
  have _h := double_twenty_one
  exact ⟨n, rfl⟩
