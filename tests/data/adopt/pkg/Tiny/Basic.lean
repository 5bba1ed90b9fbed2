/-! Proved by the humans who started the project. -/

def Tiny.double (n : Nat) : Nat := n + n

theorem Tiny.double_eq (n : Nat) : Tiny.double n = 2 * n := by
  unfold Tiny.double
  omega

theorem Tiny.add_zero' (n : Nat) : n + 0 = n := rfl
