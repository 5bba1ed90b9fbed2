import Architect

namespace Arch

@[blueprint "def:double"
  (statement := /-- The double of $n$ is $n + n$. -/)]
def double (n : Nat) : Nat := n + n

blueprint_comment /-- Facts about doubling. -/

@[blueprint "lem:double-even"
  (statement := /-- For every $n$, $\mathrm{double}(n)$ is even. -/)]
theorem double_even (n : Nat) : double n % 2 = 0 := by
  unfold double
  omega

@[blueprint "lem:double-pos"
  (statement := /-- If $n > 0$ then $\mathrm{double}(n) > 0$. -/)]
theorem double_pos (n : Nat) (h : 0 < n) : 0 < double n := by
  sorry

end Arch
