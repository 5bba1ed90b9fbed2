-- Trick (a text lint evaded): `«autoImplicit»` escapes a lint matching the plain option name; the
-- binder is dropped and `n` auto-bound, so the statement is a different one.
set_option «autoImplicit» true in
theorem double_even : ∃ k, double n = 2 * k := ⟨n, rfl⟩
