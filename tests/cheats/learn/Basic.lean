/-! Fyan's honest control `Basic` (`fyan selftest` learns the environment extensions it writes):
a namespace, a documented definition, theorems proved by a term, by `decide` and by `rfl`, and one
with a hypothesis it does not use (the unused-variables linter reports it). -/
namespace FyanControl.Basic

/-- The double of an integer. -/
def double (n : Int) : Int := 2 * n

theorem double_even (n : Int) : ∃ k, double n = 2 * k := ⟨n, rfl⟩

theorem double_zero : double 0 = 0 := by decide

theorem double_one (_h : True) (unused : Nat) : double 1 = 2 := rfl

end FyanControl.Basic
