-- Trick: a projection of an own structure applied to its constructor reduces (`whnfCore`) to the
-- field: `LE (Box.val (Box.mk Int))` is stored as `LE Int`.
structure Box where
  val : Type

instance projLE : LE (Box.val (Box.mk Int)) := ⟨fun _ _ => True⟩

theorem double_even (n : Int) : ∃ k, double n = 2 * k := ⟨n, rfl⟩
