/-! Fyan's honest control `Structures`: a structure, an instance of a library class on it, a class
of its own with an instance, an `abbrev`, a `@[simp]` lemma and a proof by `simp`. -/
namespace FyanControl.Structures

structure Pt where
  x : Int
  y : Int

instance : Inhabited Pt := ⟨⟨0, 0⟩⟩

class HasSize (α : Type) where
  size : α → Nat

instance : HasSize Pt := ⟨fun _ => 2⟩

abbrev Coord := Int

def Pt.swap (p : Pt) : Pt := ⟨p.y, p.x⟩

@[simp] theorem Pt.swap_swap (p : Pt) : p.swap.swap = p := rfl

theorem Pt.swap_x (p : Pt) : p.swap.x = p.y := by simp [Pt.swap]

end FyanControl.Structures
