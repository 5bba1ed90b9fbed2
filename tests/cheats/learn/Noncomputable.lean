/-! Fyan's honest control `Noncomputable`: classical analysis is `noncomputable` — a definition, an
instance and a section of them, a choice under `open Classical`, a `variable` section. -/
namespace FyanControl.Noncomputable

structure Reals where
  val : Nat → Int

noncomputable def pick (p : Reals → Prop) (h : ∃ r, p r) : Reals := Classical.choose h

noncomputable instance : Inhabited Reals := ⟨Classical.choice ⟨⟨fun _ => 0⟩⟩⟩

noncomputable section

variable (p : Reals → Prop)

def pickTwice (h : ∃ r, p r) : Reals × Reals := (pick p h, pick p h)

open Classical in
def decideAll (q : Prop) : Bool := if q then true else false

end

theorem pick_spec (p : Reals → Prop) (h : ∃ r, p r) : p (pick p h) := Classical.choose_spec h

end FyanControl.Noncomputable
