import Mathlib

-- Trick: an instance inside a `section` the submission leaves open. SA-Pass
-- closed the open scopes with `end` before the checkers, but the `local instance` below lives
-- in the file's base scope (declared before the section), and `set_option` with it: both reached
-- every checker appended to the file. A checker module of its own starts from a fresh scope.
local instance (priority := high) zeroMul : Mul ℂ := ⟨fun _ _ => 0⟩
local instance (priority := high) zeroAdd : Add ℂ := ⟨fun _ _ => 0⟩
set_option maxHeartbeats 400000

section Cheat

theorem mathd_algebra_182 (y : ℂ) : 7 * (3 * y + 2) = 21 * y + 14 := by
  rfl
