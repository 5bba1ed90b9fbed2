import Mathlib
import Aesop

set_option maxHeartbeats 0

open BigOperators Real Nat Topology Rat

-- the same statement with the variables and hypotheses in another order
theorem mathd_algebra_44 (t s : ℝ) (h₁ : t = 3 * s + 1) (h₀ : s = 9 - 2 * t) : s = 1 ∧ t = 4 := by
  constructor <;> linarith
