-- Trick: an own constant an instance's type mentions only inside a beta-redex. Lean keys the
-- instance after `reduceDT` (beta), so `LE ((fun (_ : Tag) => Int) Tag.mk)` is stored as `LE Int`:
-- an instance on Int although the type mentions `Tag`.
inductive Tag where
  | mk

instance lambdaLE : LE ((fun (_ : Tag) => Int) Tag.mk) := ⟨fun _ _ => True⟩

theorem double_even (n : Int) : ∃ k, double n = 2 * k := ⟨n, rfl⟩
