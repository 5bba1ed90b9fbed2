-- Trick: an own constant an instance's type mentions only in the codomain of a function type.
-- Lean 4.35.0 keys an arrow by its domain alone (`.forallE _ d _ _ => (.arrow, todo.push d)`,
-- src/Lean/Meta/DiscrTree/Main.lean), and `Ignore Int Tag` reduces to `Int` anyway: the instance
-- is one on `Int → Int`, about foreign constants only, although its type mentions `Tag`.
inductive Tag where
  | mk

abbrev Ignore (α : Type) (_ : Type) : Type := α

instance fnLE : LE (Int → Ignore Int Tag) := ⟨fun _ _ => True⟩

theorem double_even (n : Int) : ∃ k, double n = 2 * k := ⟨n, rfl⟩
