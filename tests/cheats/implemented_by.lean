-- Trick: compiled code that disagrees with the logical definition (`@[implemented_by]`),
-- exploited through `native_decide` to "prove" a false fact the root's proof uses.
def wrongDouble (n : Int) : Int := n + n + 1

@[implemented_by wrongDouble]
def fastDouble (n : Int) : Int := 2 * n

theorem fast_double_three : fastDouble 3 = 7 := by native_decide

theorem double_even (n : Int) : ∃ k, double n = 2 * k := by
  have _h := fast_double_three
  exact ⟨n, rfl⟩
