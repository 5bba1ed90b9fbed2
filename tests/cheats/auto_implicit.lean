-- Trick: turn `autoImplicit` back on and drop the binder: `n` becomes an auto-bound implicit
-- and the statement is silently generalised into a different one.
set_option autoImplicit true in
theorem double_even : ∃ k, double n = 2 * k := ⟨n, rfl⟩
