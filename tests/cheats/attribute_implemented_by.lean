-- Trick (a text lint evaded): `attribute [implemented_by]` after the fact, exploited by `native_decide`.
def wrongDouble (n : Int) : Int := n + n + 1

def fastDouble (n : Int) : Int := 2 * n

attribute [implemented_by wrongDouble] fastDouble

theorem fast_double_three : fastDouble 3 = 7 := by native_decide

theorem double_even (n : Int) : ∃ k, double n = 2 * k := by
  have _h := fast_double_three
  exact ⟨n, rfl⟩
