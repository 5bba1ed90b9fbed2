import Mathlib
import Aesop

set_option maxHeartbeats 0

open BigOperators Real Nat Topology Rat

-- renamed declaration and bound variable
theorem MathdAlgebra182 (z : ℂ) : 7 * (3 * z + 2) = 21 * z + 14 := by
  ring
