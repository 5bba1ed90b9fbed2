-- Trick: an own constant bound by a `let` the type never uses: `reduceDT` substitutes it away, so
-- `LE (let _t := Tag.mk; Int)` is stored as `LE Int`.
inductive Tag where
  | mk

instance letLE : LE (let _t := Tag.mk; Int) := ⟨fun _ _ => True⟩

theorem double_even (n : Int) : ∃ k, double n = 2 * k := ⟨n, rfl⟩
