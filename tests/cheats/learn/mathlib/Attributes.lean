import Mathlib

/-! Fyan's honest Mathlib control `Attributes`: what a formalization against Mathlib writes every
day — an own structure with `@[ext]` and an instance, `@[simp]`, `@[simps]`, `@[to_additive]`,
`@[fun_prop]` and `@[gcongr]` lemmas, a `noncomputable def` on `ℝ` and a `Finset` sum. Compiled by
`fyan selftest` in the project's own Lake package when it requires Mathlib; each must pass the
gate's policy by effect. -/

namespace FyanControl.MathlibAttributes

/-- A point of the plane, as an own structure. -/
@[ext] structure Point where
  x : ℝ
  y : ℝ

/-- Pointwise addition: an instance of a library class on the own structure. -/
noncomputable instance : Add Point := ⟨fun p q => ⟨p.x + q.x, p.y + q.y⟩⟩

@[simp] theorem add_x (p q : Point) : (p + q).x = p.x + q.x := rfl

/-- The mirror image; `@[simps]` generates `swap_x` and `swap_y`. -/
@[simps] def swap (p : Point) : Point := ⟨p.y, p.x⟩

/-- A `noncomputable def` on `ℝ`. -/
noncomputable def double (t : ℝ) : ℝ := t + t

@[fun_prop] theorem continuous_double : Continuous double := continuous_id.add continuous_id

@[gcongr] theorem double_le_double {a b : ℝ} (h : a ≤ b) : double a ≤ double b := by
  unfold double
  linarith

@[to_additive] theorem mul_one_mul {M : Type*} [Monoid M] (a b : M) : a * 1 * b = a * b := by
  rw [mul_one]

theorem sum_ones (n : ℕ) : Finset.sum (Finset.range n) (fun _ => (1 : ℕ)) = n := by
  simp

end FyanControl.MathlibAttributes
