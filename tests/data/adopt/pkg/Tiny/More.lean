import Tiny.Basic

/-! Left half done: statements with `sorry` proofs, and one axiom. -/

theorem Tiny.double_even (n : Nat) : ∃ k, Tiny.double n = 2 * k := by
  sorry

theorem Tiny.double_self (n : Nat) : Tiny.double n = n + n := by
  sorry

axiom Tiny.magic : ∀ n : Nat, n * 0 = 0

theorem Tiny.mul_zero' (n : Nat) : n * 0 = 0 := Tiny.magic n
