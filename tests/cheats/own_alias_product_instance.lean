-- Control: an instance on an own alias of a product with an own component (`abbrev Pair := S ×
-- Int`) is stored under `Prod S Int`: the own `S` survives in the keys, so it is the unit's.
structure S where
  x : Int

abbrev Pair := S × Int

instance pairLE : LE Pair := ⟨fun a b => a.2 ≤ b.2⟩

theorem double_even (n : Int) : ∃ k, double n = 2 * k := ⟨n, rfl⟩
