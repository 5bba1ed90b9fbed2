-- Trick: a `match` on an own constructor reduces to the branch (`whnfCore`: iota): `LE (match
-- Tag.mk with | Tag.mk => Int)` is stored as `LE Int`.
inductive Tag where
  | mk

instance matchLE : LE (match Tag.mk with | Tag.mk => Int) := ⟨fun _ _ => True⟩

theorem double_even (n : Int) : ∃ k, double n = 2 * k := ⟨n, rfl⟩
