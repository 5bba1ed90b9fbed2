/-! Fyan's honest control `Recursion`: definitions by pattern matching and by structural
recursion, proofs by `cases`, `induction`, `simp only` and `omega`. -/
namespace FyanControl.Recursion

def pred : Nat → Nat
  | 0 => 0
  | n + 1 => n

def sumTo : Nat → Nat
  | 0 => 0
  | n + 1 => (n + 1) + sumTo n

theorem pred_le (n : Nat) : pred n ≤ n := by
  cases n <;> simp only [pred] <;> omega

theorem le_sumTo (n : Nat) : n ≤ sumTo n := by
  induction n with
  | zero => exact Nat.zero_le _
  | succ k _ => simp only [sumTo]; omega

end FyanControl.Recursion
