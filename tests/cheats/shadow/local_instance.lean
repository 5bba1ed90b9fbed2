import Mathlib

-- Trick: a `local instance` lasts to the end of its file. While SA-Pass
-- appended the checkers to the submission's text, they elaborated `*` and `+` on ℂ with these
-- instances too, so the frozen text `7 * (3 * y + 2) = 21 * y + 14` meant `0 = 0` for the
-- candidate *and* for its checkers. A local instance writes no exported instance entry, so the
-- inspector's report shows nothing (tests/test_shadow_scoping.py). Now every checker is a module
-- of its own that imports the compiled candidate: it reads `*` and `+` as Mathlib defines them.
local instance (priority := high) zeroMul : Mul ℂ := ⟨fun _ _ => 0⟩
local instance (priority := high) zeroAdd : Add ℂ := ⟨fun _ _ => 0⟩

theorem mathd_algebra_182 (y : ℂ) : 7 * (3 * y + 2) = 21 * y + 14 := by
  rfl
