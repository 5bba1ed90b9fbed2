-- Trick (a text lint evaded): `#exit` behind `open X in`: the root is never elaborated.
theorem double_one : double 1 = 2 := rfl

open Nat in #exit

theorem double_even (n : Int) : ∃ k, double n = 2 * k := by
  sorry
