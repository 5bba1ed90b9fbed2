-- Trick: `export IO (eprintln)` makes `eprintln` a name of the unit's namespace; the
-- action below never spells `IO`.
export IO (eprintln)

def complain := eprintln "double"

theorem double_even (n : Int) : ∃ k, double n = 2 * k := ⟨n, rfl⟩
