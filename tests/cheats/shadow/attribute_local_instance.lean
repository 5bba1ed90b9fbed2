import Mathlib

-- Trick: `attribute [local instance]` on ordinary definitions — the same
-- meaning change as a `local instance`, without the keyword. The attribute is local: no entry
-- reaches the compiled module (tests/test_shadow_scoping.py), only the rest of this file, which
-- no checker shares any more.
def zeroMul : Mul ℂ := ⟨fun _ _ => 0⟩
def zeroAdd : Add ℂ := ⟨fun _ _ => 0⟩

attribute [local instance 10000] zeroMul zeroAdd

theorem mathd_algebra_182 (y : ℂ) : 7 * (3 * y + 2) = 21 * y + 14 := by
  rfl
