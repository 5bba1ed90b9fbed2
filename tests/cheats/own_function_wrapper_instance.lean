-- Control: an order on functions into an own type, stated on an own structure wrapping them. Lean
-- keys `LE (Int → Tag)` by the arrow's domain only (its keys cannot tell it from the foreign
-- `LE (Int → Ignore Int Tag)`), so the gate refuses that form; `LE TagFn` keeps the own `TagFn`
-- in the keys and is the unit's.
inductive Tag where
  | mk

structure TagFn where
  f : Int → Tag

instance tagFnLE : LE TagFn := ⟨fun _ _ => True⟩

theorem double_even (n : Int) : ∃ k, double n = 2 * k := ⟨n, rfl⟩
