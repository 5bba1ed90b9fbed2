-- Trick: `sorry` with the warning switched off, so no build diagnostic mentions it.
set_option warn.sorry false in
theorem double_even (n : Int) : ∃ k, double n = 2 * k := by
  sorry
