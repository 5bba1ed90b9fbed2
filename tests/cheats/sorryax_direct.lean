-- Trick: the axiom behind `sorry`, written directly (no `sorry` token in the source).
theorem double_even (n : Int) : ∃ k, double n = 2 * k :=
  sorryAx _ false
