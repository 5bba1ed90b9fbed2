-- Trick: stop elaboration with `#exit` before the root; the file builds, the root is never
-- checked (and never exists in the compiled module).
theorem double_one : double 1 = 2 := rfl

#exit

theorem double_even (n : Int) : ∃ k, double n = 2 * k := by
  sorry
