import Mathlib
import Aesop

set_option maxHeartbeats 0

open BigOperators Real Nat Topology Rat

-- strengthened: stated for every commutative ring instead of ℂ
theorem mathd_algebra_182 {R : Type*} [CommRing R] (y : R) : 7 * (3 * y + 2) = 21 * y + 14 := by
  ring
