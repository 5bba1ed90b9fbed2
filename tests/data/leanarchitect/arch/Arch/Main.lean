import Arch.Basic
import Architect

namespace Arch

@[blueprint "thm:main"
  (statement := /-- Doubling is injective. -/)
  (uses := ["lem:informal"])]
theorem double_inj (a b : Nat) (h : double a = double b) : a = b := by
  have := double_even a
  unfold double at h
  omega

@[blueprint "thm:main" (statement := /-- Doubling is injective, as an equivalence. -/)]
theorem double_inj' (a b : Nat) : double a = double b ↔ a = b := by
  sorry

end Arch
