import Mathlib
import Aesop

set_option maxHeartbeats 0

open BigOperators Real Nat Topology Rat

theorem numbertheory_prmdvsneqnsqmodpeq0 (n : ℤ) (p : ℕ) (h₀ : Nat.Prime p) :
    ↑p ∣ n ↔ n ^ 2 % p = 0 := by
  constructor
  · intro h
    exact Int.emod_eq_zero_of_dvd (dvd_pow h two_ne_zero)
  · intro h
    exact (Nat.prime_iff_prime_int.mp h₀).dvd_of_dvd_pow (Int.dvd_of_emod_eq_zero h)
