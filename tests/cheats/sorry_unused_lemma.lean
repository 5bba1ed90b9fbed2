-- Trick (a sorry no warning shows, opencompl/lean-mlir#1498 kind): `warn.sorry` off and a `sorry` in a lemma the
-- root does not use: no warning, the root's axioms are clean, "sorry count 0" for a gate that
-- looks only at the roots. The inspector reports every declaration of the module.
set_option warn.sorry false in
theorem unused_helper : (2 : Int) = 3 := by
  sorry

theorem double_even (n : Int) : ∃ k, double n = 2 * k := ⟨n, rfl⟩
