-- Trick: an own constant inside an `optParam` default: `optParam` is reducible (`optParam α d :=
-- α`), so `LE (optParam Int (Tag.zero Tag.mk))` is stored as `LE Int`.
inductive Tag where
  | mk

def Tag.zero (_ : Tag) : Int := 0

instance optLE : LE (optParam Int (Tag.zero Tag.mk)) := ⟨fun _ _ => True⟩

theorem double_even (n : Int) : ∃ k, double n = 2 * k := ⟨n, rfl⟩
